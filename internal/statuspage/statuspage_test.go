package statuspage

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redis-prober/redis-prober/collector"
	"github.com/redis-prober/redis-prober/engine"
	"github.com/redis-prober/redis-prober/internal/nodeid"
	"github.com/redis-prober/redis-prober/internal/redistest"
	"github.com/redis-prober/redis-prober/prober"
	"github.com/redis-prober/redis-prober/prober/burst"
	"github.com/redis-prober/redis-prober/prober/history"
)

// Text from Redis or the config is escaped, and a hostile error reply is
// bounded before it gets here (history.Recent); the template adds no way in.
func TestStatusTemplateEscapes(t *testing.T) {
	evil := `<script>alert(1)</script>"'><img src=x onerror=alert(1)>`
	v := statusView{Refresh: 10, Telemetry: "/metrics", Nodes: []nodeView{{
		Target: evil, Node: evil, State: "up", DetailURL: "/?target=x", Spark: sparkOf(nil, 0, 120, 24),
		LastError: &errorView{Text: evil}, All: rowView{M1: quantOf(history.RecentQuantiles{}, 0), M5: quantOf(history.RecentQuantiles{}, 0)},
		Burst:  &burstView{Plan: evil, Outcome: evil, Reason: evil, Detail: evil, OpsPerSec: evil, P99: evil, Requests: "1", Ago: evil},
		Change: &changeView{Kinds: evil, Ago: evil, Headline: evil, Before: evil, After: evil, Commands: []changeRow{{Command: evil}}},
		Checks: []checkView{{ID: evil, Severity: evil, Value: evil}}, ChecksKnown: true,
		Why: &whyView{Threshold: evil, LargestKeys: evil},
	}}, HostChecks: []checkView{{ID: evil, Severity: evil, Value: evil}}, HostChecksKnown: true}
	var buf bytes.Buffer
	if err := statusTemplate().Execute(&buf, v); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "<script") || strings.Contains(buf.String(), "<img") {
		t.Errorf("unescaped text on the page:\n%s", buf.String())
	}
	v.Detail, v.Target = true, evil
	v.Nodes[0].Errors = []errorView{{Text: evil}}
	buf.Reset()
	if err := statusTemplate().Execute(&buf, v); err != nil {
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
	q := func(cmd string, n uint64, p99 time.Duration) history.WindowQuantiles {
		return history.WindowQuantiles{Command: cmd, Count: n, P50: p99 / 2, P99: p99}
	}
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name          string
		before, after []history.WindowQuantiles
		want          string // headline before after beforeFew afterFew
	}{
		{"slowest since", []history.WindowQuantiles{q("get", 500, 2*ms), q("set", 500, 3*ms)},
			[]history.WindowQuantiles{q("get", 400, 5*ms), q("set", 400, 4*ms)}, "get 2 ms 5 ms false false"},
		{"nothing since", []history.WindowQuantiles{q("get", 500, 2*ms), q("set", 500, 3*ms)},
			[]history.WindowQuantiles{q("get", 0, 0), q("set", 0, 0)}, "set 3 ms — false true"},
		{"few since", []history.WindowQuantiles{q("get", 0, 0)}, []history.WindowQuantiles{q("get", 10, 900*time.Microsecond)},
			"get — 900 µs true true"},
		{"no samples at all", nil, []history.WindowQuantiles{q("get", 0, 0)}, "   false false"}, // no headline
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
	if e := sparkOf(make([]time.Duration, 60), 0, 120, 24); !e.Empty || len(e.Lines) != 0 || e.Note != "" {
		t.Errorf("empty spark = %+v", e)
	}
	if s.Note != "" {
		t.Errorf("a sparkline with points from 55 minutes ago has the note %q", s.Note)
	}
}

// In its first minutes a sparkline says that it gains one point a minute:
// at first its one point, this minute so far, is a dot at the right edge
// and the rest is blank.
func TestSparklineFirstMinutes(t *testing.T) {
	for _, tc := range []struct {
		name         string
		first        int // index of the first point of 61 (the 61st: this minute so far)
		note         bool
		lines, dots  int
		lastX, lastY string
	}{
		{"first minute", 60, true, 0, 1, "98.0", "2.0"},
		{"second minute", 59, true, 1, 0, "", ""},
		{"eighth minute", 53, true, 1, 0, "", ""},
		{"ninth minute", 52, false, 1, 0, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pts := make([]time.Duration, history.RecentSparkPoints+1)
			for i := tc.first; i < len(pts); i++ {
				pts[i] = time.Millisecond
			}
			s := sparkOf(pts, 0, 100, 24)
			if (s.Note == "1 point a minute") != tc.note || len(s.Lines) != tc.lines || len(s.Dots) != tc.dots {
				t.Errorf("spark = %+v, want note %v, %d lines, %d dots", s, tc.note, tc.lines, tc.dots)
			}
			if tc.dots > 0 && (s.Dots[0].X != tc.lastX || s.Dots[0].Y != tc.lastY) {
				t.Errorf("dot at %s,%s, want %s,%s: whole (r = 2) in the top right corner", s.Dots[0].X, s.Dots[0].Y, tc.lastX, tc.lastY)
			}
			var buf bytes.Buffer
			if err := statusTemplate().ExecuteTemplate(&buf, "spark", s); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(buf.String(), `fill="#888">1 point a minute</text>`); got != tc.note {
				t.Errorf("rendered note %v, want %v:\n%s", got, tc.note, buf.String())
			}
		})
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
	page := &Page{status: status, telemetry: "/metrics", log: slog.New(slog.DiscardHandler), now: time.Now}
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
	// The host's failing check is shown once, in the host section, not
	// in each of the 200 rows.
	if n := strings.Count(rr.Body.String(), `<section id="host">`); n != 1 {
		t.Errorf("%d host sections, want 1", n)
	}
	if n := strings.Count(rr.Body.String(), ">thp_enabled<"); n != 1 {
		t.Errorf("thp_enabled shown %d times, want once (in the host section)", n)
	}
}

// fullRows gives every node a last burst, a last change with three
// commands' windows and two failing checks, so the 200-target page renders
// its fullest rows, and the host a failing check.
type fullRows struct{}

func (fullRows) Name() string                        { return "full-rows" }
func (fullRows) Attach(engine.Node) engine.NodeHooks { return engine.NodeHooks{} }
func (fullRows) LastBurst(nodeid.ID) (engine.LastBurst, bool) {
	return engine.LastBurst{Plan: "default", Outcome: burst.OutcomeCompleted, Reason: burst.ReasonNone, OpsPerSec: 1999.5,
		P99: 800 * time.Microsecond, Requests: 19995, End: time.Now().Add(-time.Minute)}, true
}
func (fullRows) LastChange(nodeid.ID) (engine.LastChange, bool) {
	var before, after []history.WindowQuantiles
	for i, cmd := range []string{"ping", "get", "set"} {
		d := time.Duration(200+100*i) * time.Microsecond
		before = append(before, history.WindowQuantiles{Command: cmd, Count: 600, P50: d / 2, P99: d})
		after = append(after, history.WindowQuantiles{Command: cmd, Count: 300, P50: d, P99: 2 * d})
	}
	return engine.LastChange{Kinds: []string{"restart", "version"}, At: time.Now().Add(-2 * time.Minute), Before: before, After: after, MinSamples: 300}, true
}
func (fullRows) FailingChecks(nodeid.ID) ([]collector.FailedCheck, bool) {
	return []collector.FailedCheck{{ID: "redis_swapped", Severity: collector.SeverityCritical, Value: "4.0 KiB of Redis memory in swap"},
		{ID: "latency_monitor", Severity: collector.SeverityInfo, Value: "latency-monitor-threshold 0 (off)"}}, true
}
func (fullRows) FailingHostChecks() ([]collector.FailedCheck, bool) {
	return []collector.FailedCheck{{ID: "thp_enabled", Severity: collector.SeverityCritical, Value: "enabled = always"}}, true
}

// BenchmarkStatusPage200Targets is the page's server time at 200 targets
// (issue 14's goal: under 200 ms): go test -run '^$' -bench StatusPage
// ./internal/statuspage. Timing lives here, not in a pass/fail test.
func BenchmarkStatusPage200Targets(b *testing.B) {
	srv := redistest.Start(b)
	status, stop := runTargets(b, srv.URL(), 200)
	defer stop()
	page := &Page{status: status, telemetry: "/metrics", log: slog.New(slog.DiscardHandler), now: time.Now}
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
	status := engine.NewStatus(engine.StatusSources{Bursts: fullRows{}, Changes: fullRows{}, Checks: fullRows{}, Host: fullRows{}})
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
			if ns.Up == history.UpYes && ns.All.Last1m.Count > 0 {
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

// The detail view names a Redis 8's largest keys beside the causes when
// the attribution has them, and says nothing of keys when it has none.
func TestWhyShowsLargestKeys(t *testing.T) {
	for _, tc := range []struct {
		keys string
		want bool
	}{{"strings of 2M-4M bytes, hashes of 64K-128K items", true}, {"", false}} {
		why := whyOf(&engine.SlowCauses{Threshold: 2 * time.Millisecond, LargestKeys: tc.keys,
			Last5m: []engine.CauseCount{{Cause: "slow_command", Count: 3}}})
		v := statusView{Refresh: 10, Telemetry: "/metrics", Detail: true, Target: "cache", Nodes: []nodeView{{
			Target: "cache", State: "up", Spark: sparkOf(nil, 0, 120, 24), Why: why,
			All: rowView{M1: quantOf(history.RecentQuantiles{}, 0), M5: quantOf(history.RecentQuantiles{}, 0)},
		}}}
		var buf bytes.Buffer
		if err := statusTemplate().Execute(&buf, v); err != nil {
			t.Fatal(err)
		}
		page := buf.String()
		if got := strings.Contains(page, "Largest keys when slow requests last waited (INFO KEYSIZES): "+tc.keys+"."); got != tc.want {
			t.Errorf("keys %q: shown %v, want %v", tc.keys, got, tc.want)
		}
		if !tc.want && strings.Contains(page, "Largest keys") {
			t.Errorf("no key sizes, yet the page speaks of them")
		}
	}
}
