package engine

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/redis-prober/redis-prober/collector"
	"github.com/redis-prober/redis-prober/internal/host"
	"github.com/redis-prober/redis-prober/internal/nodeid"
	"github.com/redis-prober/redis-prober/internal/redistest"
	"github.com/redis-prober/redis-prober/prober"
	"github.com/redis-prober/redis-prober/prober/burst"
)

// fakeChecks is a service and CheckSource (as run mode's collector
// service is) that records who asked.
type fakeChecks struct {
	mu    sync.Mutex
	asked []nodeid.ID
}

func (f *fakeChecks) Name() string          { return "fake-checks" }
func (f *fakeChecks) Attach(Node) NodeHooks { return NodeHooks{} }
func (f *fakeChecks) FailingChecks(id nodeid.ID) ([]collector.FailedCheck, bool) {
	f.mu.Lock()
	f.asked = append(f.asked, id)
	f.mu.Unlock()
	return []collector.FailedCheck{{ID: "latency_monitor", Severity: collector.SeverityInfo, Value: "latency-monitor-threshold 0 (off)"}}, true
}

// fakeChanges stands for the change service: a node's last change is
// what set gave it, none before.
type fakeChanges struct {
	mu    sync.Mutex
	last  *LastChange
	asked nodeid.ID
}

func (f *fakeChanges) set(lc LastChange) {
	f.mu.Lock()
	f.last = &lc
	f.mu.Unlock()
}

func (f *fakeChanges) lastAsked() nodeid.ID {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.asked
}

func (f *fakeChanges) LastChange(id nodeid.ID) (LastChange, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = id
	if f.last == nil {
		return LastChange{}, false
	}
	return *f.last, true
}

// The status service reads each node's last burst, last change and
// failing checks from the services beside it, on a real engine and Redis.
func TestStatusReadsBurstsChangesAndChecks(t *testing.T) {
	srv := redistest.Start(t)
	reg := prometheus.NewRegistry()
	m := prober.NewMetrics(reg)
	bursts := NewBursts(testBurstsConfig(400*time.Millisecond, 100*time.Millisecond), quietLogger(), m, burst.NewMetrics(reg))
	changes := &fakeChanges{}
	checks := &fakeChecks{}
	status := NewStatus(StatusSources{Bursts: bursts, Changes: changes, Checks: checks})
	e := NewWithMetrics(m, quietLogger(), bursts, status)
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
	changes.set(LastChange{Kinds: []string{"config"}, At: time.Now(), MinSamples: 1})
	if lc := one().LastChange; lc == nil || !slices.Equal(lc.Kinds, []string{"config"}) || lc.At.IsZero() {
		t.Errorf("last change = %+v", lc)
	}
	if asked := changes.lastAsked(); asked != tgt.ID() {
		t.Errorf("changes asked for %v", asked)
	}
	ns := one()
	if !ns.ChecksKnown || len(ns.FailingChecks) != 1 || ns.FailingChecks[0].ID != "latency_monitor" {
		t.Errorf("failing checks = %+v (known %v)", ns.FailingChecks, ns.ChecksKnown)
	}
	checks.mu.Lock()
	asked := checks.asked[len(checks.asked)-1]
	checks.mu.Unlock()
	if asked != (nodeid.ID{Target: tgt.Name}) {
		t.Errorf("checks asked for %v", asked)
	}

	stop()
	if _, ok := bursts.LastBurst(tgt.ID()); ok {
		t.Error("the last burst of a stopped node is kept")
	}
}

// The host checks of run mode's collector service are one set for the
// process: two targets' refreshes evaluate them once, they are exported
// without target or node, each target keeps only its Redis checks, and the
// status service shows the failing ones once, for the host.
func TestStatusShowsHostChecksOnce(t *testing.T) {
	srv := redistest.Start(t)
	dir := t.TempDir()
	thp := filepath.Join(dir, "sys/kernel/mm/transparent_hugepage/enabled")
	if err := os.MkdirAll(filepath.Dir(thp), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(thp, []byte("[always] madvise never\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	m := prober.NewMetrics(reg)
	m.Intrinsic().Observe(0.003) // a 3 ms scheduling gap: intrinsic_latency fails
	collectors := NewCollectors(CollectorsConfig{
		Log: quietLogger(), Registerer: reg, Interval: time.Minute, Enabled: collector.AllEnabled(),
		Paths:     host.Paths{ProcFS: filepath.Join(dir, "proc"), SysFS: filepath.Join(dir, "sys")},
		Intrinsic: m.Intrinsic().(prometheus.Metric),
	})
	status := NewStatus(StatusSources{Checks: collectors, Host: collectors})
	if h := status.Host(); h.ChecksKnown {
		t.Errorf("host checks known before any refresh: %+v", h)
	}
	for _, name := range []string{"a", "b"} {
		h := collectors.Attach(Node{Target: Target{Name: name}, Control: srv.Client()})
		defer h.Done()
		h.Tasks[0].Run(t.Context())
	}
	h := status.Host()
	var ids []string
	for _, c := range h.FailingChecks {
		ids = append(ids, c.ID+"/"+string(c.Severity))
	}
	if want := []string{"thp_enabled/critical", "intrinsic_latency/warning"}; !h.ChecksKnown || !slices.Equal(ids, want) {
		t.Errorf("host: failing %v (known %v), want %v", ids, h.ChecksKnown, want)
	}
	for _, name := range []string{"a", "b"} {
		failing, ok := collectors.FailingChecks(nodeid.ID{Target: name})
		if !ok {
			t.Errorf("target %s: checks not evaluated", name)
		}
		for _, c := range failing {
			if c.ID == "thp_enabled" || c.ID == "intrinsic_latency" {
				t.Errorf("target %s lists the host check %s", name, c.ID)
			}
		}
	}
	out, err := testutil.CollectAndFormat(collectors.targets, expfmt.TypeTextPlain, "redis_prober_check_passed", "redis_prober_check_unknown")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), `check="thp_enabled"`) || !strings.Contains(string(out), `check="maxmemory"`) {
		t.Errorf("per-target checks: want the Redis ones only:\n%s", out)
	}
	const want = `
# HELP redis_prober_host_check_passed 1 when a tuning check of the prober's host passes at the given severity, 0 when it fails; absent while its input cannot be read (see redis_prober_host_check_unknown). The checks of each Redis are redis_prober_check_passed.
# TYPE redis_prober_host_check_passed gauge
redis_prober_host_check_passed{check="intrinsic_latency",severity="warning"} 0
redis_prober_host_check_passed{check="thp_enabled",severity="critical"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "redis_prober_host_check_passed"); err != nil {
		t.Error(err)
	}
}
