package engine

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/redis-prober/redis-prober/internal/redistest"
	"github.com/redis-prober/redis-prober/prober"
)

func TestMain(m *testing.M) {
	// go-redis probes a failed dial again from a goroutine of its own that
	// sleeps a second and then ends by itself, even after Close.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}

func testTarget(t *testing.T, srv *redistest.Server) Target {
	t.Helper()
	name, ep, err := ParseAddr(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := prober.ParseCommands("ping,get,set,incr,hset,lpush,zadd")
	if err != nil {
		t.Fatal(err)
	}
	return Target{
		Name:     name,
		Endpoint: ep,
		Probe: prober.ProbeConfig{Rate: 100, Timeout: time.Second, Commands: cmds, Connections: 2,
			DataSize: 16, KeyTTL: time.Minute, Namespace: prober.Namespace{Prefix: "redis-prober:", Tag: "engine-test"}},
		ConnectInterval: 100 * time.Millisecond,
		SeedInterval:    200 * time.Millisecond,
		Objective:       5 * time.Millisecond,
	}
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

type countingService struct{ started, stopped atomic.Int32 }

func (s *countingService) Name() string { return "counting" }
func (s *countingService) Attach(Node) NodeHooks {
	return NodeHooks{Run: func(ctx context.Context) {
		s.started.Add(1)
		defer s.stopped.Add(1)
		<-ctx.Done()
	}}
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A graceful stop deletes every probe key and leaves user data alone.
func TestEngineStopLeavesNoProbeKeys(t *testing.T) {
	srv := redistest.Start(t)
	user := srv.Client()
	ctx := context.Background()
	if err := user.Set(ctx, "user:1", "precious", 0).Err(); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	svc := &countingService{}
	e := New(reg, quietLogger(), svc)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Run(runCtx, Config{Targets: []Target{testTarget(t, srv)}, CleanupTimeout: 3 * time.Second})
	}()

	waitFor(t, 5*time.Second, "probe keys to exist", func() bool {
		return len(srv.Keys(ctx, "redis-prober:*")) >= 5
	})
	if !e.Ready() {
		t.Error("engine not ready while running")
	}
	waitFor(t, 5*time.Second, "connect probes", func() bool {
		return testutil.CollectAndCount(reg, "redis_prober_connect_latency_seconds") == 1
	})
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("engine did not stop within 5s")
	}
	if keys := srv.Keys(ctx, "redis-prober:*"); len(keys) != 0 {
		t.Errorf("probe keys left after stop: %v", keys)
	}
	if v, err := user.Get(ctx, "user:1").Result(); err != nil || v != "precious" {
		t.Errorf("user key changed: %q %v", v, err)
	}
	if n := srv.Client().DBSize(ctx).Val(); n != 1 {
		t.Errorf("dbsize = %d after stop, want only the user key", n)
	}
	if svc.started.Load() != 1 || svc.stopped.Load() != 1 {
		t.Errorf("service started %d, stopped %d times; want 1 and 1", svc.started.Load(), svc.stopped.Load())
	}
}

// Apply keeps unchanged targets running (same series, counters still
// growing), starts added ones and stops removed ones with their series.
func TestEngineApplyAddsAndRemovesTargets(t *testing.T) {
	a, b := redistest.Start(t), redistest.Start(t)
	ta, tb := testTarget(t, a), testTarget(t, b)
	reg := prometheus.NewRegistry()
	e := New(reg, quietLogger())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e.Apply(ctx, Config{Targets: []Target{ta}, CleanupTimeout: time.Second})

	okA := func() float64 {
		var sum float64
		for _, cmd := range []string{"ping", "get", "set"} {
			sum += testutil.ToFloat64(e.Metrics().RequestsCounter(ta.Name, "", cmd, prober.PhaseProbe, prober.ResultOK))
		}
		return sum
	}
	waitFor(t, 5*time.Second, "target a probed", func() bool { return okA() > 20 })

	before := okA()
	// A reload that reparses the same target (new Command values, same
	// settings) must not restart it: its counters keep growing from where
	// they were.
	ta2 := testTarget(t, a)
	e.Apply(ctx, Config{Targets: []Target{ta2, tb}, CleanupTimeout: time.Second})
	if after := okA(); after < before {
		t.Fatalf("unchanged target was restarted by Apply: ok count %v -> %v", before, after)
	}
	waitFor(t, 5*time.Second, "target b probed and a still growing", func() bool {
		return okA() > before+20 &&
			testutil.ToFloat64(e.Metrics().RequestsCounter(tb.Name, "", "ping", prober.PhaseProbe, prober.ResultOK)) > 5
	})

	e.Apply(ctx, Config{Targets: []Target{tb}, CleanupTimeout: time.Second})
	if n := countSeries(t, reg, ta.Name); n != 0 {
		t.Errorf("%d series of removed target %s still exported", n, ta.Name)
	}
	if keys := a.Keys(context.Background(), "redis-prober:*"); len(keys) != 0 {
		t.Errorf("removed target kept probe keys: %v", keys)
	}
	e.Apply(ctx, Config{CleanupTimeout: time.Second})
}

func countSeries(t *testing.T, g prometheus.Gatherer, target string) int {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "target" && l.GetValue() == target {
					n++
				}
			}
		}
	}
	return n
}
