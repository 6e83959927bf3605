package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/redistest"
)

// demoRun is scripts/demo.sh running against a Redis of the test's, with
// this test's build of the prober.
type demoRun struct {
	stdout []string // up to the "Ctrl-C stops" line
	stderr *syncBuffer
	port   int
}

// runDemo starts the demo script with env added, reads what it prints and
// leaves it running until the test ends (or stop is called).
func runDemo(t *testing.T, env ...string) (*demoRun, func()) {
	t.Helper()
	port := redistest.FreePort(t)
	cmd := exec.Command("bash", "../../scripts/demo.sh")
	cmd.Env = append(os.Environ(), append(env, "PROBER_BIN="+proberBin, "WEB_PORT="+strconv.Itoa(port))...)
	ownProcessGroup(cmd)
	d := &demoRun{stderr: &syncBuffer{}, port: port}
	cmd.Stderr = d.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		// The script's trap stops the prober; then the group, in case.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			killProcessGroup(cmd)
			<-done
		}
	}
	t.Cleanup(stop)
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("demo.sh ended early:\n%s\nstderr:\n%s", strings.Join(d.stdout, "\n"), d.stderr.String())
			}
			d.stdout = append(d.stdout, l)
			if strings.Contains(l, "Ctrl-C stops") {
				go func() {
					for range lines {
					}
				}()
				return d, stop
			}
		case <-deadline:
			t.Fatalf("demo.sh printed no banner in 30s:\n%s\nstderr:\n%s", strings.Join(d.stdout, "\n"), d.stderr.String())
		}
	}
}

// query is the PromQL line the demo prints below its "PromQL" heading.
func (d *demoRun) query(t *testing.T) string {
	t.Helper()
	for i, l := range d.stdout {
		if strings.Contains(l, "PromQL") && i+1 < len(d.stdout) {
			return strings.TrimSpace(d.stdout[i+1])
		}
	}
	t.Fatalf("no PromQL in the demo's banner:\n%s", strings.Join(d.stdout, "\n"))
	return ""
}

// checkP99Query: a p99 query works on a Prometheus with native histograms
// and on one without (the classic _bucket series, through "or"), and
// leaves burst traffic out.
func checkP99Query(t *testing.T, where, q string) {
	t.Helper()
	for _, want := range []string{
		`rate(redis_prober_latency_seconds{phase="probe"}`,
		" or ",
		`sum by (target, command, le) (rate(redis_prober_latency_seconds_bucket{phase="probe"}`,
	} {
		if !strings.Contains(strings.Join(strings.Fields(q), " "), want) {
			t.Errorf("%s query lacks %q:\n%s", where, want, q)
		}
	}
}

// line returns the banner line that starts with prefix (after spaces),
// and its index; -1 when there is none.
func (d *demoRun) line(prefix string) (string, int) {
	for i, l := range d.stdout {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), prefix); ok {
			return strings.TrimSpace(rest), i
		}
	}
	return "", -1
}

// promAPI GETs a Prometheus API path and decodes the data field of its
// envelope into v.
func promAPI(ctx context.Context, base, path string, params url.Values, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path+"?"+params.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var env struct {
		Status, Error string
		Data          json.RawMessage
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&env); err != nil {
		return fmt.Errorf("%s: HTTP %d: %w", path, resp.StatusCode, err)
	}
	if env.Status != "success" {
		return fmt.Errorf("%s: %s", path, env.Error)
	}
	return json.Unmarshal(env.Data, v)
}

// promQuery is the instant vector of expr.
func promQuery(ctx context.Context, base, expr string) ([]map[string]string, error) {
	var data struct {
		Result []struct {
			Metric map[string]string `json:"metric"`
		} `json:"result"`
	}
	if err := promAPI(ctx, base, "/api/v1/query", url.Values{"query": {expr}}, &data); err != nil {
		return nil, err
	}
	out := make([]map[string]string, len(data.Result))
	for i, r := range data.Result {
		out[i] = r.Metric
	}
	return out, nil
}

// shippedRules counts the rule groups and rules of alerts/*.yml by their
// "- name:" and "- alert:"/"- record:" lines.
func shippedRules(t *testing.T) (groups []string, rules int) {
	t.Helper()
	files, err := filepath.Glob("../../alerts/*.yml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no alerts/*.yml: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			l = strings.TrimSpace(l)
			if name, ok := strings.CutPrefix(l, "- name:"); ok {
				groups = append(groups, strings.Trim(strings.TrimSpace(name), `"'`))
			}
			if strings.HasPrefix(l, "- alert:") || strings.HasPrefix(l, "- record:") {
				rules++
			}
		}
	}
	return groups, rules
}

// eventually polls cond once a second until it is true or ctx ends.
func eventually(ctx context.Context, cond func() (bool, error)) error {
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-time.After(time.Second):
		}
	}
}

// checkDemoPrometheus: the Prometheus the demo started loaded every rule
// of alerts/, scrapes the prober (up is 1 for its job), and the p99 query
// the demo printed returns data on it (bookworm's 2.42 keeps no native
// histograms by default: the classic side of the "or" answers).
func checkDemoPrometheus(t *testing.T, base, q string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	wantGroups, wantRules := shippedRules(t)
	var loaded int
	var gotGroups []string
	err := eventually(ctx, func() (bool, error) {
		var data struct {
			Groups []struct {
				Name  string
				Rules []struct {
					Name, Health, LastError string
				}
			}
		}
		if err := promAPI(ctx, base, "/api/v1/rules", nil, &data); err != nil {
			return false, err
		}
		loaded, gotGroups = 0, nil
		for _, g := range data.Groups {
			gotGroups = append(gotGroups, g.Name)
			for _, r := range g.Rules {
				loaded++
				if r.Health == "err" {
					t.Errorf("rule %s: %s", r.Name, r.LastError)
				}
			}
		}
		return loaded == wantRules, nil
	})
	if err != nil {
		t.Fatalf("the demo's Prometheus loaded %d rules in groups %v, want %d in %v: %v", loaded, gotGroups, wantRules, wantGroups, err)
	}
	slices.Sort(gotGroups)
	slices.Sort(wantGroups)
	if !slices.Equal(gotGroups, wantGroups) {
		t.Errorf("rule groups %v, want %v", gotGroups, wantGroups)
	}
	if err := eventually(ctx, func() (bool, error) {
		res, err := promQuery(ctx, base, `up{job="redis-prober"} == 1`)
		return len(res) == 1, err
	}); err != nil {
		t.Fatalf("the demo's Prometheus does not scrape the prober (up == 1): %v", err)
	}
	var res []map[string]string
	if err := eventually(ctx, func() (bool, error) {
		var err error
		res, err = promQuery(ctx, base, q)
		return len(res) > 0, err
	}); err != nil {
		t.Fatalf("the demo's query returned nothing on its Prometheus: %v\n%s", err, q)
	}
	if res[0]["command"] == "" || res[0]["target"] == "" {
		t.Errorf("unexpected sample: %v", res[0])
	}
}

// TestDemoQueryAndBursts is issue 14's demo: its PromQL returned nothing on
// a Prometheus without native histograms and mixed burst traffic into the
// p99, and `REDIS_ADDR=prod make demo` load-tested prod with periodic
// bursts nobody mentioned. Against a user's REDIS_ADDR bursts are off
// unless BURSTS=1; the banner says which; the printed query has both forms
// and the phase filter. With prometheus installed the demo starts one
// beside the prober (its URL second, after the status page's): it loads the
// project's rules, scrapes the prober and answers the printed query, and
// Ctrl-C leaves none of it behind; without one the demo says so in one line
// and goes on.
func TestDemoQueryAndBursts(t *testing.T) {
	srv := redistest.Start(t)
	d, stop := runDemo(t, "REDIS_ADDR="+srv.URL())
	banner := strings.Join(d.stdout, "\n")
	if !strings.Contains(banner, "bursts:     off against your REDIS_ADDR (BURSTS=1 make demo turns them on)") {
		t.Errorf("the banner does not say bursts are off:\n%s", banner)
	}
	q := d.query(t)
	checkP99Query(t, "demo", q)

	status, si := d.line("status:")
	prom, pi := d.line("prometheus:")
	_, qi := d.line("PromQL")
	if !strings.HasPrefix(status, fmt.Sprintf("http://127.0.0.1:%d/ ", d.port)) || si < 0 || pi <= si || qi <= pi {
		t.Errorf("the banner does not list the status page first, Prometheus second, then the query:\n%s", banner)
	}
	var promURL, promDir string
	if _, err := exec.LookPath("prometheus"); err == nil || os.Getenv("CI") == "true" {
		m := regexp.MustCompile(`^(http://127\.0\.0\.1:\d+)/ .*data in ([^)]+)\)$`).FindStringSubmatch(prom)
		if m == nil {
			t.Fatalf("no Prometheus URL in the banner (prometheus: %q); stderr:\n%s", prom, d.stderr.String())
		}
		promURL, promDir = m[1], m[2]
		checkDemoPrometheus(t, promURL, q)
	} else {
		t.Log("prometheus not installed: the demo's Prometheus was not checked")
	}
	stop()
	if strings.Contains(d.stderr.String(), "periodic bursts on") {
		t.Errorf("bursts ran against the user's REDIS_ADDR without BURSTS=1:\n%s", d.stderr.String())
	}
	if promURL != "" {
		if _, err := os.Stat(promDir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the demo left Prometheus's dir %s behind: %v", promDir, err)
		}
		if resp, err := http.Get(promURL + "/-/ready"); err == nil {
			resp.Body.Close()
			t.Errorf("the demo's Prometheus still answers at %s after Ctrl-C", promURL)
		}
	}

	on, stopOn := runDemo(t, "REDIS_ADDR="+srv.URL(), "BURSTS=1", "PROMETHEUS=/nonexistent/prometheus")
	stopOn()
	if !strings.Contains(on.stderr.String(), "periodic bursts on") {
		t.Errorf("BURSTS=1: no bursts:\n%s", on.stderr.String())
	}
	if l, _ := on.line("prometheus:"); l != "not installed (/nonexistent/prometheus not found; apt-get install prometheus), going on without it" {
		t.Errorf("without prometheus the banner says %q", l)
	}
}

// TestReadmeP99Query: the README's p99 query is the same kind.
func TestReadmeP99Query(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "```promql\n")
	if !ok {
		t.Fatal("README has no promql block")
	}
	block, _, _ := strings.Cut(rest, "```")
	checkP99Query(t, "README", block)
}
