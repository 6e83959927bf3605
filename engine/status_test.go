package engine

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/collector"
	"github.com/redis-prober/redis-prober/internal/redistest"
	"github.com/redis-prober/redis-prober/prober"
	"github.com/redis-prober/redis-prober/prober/burst"
)

// fakeChecks is a service and CheckSource (as run mode's collector
// service is) that records who asked.
type fakeChecks struct {
	mu    sync.Mutex
	asked [][2]string
}

func (f *fakeChecks) Name() string                                     { return "fake-checks" }
func (f *fakeChecks) RunTarget(context.Context, Target, *redis.Client) {}
func (f *fakeChecks) FailingChecks(target, node string) ([]collector.FailedCheck, bool) {
	f.mu.Lock()
	f.asked = append(f.asked, [2]string{target, node})
	f.mu.Unlock()
	return []collector.FailedCheck{{ID: "latency_monitor", Severity: collector.SeverityInfo, Value: "latency-monitor-threshold 0 (off)"}}, true
}

// The status service reads each node's last burst, last change and
// failing checks from the services beside it, on a real engine and Redis.
func TestStatusReadsBurstsChangesAndChecks(t *testing.T) {
	srv := redistest.Start(t)
	reg := prometheus.NewRegistry()
	m := prober.NewMetrics(reg)
	bursts := NewBursts(testBurstsConfig(400*time.Millisecond, 100*time.Millisecond), quietLogger(), m, burst.NewMetrics(reg))
	changes := NewChanges(ChangesConfig{Interval: 20 * time.Millisecond, Window: time.Minute, MinSamples: 1,
		Paths: collector.Paths{ProcFS: t.TempDir(), SysFS: t.TempDir()}}, quietLogger(), m)
	checks := &fakeChecks{}
	// A service that feeds nothing is ignored.
	status := NewStatus(bursts, changes, checks, &countingService{})
	e := NewWithMetrics(m, quietLogger(), bursts, changes, status)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	tgt := testTarget(t, srv)
	go func() {
		defer close(done)
		e.Run(ctx, Config{Targets: []Target{tgt}, CleanupTimeout: 3 * time.Second})
	}()
	stop := sync.OnceFunc(func() { cancel(); <-done })
	defer stop()

	one := func() NodeStatus {
		ns := status.Snapshot("", time.Now())
		if len(ns) != 1 {
			return NodeStatus{}
		}
		return ns[0]
	}
	waitFor(t, 15*time.Second, "a completed burst on the status", func() bool {
		lb := one().LastBurst
		return lb != nil && lb.Outcome == burst.OutcomeCompleted
	})
	lb := one().LastBurst
	if lb.Plan != "default" || lb.OpsPerSec <= 0 || lb.P99 <= 0 || lb.Requests <= 0 || lb.End.IsZero() {
		t.Errorf("last burst = %+v", lb)
	}
	if one().LastChange != nil {
		t.Errorf("a change before any: %+v", one().LastChange)
	}
	waitFor(t, 15*time.Second, "probe samples", func() bool { return one().All.Last1m.Count > 20 })
	if err := srv.Client().ConfigSet(t.Context(), "appendfsync", "always").Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "the config change on the status", func() bool { return one().LastChange != nil })
	lc := one().LastChange
	if !slices.Equal(lc.Kinds, []string{KindConfig}) || lc.At.IsZero() || lc.MinSamples != 1 {
		t.Errorf("last change = %+v", lc)
	}
	if len(lc.Before) != len(tgt.Probe.Commands) || lc.Before[0].Count == 0 || lc.Before[0].P99 <= 0 {
		t.Errorf("before the change: %+v", lc.Before)
	}
	waitFor(t, 15*time.Second, "samples since the change", func() bool {
		a := one().LastChange.After
		return len(a) > 0 && a[0].Count > 0 && a[0].P99 > 0
	})
	ns := one()
	if !ns.ChecksKnown || len(ns.FailingChecks) != 1 || ns.FailingChecks[0].ID != "latency_monitor" {
		t.Errorf("failing checks = %+v (known %v)", ns.FailingChecks, ns.ChecksKnown)
	}
	checks.mu.Lock()
	asked := checks.asked[len(checks.asked)-1]
	checks.mu.Unlock()
	if asked != [2]string{tgt.Name, ""} {
		t.Errorf("checks asked for %v", asked)
	}

	stop()
	if _, ok := bursts.LastBurst(tgt.Name, ""); ok {
		t.Error("the last burst of a stopped node is kept")
	}
	if _, ok := changes.LastChange(tgt.Name, ""); ok {
		t.Error("the last change of a stopped node is kept")
	}
}
