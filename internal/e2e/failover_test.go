package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/promtest"
	"github.com/redis-prober/redis-prober/internal/redistest"
)

// TestScrapeLintsAfterFailover follows a Sentinel failover with the prober
// binary: the scrape passes `promtool check metrics` before it and after it
// (the old primary's series gone, the new one's started), and the first
// failover shows in increase(redis_prober_changes_total{kind="failover"}[5m])
// on a real Prometheus, its counter having been scraped at 0 before.
func TestScrapeLintsAfterFailover(t *testing.T) {
	promtest.Binary(t) // skip (or fail under CI) before building anything
	root := repoRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	primary := redistest.Start(t)
	replica := redistest.Start(t, fmt.Sprintf("replicaof 127.0.0.1 %d", primary.Port))
	waitFor(t, 15*time.Second, "replica in sync", func() bool {
		info, _ := replica.Client().Info(ctx, "replication").Result()
		return strings.Contains(info, "master_link_status:up")
	})
	sentinel := redistest.StartSentinel(t, "mymaster", primary)
	waitFor(t, 20*time.Second, "sentinel to see a healthy replica", func() bool {
		r, err := sentinel.Client().Do(ctx, "sentinel", "replicas", "mymaster").Slice()
		return err == nil && len(r) == 1 && strings.Contains(fmt.Sprint(r), "master-link-status ok")
	})

	cfg := filepath.Join(t.TempDir(), "redis-prober.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`targets:
  - name: queue
    sentinel:
      master_name: mymaster
      addrs: [%q]
      refresh_interval: 200ms
`, sentinel.URL())), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := buildProber(t, root)
	p := startProber(t, bin, append([]string{"--config.file=" + cfg}, changeArgs...)...)
	prom := promtest.Start(t, promtest.Config{Targets: []string{p.addr}})

	up := func(s scrape, node string) (float64, bool) {
		return s.sum("redis_prober_up", map[string]string{"target": "queue", "node": node})
	}
	p.waitForScrape(t, 20*time.Second, "the primary probed", func(s scrape) bool {
		v, _ := up(s, primary.Addr())
		return v == 1
	})
	failovers := `redis_prober_changes_total{job="redis-prober", target="queue", kind="failover"}`
	waitForQuery(ctx, t, prom, 30*time.Second, failovers, func(got []promtest.Sample) bool {
		return len(got) == 1 && got[0].Value == 0
	})
	lintScrape(t, "before a failover", p.scrape(t))

	// Sentinel may say NOGOODSLAVE until it has fresh INFO from the
	// replica; ask again until it takes the order.
	waitFor(t, 20*time.Second, "sentinel to accept the failover", func() bool {
		return sentinel.Client().Do(ctx, "sentinel", "failover", "mymaster").Err() == nil
	})
	after := p.waitForScrape(t, 30*time.Second, "the probe on the new primary, the old one's series gone", func(s scrape) bool {
		v, _ := up(s, replica.Addr())
		_, old := up(s, primary.Addr())
		n, _ := s.sum("redis_prober_changes_total", map[string]string{"target": "queue", "kind": "failover"})
		return v == 1 && !old && n == 1
	})
	lintScrape(t, "after a failover", after)

	waitForQuery(ctx, t, prom, 30*time.Second, "increase("+failovers+"[5m])", func(got []promtest.Sample) bool {
		return len(got) == 1 && got[0].Value > 0
	})
}

// waitFor polls cond until it holds or fails the test after within.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
