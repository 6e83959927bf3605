package helm_test

import (
	appsv1 "k8s.io/api/apps/v1"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// renderNotes renders templates/NOTES.txt, which helm template leaves out
// and helm install prints only against a cluster: in a copy of the chart
// the notes become a named template that a one-key YAML object prints.
func renderNotes(t *testing.T, h *helmRelease, values []string, set []string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), chartDir)
	if out, err := exec.Command("cp", "-RL", chartDir, dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	notes, err := os.ReadFile(filepath.Join(dir, "templates", "NOTES.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"NOTES.txt":     "",
		"_notes.tpl":    `{{- define "test.notes" -}}` + string(notes) + `{{- end -}}`,
		"zz-notes.yaml": `notes: {{ include "test.notes" . | toJson }}` + "\n",
	} {
		p := filepath.Join(dir, "templates", name)
		if text == "" {
			err = os.Remove(p)
		} else {
			err = os.WriteFile(p, []byte(text), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"template", "rp", dir, "--namespace", "monitoring", "--show-only", "templates/zz-notes.yaml"}
	for _, v := range values {
		args = append(args, "-f", filepath.Join(chartDir, v))
	}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	var doc struct{ Notes string }
	if err := yaml.Unmarshal([]byte(h.run(t, args...)), &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Notes
}

// NOTES.txt tells how to reach the status page in each mode and gives a
// first query.
func TestNotesSayHowToReachTheProber(t *testing.T) {
	query := `histogram_quantile(0.99, sum by (target, command) (rate(redis_prober_latency_seconds{phase="probe"}[5m])))`
	forEachHelm(t, func(t *testing.T, h *helmRelease) {
		for _, tc := range []struct {
			name         string
			values, set  []string
			want, unwant []string
		}{
			{name: "default", want: []string{"port-forward svc/rp-redis-prober 9379", "http://localhost:9379/", query, "Nothing scrapes the prober yet"}},
			{name: "monitored", set: []string{"serviceMonitor.enabled=true", "web.port=9400"},
				want: []string{"port-forward svc/rp-redis-prober 9400", "http://localhost:9400/"}, unwant: []string{"Nothing scrapes"}},
			{name: "shards", values: []string{"examples/shards-values.yaml"}, want: []string{"port-forward pod/rp-redis-prober-0 9379"}},
			{name: "sidecar", values: []string{"examples/sidecar-values.yaml"}, want: []string{"rp-redis-prober-sidecar-patch", "port-forward pod/<redis-pod> 9379"},
				unwant: []string{"Nothing scrapes"}},
			{name: "tls", values: []string{"examples/tls-values.yaml"}, want: []string{"https://localhost:9379/"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				notes := renderNotes(t, h, tc.values, tc.set)
				for _, w := range tc.want {
					if !strings.Contains(notes, w) {
						t.Errorf("NOTES lack %q:\n%s", w, notes)
					}
				}
				for _, w := range tc.unwant {
					if strings.Contains(notes, w) {
						t.Errorf("NOTES say %q:\n%s", w, notes)
					}
				}
			})
		}
	})
}

// The image's tag is the chart's appVersion unless set: a release's chart
// runs that release's image.
func TestImageTagIsTheAppVersion(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct{ Version, AppVersion string }
	if err := yaml.Unmarshal(b, &chart); err != nil {
		t.Fatal(err)
	}
	if chart.AppVersion == "" || chart.AppVersion != chart.Version {
		t.Errorf("Chart.yaml version %q, appVersion %q: a release sets both to its version", chart.Version, chart.AppVersion)
	}
	h := helms[0]
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{want: "ghcr.io/redis-prober/redis-prober:" + chart.AppVersion},
		{set: []string{"image.tag=main"}, want: "ghcr.io/redis-prober/redis-prober:main"},
	} {
		for _, o := range typed(t, render(t, h, nil, tc.set))["Deployment"] {
			if got := o.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Image; got != tc.want {
				t.Errorf("--set %v: image %s, want %s", tc.set, got, tc.want)
			}
		}
	}
}
