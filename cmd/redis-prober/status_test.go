package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/collector"
	"github.com/redis-prober/redis-prober/engine"
	"github.com/redis-prober/redis-prober/internal/redistest"
	"github.com/redis-prober/redis-prober/prober"
	"github.com/redis-prober/redis-prober/prober/burst"
)

// waitPage polls path until its body matches every pattern, for up to 15 s.
func waitPage(t *testing.T, p *runningProber, path string, patterns ...string) string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		code, body := p.get(t, path)
		ok := code == http.StatusOK
		for _, pat := range patterns {
			ok = ok && regexp.MustCompile(pat).MatchString(body)
		}
		if ok {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: status %d, no match of %q within 15s; page:\n%s\nstderr: %s", path, code, patterns, body, p.stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// The status page of a real prober: one Redis it may log in to, one whose
// password is another, and neither page ever shows the password.
func TestStatusPage(t *testing.T) {
	const secret = "st4tus-Pa55-never-shown"
	right := redistest.Start(t, "requirepass "+secret)
	wrong := redistest.Start(t, "requirepass something-else")
	p := startProber(t, []string{"REDIS_PASSWORD=" + secret}, "--redis.addr="+right.URL(), "--redis.addr="+wrong.URL(),
		"--probe.rate=50", "--burst.interval=0")

	latency := `\d+(\.\d+)? (µs|ms|s)`
	home := waitPage(t, p, "/",
		`<tr class="node" data-target="`+regexp.QuoteMeta(right.Addr())+`">`,
		`<td class="name up">up</td>\s*<td>`+latency+`</td><td class="[a-z]*">`+latency+`</td>`,
		`<td class="name down">down</td>`,
		`WRONGPASS`)
	for _, want := range []string{
		`<meta http-equiv="refresh" content="10">`,
		`<svg class="spark"`,
		`1 of 2 nodes up`,
		`href="/?target=` + strings.ReplaceAll(right.Addr(), ":", "%3a"),
		`href="/metrics"`,
	} {
		if !strings.Contains(strings.ToLower(home), strings.ToLower(want)) {
			t.Errorf("/ lacks %s", want)
		}
	}
	if strings.Contains(home, "<script") {
		t.Error("/ has a script")
	}

	detail := waitPage(t, p, "/?target="+right.Addr(), `<td class="name">ping</td>\s*<td>`+latency)
	for _, cmd := range []string{"ping", "get", "set"} {
		if !strings.Contains(detail, `<td class="name">`+cmd+`</td>`) {
			t.Errorf("detail view lacks the %s row", cmd)
		}
	}
	if strings.Contains(detail, wrong.Addr()) {
		t.Error("detail view of one target shows the other")
	}
	bad := waitPage(t, p, "/?target="+wrong.Addr(), `<table class="errors">`, `WRONGPASS`)
	if code, _ := p.get(t, "/?target=no-such-target"); code != http.StatusNotFound {
		t.Errorf("unknown target: status %d, want 404", code)
	}
	if code, _ := p.get(t, "/no-such-page"); code != http.StatusNotFound {
		t.Errorf("/no-such-page: status %d, want 404", code)
	}
	for name, text := range map[string]string{"/": home, "detail": detail, "wrong detail": bad, "logs": p.stderr.String()} {
		if strings.Contains(text, secret) {
			t.Errorf("%s shows the password", name)
		}
	}
}

// Text from Redis or the config is escaped, and a hostile error reply is
// bounded before it gets here (prober.Recent); the template adds no way in.
func TestStatusTemplateEscapes(t *testing.T) {
	evil := `<script>alert(1)</script>"'><img src=x onerror=alert(1)>`
	v := statusView{Refresh: 10, Telemetry: "/metrics", Nodes: []nodeView{{
		Target: evil, Node: evil, State: "up", DetailURL: "/?target=x", Spark: sparkOf(nil, 0, 120, 24),
		LastError: &errorView{Text: evil}, All: rowView{M1: quantOf(prober.RecentQuantiles{}, 0), M5: quantOf(prober.RecentQuantiles{}, 0)},
		Burst:  &burstView{Plan: evil, Outcome: evil, Reason: evil, Detail: evil, OpsPerSec: evil, P99: evil, Requests: "1", Ago: evil},
		Change: &changeView{Kinds: evil, Ago: evil, Headline: evil, Before: evil, After: evil, Commands: []changeRow{{Command: evil}}},
		Checks: []checkView{{ID: evil, Severity: evil, Value: evil}}, ChecksKnown: true,
	}}}
	var buf bytes.Buffer
	if err := statusTemplate.Execute(&buf, v); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "<script") || strings.Contains(buf.String(), "<img") {
		t.Errorf("unescaped text on the page:\n%s", buf.String())
	}
	v.Detail, v.Target = true, evil
	v.Nodes[0].Errors = []errorView{{Text: evil}}
	buf.Reset()
	if err := statusTemplate.Execute(&buf, v); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "<script") || strings.Contains(buf.String(), "<img") {
		t.Errorf("unescaped text on the detail view:\n%s", buf.String())
	}
}

// The last change's headline is the command slowest since the change;
// before any sample since, the one slowest before it; grey under the
// window's minimum.
func TestChangeOf(t *testing.T) {
	ms := time.Millisecond
	q := func(cmd string, n uint64, p99 time.Duration) prober.WindowQuantiles {
		return prober.WindowQuantiles{Command: cmd, Count: n, P50: p99 / 2, P99: p99}
	}
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name          string
		before, after []prober.WindowQuantiles
		want          string // headline before after beforeFew afterFew
	}{
		{"slowest since", []prober.WindowQuantiles{q("get", 500, 2*ms), q("set", 500, 3*ms)},
			[]prober.WindowQuantiles{q("get", 400, 5*ms), q("set", 400, 4*ms)}, "get 2 ms 5 ms false false"},
		{"nothing since", []prober.WindowQuantiles{q("get", 500, 2*ms), q("set", 500, 3*ms)},
			[]prober.WindowQuantiles{q("get", 0, 0), q("set", 0, 0)}, "set 3 ms — false true"},
		{"few since", []prober.WindowQuantiles{q("get", 0, 0)}, []prober.WindowQuantiles{q("get", 10, 900*time.Microsecond)},
			"get — 900 µs true true"},
		{"no samples at all", nil, []prober.WindowQuantiles{q("get", 0, 0)}, "   false false"}, // no headline
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := changeOf(&engine.LastChange{Kinds: []string{"restart", "version"}, At: at, Before: tc.before, After: tc.after, MinSamples: 300},
				at.Add(90*time.Second))
			if got := fmt.Sprint(v.Headline, " ", v.Before, " ", v.After, " ", v.BeforeFew, " ", v.AfterFew); got != tc.want {
				t.Errorf("headline = %q, want %q", got, tc.want)
			}
			if v.Kinds != "restart, version" || v.Ago != "1m30s ago" || len(v.Commands) != len(tc.after) {
				t.Errorf("view = %+v", v)
			}
		})
	}
	if changeOf(nil, at) != nil || burstOf(nil, at) != nil {
		t.Error("a view of nothing")
	}
}

func TestBurstOf(t *testing.T) {
	end := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		in   engine.LastBurst
		want string // outcome reason ops p99 requests capacity
	}{
		{"completed", engine.LastBurst{Outcome: burst.OutcomeCompleted, Reason: burst.ReasonNone, OpsPerSec: 19987.4, P99: 520 * time.Microsecond, Requests: 199874, End: end},
			"completed  19,987 ops/s 520 µs 199874 "},
		{"aborted", engine.LastBurst{Outcome: burst.OutcomeAborted, Reason: burst.ReasonP99, OpsPerSec: 812, P99: 25 * time.Millisecond, Requests: 812, End: end},
			"aborted p99 812 ops/s 25 ms 812 "},
		{"skipped, no requests", engine.LastBurst{Outcome: burst.OutcomeSkipped, Reason: burst.ReasonReplica, End: end},
			"skipped replica — —  "},
		{"step-load", engine.LastBurst{Outcome: burst.OutcomeCompleted, Reason: burst.ReasonNone, OpsPerSec: 1000, P99: time.Millisecond, Requests: 10, Capacity: 34000, End: end},
			"completed  1,000 ops/s 1 ms 10 34,000 ops/s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := burstOf(&tc.in, end.Add(3*time.Second))
			if got := fmt.Sprint(v.Outcome, " ", v.Reason, " ", v.OpsPerSec, " ", v.P99, " ", v.Requests, " ", v.Capacity); got != tc.want {
				t.Errorf("burst view = %q, want %q", got, tc.want)
			}
			if v.Ago != "3s ago" {
				t.Errorf("ago = %q", v.Ago)
			}
		})
	}
}

func TestSparkline(t *testing.T) {
	pts := make([]time.Duration, 60)
	for i := 10; i < 60; i++ {
		pts[i] = time.Duration(100+i) * time.Microsecond
	}
	pts[30] = 0      // a gap
	pts[5] = 2000000 // a lone point: 2ms
	s := sparkOf(pts, 3*time.Millisecond, 120, 24)
	if len(s.Lines) != 2 || len(s.Dots) != 1 || s.Empty {
		t.Errorf("spark = %+v, want two lines around the gap and one dot", s)
	}
	if !s.HasObjective {
		t.Error("objective within twice the top is drawn")
	}
	if e := sparkOf(make([]time.Duration, 60), 0, 120, 24); !e.Empty || len(e.Lines) != 0 {
		t.Errorf("empty spark = %+v", e)
	}
}

// chromium finds the headless browser, or fails (CI) / skips (elsewhere)
// the test, as redistest does for redis-server.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium not found on PATH: CI must install it (see .ci/run)")
	}
	t.Skip("SKIPPING: chromium not found on PATH; install it (apt-get install chromium) to run the browser test")
	return ""
}

func runChromium(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.Bytes())
	}
	// Chromium logs page errors (a refused resource, a script error) to
	// stderr as CONSOLE lines; the page must have none.
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, "CONSOLE") || strings.Contains(line, "Refused to") {
			t.Errorf("console: %s", line)
		}
	}
	return out
}

// The page as a browser renders it, against a real prober and Redis: the
// DOM Chromium built, and a screenshot kept under $ARTIFACTS_DIR. The
// Redis has the latency monitor off (a failing check), the prober bursts
// every 2 s, and the test changes the config once the probe has samples,
// so the last burst, the last change and the failing checks all show.
func TestStatusPageInBrowser(t *testing.T) {
	bin := chromium(t)
	srv := redistest.Start(t, "latency-monitor-threshold 0")
	p := startProber(t, nil, "--redis.addr="+srv.URL(), "--redis.addr=redis://127.0.0.1:1", "--probe.rate=50",
		// A generous abort threshold: on a busy host every burst still
		// completes, so the one the browser sees is like the one waited for.
		"--burst.interval=2s", "--burst.test-time=500ms", "--burst.warmup=0", "--burst.rate=500", "--burst.abort-p99=1s",
		"--changes.interval=200ms", "--changes.min-samples=1", "--collector.refresh-interval=500ms")
	waitPage(t, p, "/", `<td class="name up">up</td>\s*<td>\d`, `<td class="name down">down</td>`)
	if err := srv.Client().ConfigSet(t.Context(), "appendfsync", "always").Err(); err != nil {
		t.Fatal(err)
	}
	waitPage(t, p, "/", `<span class="outcome completed">`, `<span class="kind">config</span>`, `<span class="after">\d`)

	dom := string(runChromium(t, bin, "--dump-dom", p.url+"/"))
	for _, pat := range []string{
		`<title>Redis Prober</title>`,
		`<table id="targets">`,
		`data-target="` + regexp.QuoteMeta(srv.Addr()) + `"`,
		`<td class="name up">up</td>\s*<td>\d+(\.\d+)? (µs|ms)</td>`,
		`<td class="name down">down</td>`,
		`connection refused`,
		`<svg class="spark"[^>]*>`,
		// The current minute's p99 is the sparkline's first point.
		`<svg class="spark"[^>]*><title>p99 per minute[^<]*</title>.*?<circle `,
		`p99, last hour`,
		// The Redis node's last burst (outcome, ops/s, p99, when), last
		// change (kind, when, the slowest command's p99 before → after)
		// and failing checks; the unreachable node has none of them.
		`<td class="burst"><span class="outcome completed">completed</span> [\d,]+ ops/s, p99 <span class="p99">\d+(\.\d+)? (µs|ms)</span> <span class="note">\(\d+s ago\)</span></td>`,
		`<td class="change"><span class="kind">config</span> <span class="note">\(\d+s ago\)</span><br>[a-z]+ p99 <span class="before">\d+(\.\d+)? (µs|ms)</span> → <span class="after">\d+(\.\d+)? (µs|ms)</span></td>`,
		`<td class="checks">[^<]*(<span class="check [a-z]+" title="[^"]*">[a-z_]+</span>)*<span class="check info" title="info: latency-monitor-threshold 0 \(off\)">latency_monitor</span>`,
		// The unreachable node: its bursts fail to start (or none ran
		// yet), it saw no change.
		`<td class="name down">down</td>(?s:.*?)<td class="burst">(<span class="note">none yet</span>|<span class="outcome failed">failed</span> \([a-z]+\) <span class="note">\(\d+s ago\)</span>)</td>\s*<td class="change"><span class="note">none seen</span></td>`,
	} {
		if !regexp.MustCompile(pat).MatchString(dom) {
			t.Errorf("rendered DOM lacks %s", pat)
		}
	}
	detail := string(runChromium(t, bin, "--dump-dom", p.url+"/?target="+srv.Addr()))
	for _, pat := range []string{
		`<td class="name">get</td>\s*<td>\d`,
		`<table class="burst">.*?<td class="name">default</td><td class="name outcome completed">completed</td><td>[\d,]+ ops/s</td><td class="p99">\d`,
		`<p class="change"><span class="kind">config</span> at \d\d:\d\d:\d\d \(\d+s ago\)\.</p>`,
		`<table class="change">.*?<td class="name">get</td><td>\d[^<]*</td><td class="">\d[^<]*</td><td>[1-9]\d*</td>`,
		`<table class="checks">.*?<span class="check info">latency_monitor</span></td><td class="name">info</td><td class="text">latency-monitor-threshold 0 \(off\)</td>`,
	} {
		if !regexp.MustCompile(`(?s)` + pat).MatchString(detail) {
			t.Errorf("rendered detail view lacks %s", pat)
		}
	}
	if t.Failed() {
		t.Logf("DOM:\n%s\ndetail:\n%s", dom, detail)
	}

	dir := os.Getenv("ARTIFACTS_DIR")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, url := range map[string]string{"status-page.png": p.url + "/", "status-detail.png": p.url + "/?target=" + srv.Addr()} {
		shot := filepath.Join(dir, name)
		runChromium(t, bin, "--screenshot="+shot, "--window-size=1600,900", url)
		st, err := os.Stat(shot)
		if err != nil || st.Size() < 5000 {
			t.Fatalf("screenshot %s: %v (size %d)", shot, err, st.Size())
		}
		t.Logf("screenshot: %s", shot)
	}
}

// The page's server time at 200 targets, with the engine's history in the
// process: rendering the whole table must stay well under 200 ms.
func TestStatusPageRenders200Targets(t *testing.T) {
	if testing.Short() {
		t.Skip("200 targets")
	}
	srv := redistest.Start(t)
	status, stop := runTargets(t, srv.URL(), 200)
	defer stop()
	page := &statusPage{status: status, telemetry: "/metrics", log: slog.New(slog.DiscardHandler), now: time.Now}
	rr := httptest.NewRecorder()
	page.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, "/", nil))
	if rr.Code != http.StatusOK || strings.Count(rr.Body.String(), `<tr class="node"`) != 200 {
		t.Fatalf("status %d, %d rows", rr.Code, strings.Count(rr.Body.String(), `<tr class="node"`))
	}
	for _, cell := range []string{`<td class="burst"><span class="outcome completed">`, `<td class="change"><span class="kind">restart, version</span>`,
		`<td class="checks"><span class="check critical"`} {
		if n := strings.Count(rr.Body.String(), cell); n != 200 {
			t.Errorf("%d rows with %s, want 200", n, cell)
		}
	}
}

// fullRows gives every node a last burst, a last change with three
// commands' windows and two failing checks, so the 200-target page renders
// its fullest rows.
type fullRows struct{}

func (fullRows) Name() string                                            { return "full-rows" }
func (fullRows) RunTarget(context.Context, engine.Target, *redis.Client) {}
func (fullRows) LastBurst(string, string) (engine.LastBurst, bool) {
	return engine.LastBurst{Plan: "default", Outcome: burst.OutcomeCompleted, Reason: burst.ReasonNone, OpsPerSec: 1999.5,
		P99: 800 * time.Microsecond, Requests: 19995, End: time.Now().Add(-time.Minute)}, true
}
func (fullRows) LastChange(string, string) (engine.LastChange, bool) {
	var before, after []prober.WindowQuantiles
	for i, cmd := range []string{"ping", "get", "set"} {
		d := time.Duration(200+100*i) * time.Microsecond
		before = append(before, prober.WindowQuantiles{Command: cmd, Count: 600, P50: d / 2, P99: d})
		after = append(after, prober.WindowQuantiles{Command: cmd, Count: 300, P50: d, P99: 2 * d})
	}
	return engine.LastChange{Kinds: []string{"restart", "version"}, At: time.Now().Add(-2 * time.Minute), Before: before, After: after, MinSamples: 300}, true
}
func (fullRows) FailingChecks(string, string) ([]collector.FailedCheck, bool) {
	return []collector.FailedCheck{{ID: "thp_enabled", Severity: collector.SeverityCritical, Value: "enabled = always"},
		{ID: "latency_monitor", Severity: collector.SeverityInfo, Value: "latency-monitor-threshold 0 (off)"}}, true
}

// BenchmarkStatusPage200Targets is the page's server time at 200 targets
// (issue 14's goal: under 200 ms): go test -run '^$' -bench StatusPage
// ./cmd/redis-prober. Timing lives here, not in a pass/fail test.
func BenchmarkStatusPage200Targets(b *testing.B) {
	srv := redistest.Start(b)
	status, stop := runTargets(b, srv.URL(), 200)
	defer stop()
	page := &statusPage{status: status, telemetry: "/metrics", log: slog.New(slog.DiscardHandler), now: time.Now}
	for b.Loop() {
		rr := httptest.NewRecorder()
		page.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, "/", nil))
		if rr.Code != http.StatusOK {
			b.Fatalf("status %d", rr.Code)
		}
	}
}

// runTargets runs an engine with the status service in this process: n
// targets on one Redis, each with its own key tag, at 2 probes a second.
func runTargets(t testing.TB, url string, n int) (*engine.Status, func()) {
	t.Helper()
	_, ep, err := engine.ParseAddr(url)
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := prober.ParseCommands("ping,get,set")
	if err != nil {
		t.Fatal(err)
	}
	var cfg engine.Config
	for i := range n {
		name := fmt.Sprintf("target-%03d", i)
		cfg.Targets = append(cfg.Targets, engine.Target{Name: name, Endpoint: ep, Objective: 5 * time.Millisecond,
			SeedInterval: 30 * time.Second, Probe: prober.ProbeConfig{Rate: 2, Timeout: time.Second, Commands: cmds,
				Connections: 1, DataSize: 32, KeyTTL: time.Minute, Namespace: prober.Namespace{Prefix: "redis-prober:", Tag: name}}})
	}
	cfg.CleanupTimeout = 5 * time.Second
	status := engine.NewStatus(fullRows{})
	eng := engine.New(prometheus.NewRegistry(), slog.New(slog.DiscardHandler), status)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		eng.Run(ctx, cfg)
	}()
	stop := func() {
		cancel()
		<-done
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		up := 0
		for _, ns := range status.Snapshot("", time.Now()) {
			if ns.Up == prober.UpYes && ns.All.Last1m.Count > 0 {
				up++
			}
		}
		if up == n {
			return status, stop
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("%d of %d targets up after 30s", up, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
