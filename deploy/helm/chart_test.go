// Package helm_test checks the Helm chart in deploy/helm/redis-prober with
// no cluster, on Helm 3 and Helm 4 (v3.22.0 and v4.3.1, each built once
// from the Go module proxy into a cache outside the repository): helm lint
// --strict and helm template on every value set, then every rendered
// object decoded strictly into the Kubernetes and prometheus-operator API
// types, so a misspelt field fails here rather than in a cluster, and the
// two majors' objects compared. Its test-only dependencies stay out of the
// binary: nothing imports this package.
package helm_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

const chartDir = "redis-prober"

// helmRelease is one Helm the chart is checked with, built once.
type helmRelease struct {
	module, version string
	once            sync.Once
	path            string
	err             error
}

// helms are the Helm majors the chart supports: every lint, render and
// decoding check runs on each.
var helms = []*helmRelease{
	{module: "helm.sh/helm/v3/cmd/helm", version: "v3.22.0"},
	{module: "helm.sh/helm/v4/cmd/helm", version: "v4.3.1"},
}

// forEachHelm runs f once per Helm, as a subtest named after its version.
func forEachHelm(t *testing.T, f func(t *testing.T, h *helmRelease)) {
	t.Helper()
	for _, h := range helms {
		t.Run(h.version, func(t *testing.T) { f(t, h) })
	}
}

// bin builds helm once into ~/.cache/redis-prober/helm-VERSION (or under
// $REDIS_PROBER_CACHE), so later runs start at once; a cold build takes
// a minute or two. Without it the test skips, or fails under CI=true.
func (h *helmRelease) bin(t *testing.T) string {
	t.Helper()
	h.once.Do(func() {
		cache := os.Getenv("REDIS_PROBER_CACHE")
		if cache == "" {
			home, err := os.UserCacheDir()
			if err != nil {
				h.err = err
				return
			}
			cache = filepath.Join(home, "redis-prober")
		}
		dir := filepath.Join(cache, "helm-"+h.version)
		h.path = filepath.Join(dir, "helm")
		if _, err := os.Stat(h.path); err == nil {
			return
		}
		cmd := exec.Command("go", "install", h.module+"@"+h.version)
		cmd.Dir = os.TempDir() // outside this module: helm's own go.mod decides
		cmd.Env = append(os.Environ(), "GOBIN="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			h.err = fmt.Errorf("go install %s@%s: %v\n%s", h.module, h.version, err, out)
		}
	})
	if h.err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("cannot build helm %s: %v", h.version, h.err)
		}
		t.Skipf("SKIPPING: cannot build helm %s (%v); CI=true makes this a failure", h.version, h.err)
	}
	return h.path
}

func (h *helmRelease) run(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(h.bin(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %s %s: %v\n%s%s", h.version, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// The value sets the chart is checked with.
var cases = []struct {
	name   string
	values []string // -f files, relative to the chart
	set    []string
}{
	{name: "default"},
	{name: "all-on", set: []string{"serviceMonitor.enabled=true", "podMonitor.enabled=true", "prometheusRule.enabled=true", "dashboards.enabled=true",
		"redis.passwordSecret.name=redis", "hostMounts.sys=true", "hostMounts.proc=true"}},
	{name: "sidecar", values: []string{"examples/sidecar-values.yaml"}},
	{name: "shards", values: []string{"examples/shards-values.yaml"}},
	{name: "tls", values: []string{"examples/tls-values.yaml"}},
	{name: "basic-auth", values: []string{"examples/basic-auth-values.yaml"}},
	{name: "http-sd", values: []string{"examples/http-sd-values.yaml"}},
}

// docSeparator splits helm's output into YAML documents; the line break
// before a separator stays with the document (a block scalar's last line).
var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

func render(t *testing.T, h *helmRelease, values []string, set []string) []map[string]any {
	t.Helper()
	args := []string{"template", "rp", chartDir, "--namespace", "monitoring"}
	for _, v := range values {
		args = append(args, "-f", filepath.Join(chartDir, v))
	}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	out := h.run(t, args...)
	var objs []map[string]any
	for _, doc := range docSeparator.Split(out, -1) {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("rendered YAML does not parse: %v\n%s", err, doc)
		}
		if m != nil {
			objs = append(objs, m)
		}
	}
	return objs
}

// strict decodes an object (as JSON) into v, refusing unknown fields.
func strict(obj any, v any) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// typed decodes every rendered object into its API type.
func typed(t *testing.T, objs []map[string]any) map[string][]any {
	t.Helper()
	byKind := map[string][]any{}
	for _, o := range objs {
		kind, _ := o["kind"].(string)
		api, _ := o["apiVersion"].(string)
		var v any
		switch api + "/" + kind {
		case "v1/ConfigMap":
			v = &corev1.ConfigMap{}
		case "v1/Service":
			v = &corev1.Service{}
		case "v1/ServiceAccount":
			v = &corev1.ServiceAccount{}
		case "apps/v1/Deployment":
			v = &appsv1.Deployment{}
		case "apps/v1/StatefulSet":
			v = &appsv1.StatefulSet{}
		case "monitoring.coreos.com/v1/ServiceMonitor":
			v = &monitoringv1.ServiceMonitor{}
		case "monitoring.coreos.com/v1/PodMonitor":
			v = &monitoringv1.PodMonitor{}
		case "monitoring.coreos.com/v1/PrometheusRule":
			v = &monitoringv1.PrometheusRule{}
		default:
			t.Errorf("rendered an object the test does not know: %s %s", api, kind)
			continue
		}
		if err := strict(o, v); err != nil {
			t.Errorf("%s %v: %v", kind, o["metadata"], err)
			continue
		}
		byKind[kind] = append(byKind[kind], v)
	}
	return byKind
}

func TestHelmLint(t *testing.T) {
	forEachHelm(t, func(t *testing.T, h *helmRelease) {
		for _, c := range cases {
			args := []string{"lint", chartDir, "--strict"}
			for _, v := range c.values {
				args = append(args, "-f", filepath.Join(chartDir, v))
			}
			for _, s := range c.set {
				args = append(args, "--set", s)
			}
			h.run(t, args...)
		}
	})
}

func TestChartRendersStrictObjects(t *testing.T) {
	forEachHelm(t, func(t *testing.T, h *helmRelease) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) { checkRendered(t, h, c.values, c.set) })
		}
	})
}

// Helm 3 and Helm 4 render the same objects from every value set (Helm 4
// keeps some blank lines Helm 3 trims; the decoded objects are equal).
func TestHelm3And4RenderTheSameObjects(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, b := render(t, helms[0], c.values, c.set), render(t, helms[1], c.values, c.set)
			if len(a) != len(b) {
				t.Fatalf("helm %s renders %d objects, %s %d", helms[0].version, len(a), helms[1].version, len(b))
			}
			for i := range a {
				ja, _ := json.Marshal(a[i])
				jb, _ := json.Marshal(b[i])
				if !bytes.Equal(ja, jb) {
					t.Errorf("%s %v differs between helm %s and %s:\n%s\n%s", a[i]["kind"], a[i]["metadata"], helms[0].version, helms[1].version, ja, jb)
				}
			}
		})
	}
}

// checkRendered renders one value set, decodes every object strictly and
// holds the pods to the security settings.
func checkRendered(t *testing.T, h *helmRelease, values, set []string) {
	t.Helper()
	byKind := typed(t, render(t, h, values, set))
	if len(byKind["ConfigMap"]) == 0 {
		t.Errorf("no ConfigMap rendered")
	}
	for _, d := range byKind["Deployment"] {
		checkPod(t, &d.(*appsv1.Deployment).Spec.Template.Spec)
		checkConfigFiles(t, configOf(t, byKind), &d.(*appsv1.Deployment).Spec.Template.Spec)
	}
	for _, s := range byKind["StatefulSet"] {
		checkPod(t, &s.(*appsv1.StatefulSet).Spec.Template.Spec)
		checkConfigFiles(t, configOf(t, byKind), &s.(*appsv1.StatefulSet).Spec.Template.Spec)
	}
	for _, o := range byKind["ServiceMonitor"] {
		sm := o.(*monitoringv1.ServiceMonitor)
		if len(sm.Spec.ScrapeProtocols) == 0 || sm.Spec.ScrapeProtocols[0] != monitoringv1.PrometheusProto {
			t.Errorf("ServiceMonitor does not ask for protobuf first (native histograms): %v", sm.Spec.ScrapeProtocols)
		}
	}
}

// TestMonitorsAskForNativeHistograms: with nativeHistograms on (the
// default) both monitors ask for protobuf first and carry
// scrapeNativeHistograms: true, without which a Prometheus 3.8+ stores no
// native histogram (the field of prometheus-operator 0.88+; the objects are
// decoded strictly into the operator's current types, so a misspelt field
// fails). scrapeNativeHistograms=false leaves the field out, for an older
// operator; nativeHistograms=false asks for neither.
func TestMonitorsAskForNativeHistograms(t *testing.T) {
	monitors := []string{"serviceMonitor.enabled=true", "podMonitor.enabled=true"}
	both := func(key, value string) []string {
		return []string{"serviceMonitor." + key + "=" + value, "podMonitor." + key + "=" + value}
	}
	cases := []struct {
		name   string
		set    []string
		proto  bool // PrometheusProto first in scrapeProtocols
		native bool // scrapeNativeHistograms: true rendered
	}{
		{"default", nil, true, true},
		{"operator older than 0.88", both("scrapeNativeHistograms", "false"), true, false},
		{"classic only", both("nativeHistograms", "false"), false, false},
	}
	forEachHelm(t, func(t *testing.T, h *helmRelease) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				byKind := typed(t, render(t, h, nil, append(slices.Clone(monitors), c.set...)))
				type monitor struct {
					kind      string
					protocols []monitoringv1.ScrapeProtocol
					nh        monitoringv1.NativeHistogramConfig
				}
				var got []monitor
				for _, o := range byKind["ServiceMonitor"] {
					sm := o.(*monitoringv1.ServiceMonitor)
					got = append(got, monitor{"ServiceMonitor", sm.Spec.ScrapeProtocols, sm.Spec.NativeHistogramConfig})
				}
				for _, o := range byKind["PodMonitor"] {
					pm := o.(*monitoringv1.PodMonitor)
					got = append(got, monitor{"PodMonitor", pm.Spec.ScrapeProtocols, pm.Spec.NativeHistogramConfig})
				}
				if len(got) != 2 {
					t.Fatalf("%d monitors rendered, want a ServiceMonitor and a PodMonitor", len(got))
				}
				for _, m := range got {
					if proto := len(m.protocols) > 0 && m.protocols[0] == monitoringv1.PrometheusProto; proto != c.proto {
						t.Errorf("%s: scrapeProtocols %v, want PrometheusProto first: %v", m.kind, m.protocols, c.proto)
					}
					switch sn := m.nh.ScrapeNativeHistograms; {
					case c.native && (sn == nil || !*sn):
						t.Errorf("%s: scrapeNativeHistograms %v, want true", m.kind, ptrString(sn))
					case !c.native && sn != nil:
						t.Errorf("%s: scrapeNativeHistograms %v, want it left out", m.kind, ptrString(sn))
					}
					if sc := m.nh.ScrapeClassicHistograms; sc == nil || !*sc {
						t.Errorf("%s: scrapeClassicHistograms %v, want true (the default)", m.kind, ptrString(sc))
					}
				}
			})
		}
	})
}

func ptrString(b *bool) string {
	if b == nil {
		return "left out"
	}
	return fmt.Sprint(*b)
}

var configFile = regexp.MustCompile(`/etc/redis-prober/[^\s"',\]}]+`)

// checkConfigFiles: every file the prober's config names (password_file,
// credentials_file, ca_file, file_sd patterns) is under a mount of the
// prober container.
func checkConfigFiles(t *testing.T, cfg string, spec *corev1.PodSpec) {
	t.Helper()
	for _, path := range configFile.FindAllString(cfg, -1) {
		mounted := false
		for _, m := range spec.Containers[0].VolumeMounts {
			mounted = mounted || strings.HasPrefix(path, strings.TrimSuffix(m.MountPath, "/")+"/")
		}
		if !mounted {
			t.Errorf("the config names %s, which no volume of the pod holds", path)
		}
	}
}

// checkPod holds every prober container to the security settings.
func checkPod(t *testing.T, spec *corev1.PodSpec) {
	t.Helper()
	if spec.SecurityContext == nil || spec.SecurityContext.RunAsNonRoot == nil || !*spec.SecurityContext.RunAsNonRoot {
		t.Errorf("pod is not runAsNonRoot")
	}
	for _, c := range spec.Containers {
		checkContainer(t, c)
	}
	for _, v := range spec.Volumes {
		if v.Secret != nil && v.Secret.DefaultMode != nil && *v.Secret.DefaultMode&0o007 != 0 {
			t.Errorf("secret volume %s is readable by others: %o", v.Name, *v.Secret.DefaultMode)
		}
	}
}

func checkContainer(t *testing.T, c corev1.Container) {
	t.Helper()
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("container %s: securityContext %+v is not non-root, read-only, no escalation, caps dropped", c.Name, sc)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("container %s: no resource requests/limits", c.Name)
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			t.Errorf("container %s: env %s comes from a Secret; passwords are mounted files", c.Name, e.Name)
		}
	}
	for _, m := range c.VolumeMounts {
		if !m.ReadOnly {
			t.Errorf("container %s: mount %s is writable", c.Name, m.MountPath)
		}
	}
}

func TestShardsRenderAStatefulSetFedByThePodOrdinal(t *testing.T) {
	forEachHelm(t, func(t *testing.T, h *helmRelease) {
		byKind := typed(t, render(t, h, []string{"examples/shards-values.yaml"}, nil))
		if len(byKind["Deployment"]) != 0 || len(byKind["StatefulSet"]) != 1 {
			t.Fatalf("shards: 3 rendered %d Deployments and %d StatefulSets", len(byKind["Deployment"]), len(byKind["StatefulSet"]))
		}
		sts := byKind["StatefulSet"][0].(*appsv1.StatefulSet)
		if *sts.Spec.Replicas != 3 {
			t.Errorf("replicas %d, want 3", *sts.Spec.Replicas)
		}
		c := sts.Spec.Template.Spec.Containers[0]
		if !slices.Contains(c.Args, "--config.shard-index=$(SHARD_INDEX)") {
			t.Errorf("no shard index argument: %v", c.Args)
		}
		ok := false
		for _, e := range c.Env {
			ok = ok || (e.Name == "SHARD_INDEX" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil &&
				e.ValueFrom.FieldRef.FieldPath == "metadata.labels['apps.kubernetes.io/pod-index']")
		}
		if !ok {
			t.Errorf("SHARD_INDEX is not the pod ordinal: %+v", c.Env)
		}
		cfg := configOf(t, byKind)
		if !strings.Contains(cfg, "sharding:\n  shards: 3") {
			t.Errorf("the config has no sharding: shards: 3:\n%s", cfg)
		}
		for _, o := range byKind["Service"] {
			if o.(*corev1.Service).Spec.ClusterIP != "None" {
				t.Errorf("the StatefulSet's Service is not headless")
			}
		}
	})
}

// configOf is the prober config file the chart rendered.
func configOf(t *testing.T, byKind map[string][]any) string {
	t.Helper()
	for _, o := range byKind["ConfigMap"] {
		if c, ok := o.(*corev1.ConfigMap).Data["config.yml"]; ok {
			return c
		}
	}
	t.Fatal("no config.yml ConfigMap")
	return ""
}

// The sidecar example renders the patch for the Redis pods: a
// StatefulSet strategic-merge patch (strictly decoded) with the shared
// process namespace, the prober container and its volumes, and a
// PodMonitor for the Redis pods; no workload of its own.
func TestSidecarPatch(t *testing.T) {
	forEachHelm(t, func(t *testing.T, h *helmRelease) {
		byKind := typed(t, render(t, h, []string{"examples/sidecar-values.yaml"}, nil))
		if len(byKind["Deployment"])+len(byKind["StatefulSet"])+len(byKind["Service"]) != 0 {
			t.Errorf("sidecar mode rendered a workload or Service of its own")
		}
		var patch string
		for _, o := range byKind["ConfigMap"] {
			if p, ok := o.(*corev1.ConfigMap).Data["patch.yaml"]; ok {
				patch = p
			}
		}
		if patch == "" {
			t.Fatal("no sidecar patch rendered")
		}
		j, err := yaml.YAMLToJSON([]byte(patch))
		if err != nil {
			t.Fatal(err)
		}
		var sts appsv1.StatefulSet
		dec := json.NewDecoder(bytes.NewReader(j))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&sts); err != nil {
			t.Fatalf("the patch is not a StatefulSet: %v\n%s", err, patch)
		}
		spec := sts.Spec.Template.Spec
		if spec.ShareProcessNamespace == nil || !*spec.ShareProcessNamespace {
			t.Errorf("the patch does not share the process namespace")
		}
		if len(spec.Containers) != 1 || spec.Containers[0].Name != "redis-prober" {
			t.Fatalf("containers %v", spec.Containers)
		}
		checkContainer(t, spec.Containers[0])
		vols := map[string]bool{}
		for _, v := range spec.Volumes {
			vols[v.Name] = true
			if v.HostPath != nil && v.HostPath.Path == "/sys" {
				t.Logf("host /sys mounted read-only")
			}
		}
		for _, m := range spec.Containers[0].VolumeMounts {
			if !vols[m.Name] {
				t.Errorf("mount %s has no volume in the patch", m.Name)
			}
		}
		if len(byKind["PodMonitor"]) != 1 {
			t.Errorf("%d PodMonitors, want 1 for the Redis pods", len(byKind["PodMonitor"]))
		} else if pm := byKind["PodMonitor"][0].(*monitoringv1.PodMonitor); pm.Spec.Selector.MatchLabels["app.kubernetes.io/name"] != "redis" {
			t.Errorf("PodMonitor selects %v, not the Redis pods", pm.Spec.Selector.MatchLabels)
		}
	})
}

// alertNames lists the alert names of the rule files in dir (top level).
func alertNames(t *testing.T, files ...string) []string {
	t.Helper()
	var names []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var rf struct {
			Groups []struct {
				Rules []struct {
					Alert string `json:"alert"`
				} `json:"rules"`
			} `json:"groups"`
		}
		if err := yaml.Unmarshal(b, &rf); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, g := range rf.Groups {
			for _, r := range g.Rules {
				if r.Alert != "" {
					names = append(names, r.Alert)
				}
			}
		}
	}
	slices.Sort(names)
	return names
}

// The PrometheusRule is made from alerts/*.yml (through the chart's
// files/alerts link): the same alerts, and alerts.yml's among them.
func TestPrometheusRuleIsAlertsYml(t *testing.T) {
	forEachHelm(t, func(t *testing.T, h *helmRelease) {
		link, err := os.Readlink(filepath.Join(chartDir, "files", "alerts"))
		if err != nil || link != "../../../../alerts" {
			t.Errorf("files/alerts must link to the repository's alerts/ (one source of truth): %q %v", link, err)
		}
		byKind := typed(t, render(t, h, nil, []string{"prometheusRule.enabled=true"}))
		if len(byKind["PrometheusRule"]) != 1 {
			t.Fatalf("%d PrometheusRules", len(byKind["PrometheusRule"]))
		}
		var got []string
		records := 0
		for _, g := range byKind["PrometheusRule"][0].(*monitoringv1.PrometheusRule).Spec.Groups {
			for _, r := range g.Rules {
				if r.Alert != "" {
					got = append(got, r.Alert)
				}
				if r.Record != "" {
					records++
				}
			}
		}
		slices.Sort(got)
		all, err := filepath.Glob("../../alerts/*.yml")
		if err != nil {
			t.Fatal(err)
		}
		if want := alertNames(t, all...); !slices.Equal(got, want) {
			t.Errorf("PrometheusRule alerts\n got %v\nwant %v (alerts/*.yml)", got, want)
		}
		main := alertNames(t, "../../alerts/alerts.yml")
		for _, a := range main {
			if !slices.Contains(got, a) {
				t.Errorf("alert %s of alerts/alerts.yml is missing", a)
			}
		}
		if len(main) == 0 || records == 0 {
			t.Errorf("alerts.yml has %d alerts, the rule %d recording rules", len(main), records)
		}
	})
}

func TestDashboardsCarryTheSidecarLabel(t *testing.T) {
	forEachHelm(t, func(t *testing.T, h *helmRelease) {
		byKind := typed(t, render(t, h, nil, []string{"dashboards.enabled=true", "dashboards.folder=Redis"}))
		want, _ := filepath.Glob("../../dashboards/*.json")
		n := 0
		for _, o := range byKind["ConfigMap"] {
			cm := o.(*corev1.ConfigMap)
			if cm.Labels["grafana_dashboard"] != "1" {
				continue
			}
			n++
			for name, body := range cm.Data {
				orig, err := os.ReadFile(filepath.Join("../../dashboards", name))
				if err != nil || strings.TrimSpace(string(orig)) != strings.TrimSpace(body) {
					t.Errorf("dashboard %s differs from dashboards/%s (%v)", cm.Name, name, err)
				}
			}
			if cm.Annotations["grafana_folder"] != "Redis" {
				t.Errorf("%s: folder annotation %v", cm.Name, cm.Annotations)
			}
		}
		if n != len(want) || n == 0 {
			t.Errorf("%d dashboard ConfigMaps for %d dashboards", n, len(want))
		}
	})
}

// No rendered object holds a secret's value: passwords, the web config
// and the scrape credentials are referenced by Secret name, never inlined.
func TestNoSecretValueIsRendered(t *testing.T) {
	forEachHelm(t, func(t *testing.T, h *helmRelease) {
		const secret = "s3cr3t-value-that-must-not-render"
		for _, c := range cases {
			objs := render(t, h, c.values, c.set)
			for _, o := range objs {
				if o["kind"] == "Secret" {
					t.Errorf("%s: the chart renders a Secret; secrets are the user's, referenced by name", c.name)
				}
			}
			// Values that name secrets take names, not values: a secret
			// value given where a name goes must not be echoed as data.
			b, _ := json.Marshal(objs)
			if strings.Contains(string(b), secret) {
				t.Errorf("%s: a secret value is rendered", c.name)
			}
		}
		// The schema refuses a password given as a value.
		cmd := exec.Command(h.bin(t), "template", "rp", chartDir, "--set", "redis.password="+secret)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || !strings.Contains(string(out), "additional properties 'password' not allowed") {
			t.Errorf("redis.password accepted: %v\n%s", err, out)
		}
		if strings.Contains(string(out), secret) {
			t.Errorf("helm's error repeats the secret value")
		}
	})
}

// A wrong value fails with its field named (values.schema.json).
func TestSchemaNamesTheWrongField(t *testing.T) {
	forEachHelm(t, func(t *testing.T, h *helmRelease) {
		for _, tc := range []struct{ set, want string }{
			{"shards=0", "/shards"},
			{"shardz=3", "'shardz' not allowed"},
			{"mode=daemonset", "/mode"},
			{"config.targtes=x", "'targtes' not allowed"},
			{"web.tls.enabled=true", "/web/tls/secretName"},
			{"web.port=70000", "/web/port"},
			{"serviceMonitor.intervall=1m", "'intervall' not allowed"},
			{"replicas=two", "/replicas"},
			{"image.pullPolicy=Sometimes", "/image/pullPolicy"},
			{"dashboards.enabled=yes", "/dashboards/enabled"},
		} {
			out, err := exec.Command(h.bin(t), "template", "rp", chartDir, "--set", tc.set).CombinedOutput()
			if err == nil || !strings.Contains(string(out), tc.want) {
				t.Errorf("--set %s: %v, want an error naming %s:\n%s", tc.set, err, tc.want, out)
			}
		}
	})
}

// The strict decoding is what catches a field Kubernetes does not know
// (here one that the free-form podSecurityContext value lets through).
func TestStrictDecodingRefusesUnknownFields(t *testing.T) {
	forEachHelm(t, func(t *testing.T, h *helmRelease) {
		objs := render(t, h, nil, []string{"podSecurityContext.runAsNonRooot=true"})
		for _, o := range objs {
			if o["kind"] == "Deployment" {
				if err := strict(o, &appsv1.Deployment{}); err == nil || !strings.Contains(err.Error(), "runAsNonRooot") {
					t.Errorf("a misspelt field decoded: %v", err)
				}
				return
			}
		}
		t.Error("no Deployment rendered")
	})
}
