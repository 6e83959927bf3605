package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/redis-prober/redis-prober/explain"
	"github.com/redis-prober/redis-prober/internal/host"
	"github.com/redis-prober/redis-prober/internal/redistest"
)

// TestExplainAttributesANodesSlowRequests: the engine taps a node's probe
// into its attribution and reads its sources on the node's housekeeping
// loop: the series of every cause are there at 0 from the start, a DEBUG
// SLEEP from another client is counted as slow_command within seconds,
// the status page's view of the node says so (and, on Redis 8+, names the
// largest keys then: INFO KEYSIZES, a 3 MB string), and the series go with
// the node. make test-servers runs it on every server of the matrix.
func TestExplainAttributesANodesSlowRequests(t *testing.T) {
	v := redistest.BinaryVersion(t)
	keysizes := v.Flavor == "redis" && v.AtLeast(8, 0)
	srv := redistest.Start(t, "enable-debug-command yes")
	if err := srv.Client().Set(t.Context(), "big", strings.Repeat("x", 3_000_000), 0).Err(); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m := explain.NewMetrics()
	reg.MustRegister(m)
	svc := NewExplain(ExplainConfig{Log: quietLogger(), Metrics: m, Paths: host.DefaultPaths(), Threshold: 20 * time.Millisecond})
	status := NewStatus(StatusSources{Explain: svc})
	e := New(prometheus.NewRegistry(), quietLogger(), svc, status)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	tgt := testTarget(t, srv)
	go func() {
		defer close(done)
		e.Run(ctx, Config{Targets: []Target{tgt}, CleanupTimeout: 3 * time.Second})
	}()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	defer stop()

	var n *explain.Node
	waitFor(t, 5*time.Second, "the node's first reads of its sources", func() bool {
		n = svc.Node(tgt.ID())
		return n != nil && n.Settles() > 0
	})
	if got := testutil.CollectAndCount(reg, "redis_prober_slow_requests_total"); got != int(explain.NumCauses) {
		t.Errorf("%d slow-request series, want one a cause", got)
	}
	if got := gauge(t, reg, "redis_prober_slow_threshold_seconds"); got != 0.02 {
		t.Errorf("threshold %v, want the fixed 20 ms", got)
	}
	before := n.Counts()
	if err := srv.Client().Do(ctx, "debug", "sleep", "0.3").Err(); err != nil {
		t.Fatal(err)
	}
	// 0.3 s at 100 requests a second: some 30 requests waited.
	waitFor(t, 15*time.Second, "the sleep's slow requests to be attributed", func() bool {
		return n.Counts()[explain.SlowCommand]-before[explain.SlowCommand] >= 15
	})
	after := n.Counts()
	var all uint64
	for c := range after {
		all += after[c] - before[c]
	}
	if sc := after[explain.SlowCommand] - before[explain.SlowCommand]; float64(sc) < 0.9*float64(all) {
		t.Errorf("%d of %d slow requests are slow_command, under 90 %% (%v → %v)", sc, all, before, after)
	}
	nodes := status.Snapshot(tgt.Name, time.Now())
	if len(nodes) != 1 || nodes[0].Why == nil {
		t.Fatalf("the status of %s has no slow causes: %+v", tgt.Name, nodes)
	}
	why := nodes[0].Why
	if len(why.Last5m) == 0 || why.Last5m[0].Cause != "slow_command" {
		t.Errorf("the status page's causes of the last 5 minutes are %+v, want slow_command first", why.Last5m)
	}
	switch {
	case keysizes && !strings.Contains(why.LargestKeys, "strings of 2M-4M bytes"):
		t.Errorf("%s: largest keys %q on the status page, want a 3 MB string's bin", v, why.LargestKeys)
	case !keysizes && why.LargestKeys != "":
		t.Errorf("%s has no INFO KEYSIZES, yet largest keys %q", v, why.LargestKeys)
	}
	stop()
	if got := testutil.CollectAndCount(reg); got != 0 {
		t.Errorf("%d series left after the node stopped", got)
	}
}

// gauge is the value of the one series of family name in reg.
func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no single series of %s", name)
	return 0
}
