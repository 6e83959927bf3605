package engine

import (
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/collector"
	"github.com/redis-prober/redis-prober/internal/host"
	"github.com/redis-prober/redis-prober/prober"
)

// TestCollectorsShareOneSet: every node's Redis-side series come from one
// registered collector; a node joins on its first refresh, a second node
// with the same target and node labels is refused, and done takes the
// node's series away (its fork histogram and dropped counters too) and
// leaves the others'.
func TestCollectorsShareOneSet(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	// The host collectors share the health families.
	dir := t.TempDir()
	reg.MustRegister(collector.NewHost(host.Paths{ProcFS: dir, SysFS: dir}, collector.AllEnabled(), nil))
	s := NewCollectors(CollectorsConfig{
		Log: slog.New(slog.DiscardHandler), Registerer: reg, Interval: time.Second,
		Enabled: collector.Enabled{"info": true, "latency": true},
	})
	// Nothing listens there: the refresh fails, and its health says so.
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	defer client.Close()
	count := func(name string) int {
		t.Helper()
		n, err := testutil.GatherAndCount(reg, name)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	hostSeries := count("redis_prober_collector_success")
	var dones []func()
	for _, node := range []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.1:6379"} {
		h := s.Attach(Node{Target: Target{Name: "c", Node: node}, Control: client})
		tasks := h.Tasks
		dones = append(dones, h.Done)
		if count("redis_prober_collector_success")-hostSeries > 2*(len(dones)-1) {
			t.Fatal("a node's series before its first refresh")
		}
		tasks[0].Run(t.Context())
	}
	if got := count("redis_prober_collector_success") - hostSeries; got != 4 {
		t.Errorf("%d collector_success series for 2 nodes of 2 collectors, want 4 (the duplicate node is refused)", got)
	}
	if got := count("redis_prober_fork_seconds"); got != 2 {
		t.Errorf("%d fork histograms, want 2", got)
	}
	if got := count("redis_prober_collector_dropped_series_total"); got != 4 {
		t.Errorf("%d dropped counters, want 4", got)
	}
	dones[2]() // the refused duplicate: nothing of the first node goes
	if got := count("redis_prober_fork_seconds"); got != 2 {
		t.Errorf("after the duplicate's done: %d fork histograms, want 2", got)
	}
	dones[0]()
	for name, want := range map[string]int{
		"redis_prober_collector_success": hostSeries + 2, "redis_prober_fork_seconds": 1, "redis_prober_collector_dropped_series_total": 2,
	} {
		if got := count(name); got != want {
			t.Errorf("after one node's done: %d series of %s, want %d", got, name, want)
		}
	}
	dones[1]()
	if got := count("redis_prober_collector_success") - hostSeries + count("redis_prober_fork_seconds") + count("redis_prober_collector_dropped_series_total"); got != 0 {
		t.Errorf("%d series left after every node's done", got)
	}
}

func TestIntrinsicReader(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := prober.NewMetrics(reg)
	h, ok := m.Intrinsic().(prometheus.Metric)
	if !ok {
		t.Fatal("the intrinsic observer is not a readable metric")
	}
	r := newIntrinsicReader(h)
	if _, ok := r.worst(); ok {
		t.Error("a value before any sample")
	}
	for _, tc := range []struct {
		obs  []float64
		want time.Duration
		ok   bool
	}{
		{[]float64{.0004, .0001}, 500 * time.Microsecond, true},
		{[]float64{.0009, .0011}, 2500 * time.Microsecond, true},
		{nil, 0, false},
		{[]float64{.001}, time.Millisecond, true},
		{[]float64{5}, 200 * time.Millisecond, true},
	} {
		for _, v := range tc.obs {
			m.Intrinsic().Observe(v)
		}
		got, ok := r.worst()
		if ok != tc.ok || got != tc.want {
			t.Errorf("after %v: worst %v %v, want %v %v", tc.obs, got, ok, tc.want, tc.ok)
		}
	}
}
