package e2e

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/promtest"
	"github.com/redis-prober/redis-prober/internal/redistest"
)

// changeKinds are the kinds the change watch counts on every target
// (changes' watchedKinds): their redis_prober_changes_total series exist at
// 0 from the target's start. redisKinds are those this test's server can
// only change by what the test does (all of them since the host's kernel,
// thp and sysctl went to redis_prober_host_changes_total, issue 26).
var (
	changeKinds = []string{"restart", "version", "config", "role", "maxmemory"}
	redisKinds  = map[string]bool{"restart": true, "version": true, "config": true, "role": true, "maxmemory": true}
)

// changeArgs run the probe and a fast change watch, no bursts.
var changeArgs = []string{
	"--probe.rate=20",
	"--probe.connect-interval=0s",
	"--burst.interval=0s",
	"--changes.interval=200ms",
	"--log.level=warn",
}

// TestFirstChangeShowsInIncrease proves, on a real Prometheus, that the
// first change of a kind is seen by increase(redis_prober_changes_total[5m])
// (the change annotation and the changes panel): the counter of every
// watched kind is scraped at 0 before anything changed, so a CONFIG SET
// makes the config series go from 0 to 1 instead of springing into
// existence at 1, which increase() cannot tell from a counter that was
// always 1. The kinds that did not change are there too, at 0, so the
// panels say 0 rather than "No data".
func TestFirstChangeShowsInIncrease(t *testing.T) {
	promtest.Binary(t) // skip (or fail under CI) before building anything
	root := repoRoot(t)
	srv := redistest.Start(t)
	bin := buildProber(t, root)
	p := startProber(t, bin, append([]string{"--redis.addr=" + srv.URL()}, changeArgs...)...)
	prom := promtest.Start(t, promtest.Config{Targets: []string{p.addr}})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	target := srv.Addr()
	sel := fmt.Sprintf(`redis_prober_changes_total{job="redis-prober", target=%q}`, target)

	// Before: Prometheus has stored every watched kind at 0.
	waitForQuery(ctx, t, prom, 30*time.Second, sel, func(got []promtest.Sample) bool {
		return kindsAt(got, changeKinds, func(v float64) bool { return v == 0 })
	})
	lintScrape(t, "before a change", p.scrape(t))

	// The first change of a kind: CONFIG SET of a parameter the watch
	// reads (CONFIG GET *), counted as kind config once the prober saw it.
	if err := srv.Client().ConfigSet(ctx, "hz", "12").Err(); err != nil {
		t.Fatalf("CONFIG SET hz: %v", err)
	}
	after := p.waitForScrape(t, 20*time.Second, "the CONFIG SET counted as a config change", func(s scrape) bool {
		n, _ := s.sum("redis_prober_changes_total", map[string]string{"target": target, "kind": "config"})
		return n >= 1
	})
	lintScrape(t, "after a change", after)

	// After: increase() over 5m sees it, as the dashboards ask.
	inc := fmt.Sprintf(`increase(%s[5m])`, sel)
	got := waitForQuery(ctx, t, prom, 30*time.Second, inc, func(got []promtest.Sample) bool {
		return kindsAt(got, []string{"config"}, func(v float64) bool { return v > 0 })
	})
	byKind := map[string]float64{}
	for _, s := range got {
		byKind[s.Metric["kind"]] = s.Value
	}
	var kinds []string
	for _, k := range changeKinds {
		v, ok := byKind[k]
		switch {
		case !ok:
			t.Errorf("increase() has no series of kind %q: the panels would say No data", k)
		case k != "config" && redisKinds[k] && v != 0:
			t.Errorf("increase() of kind %q is %v; only config changed on the server", k, v)
		}
		kinds = append(kinds, fmt.Sprintf("%s=%.3g", k, v))
	}
	sort.Strings(kinds)
	t.Logf("%s: %v", inc, kinds)
	// The counter itself says one change: the watch counted the CONFIG SET
	// once, not once a round.
	one := fmt.Sprintf(`redis_prober_changes_total{job="redis-prober", target=%q, kind="config"}`, target)
	if got := waitForQuery(ctx, t, prom, 10*time.Second, one, func(got []promtest.Sample) bool { return len(got) == 1 }); got[0].Value != 1 {
		t.Errorf("%s = %v in Prometheus, want 1", one, got[0].Value)
	}
}

// kindsAt says whether every kind of want has a sample whose value ok
// accepts.
func kindsAt(got []promtest.Sample, want []string, ok func(float64) bool) bool {
	seen := map[string]bool{}
	for _, s := range got {
		if ok(s.Value) {
			seen[s.Metric["kind"]] = true
		}
	}
	for _, k := range want {
		if !seen[k] {
			return false
		}
	}
	return true
}
