package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/redis-prober/redis-prober/internal/promtest"
	"github.com/redis-prober/redis-prober/internal/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// pendingMetrics are series the dashboards and rules read but the prober does
// not produce yet. Queries that read one of them may come back empty (the
// test logs them); every other query must return data. The test fails as
// soon as a pending metric shows up, so this list only shrinks: remove an
// entry when its feature lands (and wire its flags into proberArgs).
var pendingMetrics = []string{}

// hostFiles are metrics that exist only where the host exposes a file; on a
// host without it, queries that read them may be empty (logged, not failed).
var hostFiles = map[string]string{
	"redis_prober_host_memory_pressure_seconds_total": "/proc/pressure/memory",
	"redis_prober_host_thp_enabled":                   "/sys/kernel/mm/transparent_hugepage/enabled",
	"redis_prober_host_thp_defrag":                    "/sys/kernel/mm/transparent_hugepage/defrag",
}

// proberArgs make every panel fill within seconds: a fast probe, a connect
// probe and jitter sample every second or faster, collectors refreshed twice
// a second.
var proberArgs = []string{
	"--probe.rate=50",
	"--probe.connect-interval=1s",
	"--probe.intrinsic-interval=100ms",
	"--collector.refresh-interval=500ms",
	// A short step-load every few seconds: burst latency, the last burst's
	// figures and the capacity at the objective.
	"--burst.interval=5s",
	"--burst.step",
	"--burst.test-time=1s",
	"--burst.clients=2",
	"--burst.rate=600",
	"--burst.warmup=0s",
	"--burst.step-start=200",
	"--burst.step-factor=2",
	"--burst.step-duration=500ms",
	"--burst.step-max-steps=3",
	// Change markers: a CONFIG SET during the run is seen within half a
	// second, and the before/after windows export after a few seconds.
	"--changes.interval=500ms",
	"--changes.min-samples=" + strconv.Itoa(changesMinSamples),
	"--log.level=warn",
}

// changesMinSamples is --changes.min-samples: the fewest samples of a
// command a before/after window needs to be exported.
const changesMinSamples = 20

// probedCommands are the prober's default --probe.commands, what Grafana's
// "All" expands $command to.
var probedCommands = []string{"ping", "get", "set"}

// dataWait bounds the wait for data once Prometheus runs.
const dataWait = 60 * time.Second

// TestDashboardsAndRulesAgainstPrometheus proves the dashboards and rules on
// real data: redis-server, the prober binary and Prometheus 2.42+ with native
// histograms and the project's rules; every dashboard query and recording
// rule must return data, every alert expression must evaluate.
func TestDashboardsAndRulesAgainstPrometheus(t *testing.T) {
	promtest.Binary(t) // skip (or fail under CI) before building anything
	// make test runs this on bookworm's Prometheus 2.42 and on 3.5 and
	// 3.16 (PROMETHEUS_BIN); every rule file of alerts/ loads on each.
	major, minor := promtest.Version(t)
	t.Logf("Prometheus %d.%d (%s=%q)", major, minor, promtest.BinEnv, os.Getenv(promtest.BinEnv))
	root := repoRoot(t)
	ruleFiles, err := filepath.Glob(filepath.Join(root, "alerts", "*.yml"))
	if err != nil || len(ruleFiles) == 0 {
		t.Fatalf("no alerts/*.yml: %v", err)
	}

	began := time.Now()
	t.Cleanup(func() { t.Logf("e2e took %v in all", time.Since(began).Round(time.Second)) })
	srv := redistest.Start(t)
	bin := buildProber(t, root)
	t.Logf("prober built in %v", time.Since(began).Round(time.Second))
	p := startProber(t, bin, append([]string{"--redis.addr=" + srv.URL()}, proberArgs...)...)
	prom := promtest.Start(t, promtest.Config{Targets: []string{p.addr}, RuleFiles: ruleFiles})
	ctx, cancel := context.WithTimeout(context.Background(), dataWait+30*time.Second)
	defer cancel()
	// The exposition is lint-clean from the start (cmd/redis-prober's test
	// lints that too) and, further down, after a burst and a change.
	lintScrape(t, "at start", p.scrape(t))

	// A fork for the fork panels: once the INFO collector has a baseline,
	// so it sees the fork happen and observes it.
	if p.waitForMetric(t, "redis_prober_forks_total", 15*time.Second) {
		if err := srv.Client().BgSave(ctx).Err(); err != nil {
			t.Fatalf("BGSAVE: %v", err)
		}
	} else {
		t.Log("redis_prober_forks_total never appeared; no BGSAVE")
	}
	// A config change for the change markers and the before/after latency,
	// once the "before" window holds enough samples of every command
	// (--changes.min-samples, twice over: the window began a little after
	// the first probes).
	target := srv.Addr() // the prober names a redis:// target host:port
	p.waitForScrape(t, 15*time.Second, "change watch running and enough probes of every command", func(s scrape) bool {
		if _, ok := s.sum("redis_prober_server_info", map[string]string{"target": target}); !ok {
			return false
		}
		for _, c := range probedCommands {
			if n, _ := s.sum("redis_prober_requests_total", map[string]string{"target": target, "command": c, "phase": "probe"}); n < 2*changesMinSamples {
				return false
			}
		}
		return true
	})
	if err := srv.Client().ConfigSet(ctx, "hz", "11").Err(); err != nil {
		t.Fatalf("CONFIG SET hz: %v", err)
	}

	checks := dashboardChecks(t, root, grafanaVars(target, probedCommands))
	checks = append(checks, docChecks(t, root)...)

	rules := waitForRules(ctx, t, prom)
	// burnrate.yml has a rule group per objective, labelled objective=;
	// the groups of objectives no target has record nothing, by design:
	// they must evaluate, not return data.
	inUse := objectivesInUse(ctx, t, prom)
	recorded := map[string]string{}
	for _, r := range rules {
		switch r.Type {
		case "recording":
			recorded[r.Name] = r.Query
			o, ok := r.Labels["objective"]
			need := !ok || inUse[o]
			// The rule's own expression, and the stored series: Prometheus
			// drops a recording whose result is a histogram.
			checks = append(checks,
				check{where: r.Group + " / " + r.Name, expr: r.Query, mustHaveData: need},
				check{where: r.Group + " / " + r.Name + " (stored)", expr: r.Name + `{objective="` + o + `"}`, mustHaveData: need})
		case "alerting":
			checks = append(checks, check{where: r.Group + " / " + r.Name, expr: r.Query})
		}
	}

	// Wait for data until every required query has it; queries excused
	// (pending feature, missing host file) are asked along but never
	// waited for.
	excused := excuses(t)
	if major := redisMajor(ctx, t, srv); major < 7 {
		// LATENCY HISTOGRAM, the source of the server-side latency, is Redis 7+.
		excused["redis_prober_server_latency_seconds"] = fmt.Sprintf("redis-server %d has no LATENCY HISTOGRAM", major)
	}
	why := func(c check) string { return excuse(metricsOf(c.expr, recorded), excused) }
	start := time.Now()
	deadline := start.Add(dataWait)
	remaining := checks
	var last string // the slowest query to get data, to tune the wait
	mayBeEmpty := 0 // checks that need only evaluate (alerts, unused objectives)
	for _, c := range checks {
		if !c.mustHaveData {
			mayBeEmpty++
		}
	}
	for {
		var next []check
		waiting := false
		for _, c := range remaining {
			got, err := prom.Query(ctx, c.expr)
			switch {
			case err != nil:
				t.Errorf("%s: %v\n%s", c.where, err, c.expr)
			case len(got) == 0 && c.mustHaveData:
				next = append(next, c)
				waiting = waiting || why(c) == ""
			case c.mustHaveData:
				last = fmt.Sprintf("%s after %v", c.where, time.Since(start).Round(time.Second))
			}
		}
		remaining = next
		if !waiting || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	var missing, allowed int
	for _, c := range remaining {
		if w := why(c); w != "" {
			allowed++
			t.Logf("no data, allowed (%s): %s", w, c.where)
			continue
		}
		missing++
		t.Errorf("no data after %v: %s\n%s", dataWait, c.where, c.expr)
	}
	t.Logf("%d expressions evaluated: %d that need only evaluate (alerts, rules of objectives no target has), %d with data, %d allowed empty, %d missing; last to get data: %s",
		len(checks), mayBeEmpty, len(checks)-mayBeEmpty-len(remaining), allowed, missing, last)

	// A burst has run (its last-burst summaries, throughput and capacity
	// exported) and the CONFIG SET above was counted (the change latency
	// summaries exported): the scrape that has them all passes the lint.
	lintScrape(t, "after a burst and a change", p.waitForScrape(t, 30*time.Second, "a completed burst and the config change counted", func(s scrape) bool {
		bursts, _ := s.sum("redis_prober_burst_runs_total", map[string]string{"target": target, "outcome": "completed"})
		changes, _ := s.sum("redis_prober_changes_total", map[string]string{"target": target, "kind": "config"})
		_, lastBurst := s.sum("redis_prober_burst_last_latency_seconds", map[string]string{"target": target})
		_, window := s.sum("redis_prober_change_latency_seconds", map[string]string{"target": target})
		return bursts >= 1 && changes >= 1 && lastBurst && window
	}))

	assertNativeHistograms(ctx, t, prom)
	assertPendingStillPending(ctx, t, prom)
	assertRulesHealthy(ctx, t, prom)
}

// waitForRules waits until Prometheus has loaded and evaluated every rule.
func waitForRules(ctx context.Context, t *testing.T, prom *promtest.Server) []promtest.Rule {
	t.Helper()
	for {
		rules, err := prom.Rules(ctx)
		if err != nil {
			t.Fatal(err)
		}
		evaluated := len(rules) > 0
		for _, r := range rules {
			evaluated = evaluated && r.Health != "unknown"
		}
		if evaluated {
			return rules
		}
		select {
		case <-ctx.Done():
			t.Fatalf("rules not evaluated: %d loaded", len(rules))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// objectivesInUse are the objectives (in seconds, as the rules' objective
// label writes them) of the targets Prometheus scrapes.
func objectivesInUse(ctx context.Context, t *testing.T, prom *promtest.Server) map[string]bool {
	t.Helper()
	got := waitForQuery(ctx, t, prom, dataWait, "redis_prober_objective_seconds", func(got []promtest.Sample) bool { return len(got) > 0 })
	out := map[string]bool{}
	for _, s := range got {
		out[strconv.FormatFloat(s.Value, 'f', -1, 64)] = true
	}
	t.Logf("objectives in use: %v", out)
	return out
}

// excuses maps each metric that may be absent to the reason.
func excuses(t *testing.T) map[string]string {
	out := map[string]string{
		// Counted once a kernel, THP or sysctl of the host changes
		// under a running prober; the test changes none.
		"redis_prober_host_change_last_timestamp_seconds": "no host change during the test",
	}
	for _, m := range pendingMetrics {
		out[m] = "pending feature"
	}
	for m, f := range hostFiles {
		if _, err := os.Stat(f); err != nil {
			out[m] = "this host has no " + f
			t.Logf("%s: this host has no %s", m, f)
		}
	}
	return out
}

func excuse(metrics []string, excused map[string]string) string {
	var why []string
	for _, m := range metrics {
		if r, ok := excused[m]; ok {
			why = append(why, m+": "+r)
		}
	}
	return strings.Join(why, ", ")
}

// assertNativeHistograms proves the quantile panels read the native
// histogram, the path the dashboards and rules are written for.
func assertNativeHistograms(ctx context.Context, t *testing.T, prom *promtest.Server) {
	t.Helper()
	got, err := prom.Query(ctx, `redis_prober_latency_seconds{phase="probe"}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || !got[0].Histogram {
		t.Errorf("redis_prober_latency_seconds is not stored as a native histogram (%d series): does promtest ask for them the way this Prometheus needs (the feature flag before 3.9, scrape_native_histograms from 3.8)?", len(got))
	}
	if classic, err := prom.Query(ctx, `redis_prober_latency_seconds_bucket`); err == nil {
		t.Logf("classic _bucket series stored beside the native ones: %d", len(classic))
	}
}

// assertPendingStillPending keeps pendingMetrics honest.
func assertPendingStillPending(ctx context.Context, t *testing.T, prom *promtest.Server) {
	t.Helper()
	for _, m := range pendingMetrics {
		got, err := prom.Query(ctx, `{__name__=~"`+m+`(_bucket|_count|_sum)?"}`)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) > 0 {
			t.Errorf("%s is produced now: remove it from pendingMetrics in internal/e2e", m)
		}
	}
}

// assertRulesHealthy fails on any rule Prometheus could not evaluate.
func assertRulesHealthy(ctx context.Context, t *testing.T, prom *promtest.Server) {
	t.Helper()
	rules, err := prom.Rules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rules {
		if r.Health != "ok" || r.LastError != "" {
			t.Errorf("rule %s / %s: health %q, error %q", r.Group, r.Name, r.Health, r.LastError)
		}
		names = append(names, r.Name)
	}
	sort.Strings(names)
	t.Logf("%d rules loaded and healthy", len(names))
}

// redisMajor is the major version of the test's redis-server.
func redisMajor(ctx context.Context, t *testing.T, srv *redistest.Server) int {
	t.Helper()
	info, err := srv.Client().Info(ctx, "server").Result()
	if err != nil {
		t.Fatalf("INFO server: %v", err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			major, _, _ := strings.Cut(v, ".")
			n, err := strconv.Atoi(major)
			if err != nil {
				t.Fatalf("redis_version %q: %v", v, err)
			}
			return n
		}
	}
	t.Fatalf("no redis_version in INFO server")
	return 0
}
