package engine

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/redis-prober/redis-prober/internal/logtest"
	"github.com/redis-prober/redis-prober/internal/redistest"
	"github.com/redis-prober/redis-prober/prober"
	"github.com/redis-prober/redis-prober/prober/burst"
)

func testBurstsConfig(interval, testTime time.Duration) BurstsConfig {
	return BurstsConfig{
		Interval: interval,
		Plan: burst.Plan{Name: "default", Clients: 2, Pipeline: 2,
			Mix:      []burst.MixEntry{{Op: "set", Weight: 1}, {Op: "get", Weight: 4}},
			Keys:     burst.KeySpec{SetPattern: 'R', GetPattern: 'R', Max: 999},
			DataSize: 16, Rate: 1000, TestTime: testTime, MaxBytes: 1 << 20, Timeout: time.Second,
			KeyTTL: time.Minute},
		Guards: burst.Guards{MemoryHeadroom: 0.2, Window: time.Second, ErrorBudget: 0.01,
			CheckInterval: 200 * time.Millisecond},
		MaxConcurrent:  1,
		CleanupTimeout: 3 * time.Second,
	}
}

// runEngineWithBursts runs an engine with the burst service on srv until
// the returned stop is called.
func runEngineWithBursts(t *testing.T, srv *redistest.Server, cfg BurstsConfig) (*prometheus.Registry, func()) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m := prober.NewMetrics(reg)
	svc := NewBursts(cfg, quietLogger(), m, burst.NewMetrics(reg))
	e := NewWithMetrics(m, quietLogger(), svc)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Run(ctx, Config{Targets: []Target{testTarget(t, srv)}, CleanupTimeout: 3 * time.Second})
	}()
	return reg, func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("engine did not stop within 10s")
		}
	}
}

func burstRuns(t *testing.T, reg prometheus.Gatherer, outcome string) float64 {
	t.Helper()
	for _, m := range gatherCounter(t, reg, "redis_prober_burst_runs_total") {
		for _, l := range m.GetLabel() {
			if l.GetName() == "outcome" && l.GetValue() == outcome {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func TestBurstsRunPeriodicallyBesideTheProbe(t *testing.T) {
	srv := redistest.Start(t, "enable-debug-command yes")
	user := srv.Client()
	user.Set(t.Context(), "user:1", "precious", 0)
	digest := user.Do(t.Context(), "debug", "digest").Val()

	reg, stop := runEngineWithBursts(t, srv, testBurstsConfig(400*time.Millisecond, 200*time.Millisecond))
	waitFor(t, 10*time.Second, "two completed bursts", func() bool { return burstRuns(t, reg, "completed") >= 2 })
	// Burst latency shares the probe's histogram, as phase="burst".
	if n := testutil.CollectAndCount(reg, "redis_prober_latency_seconds"); n < 2 {
		t.Fatalf("%d latency series", n)
	}
	var burstSeries int
	for _, m := range gatherCounter(t, reg, "redis_prober_requests_total") {
		for _, l := range m.GetLabel() {
			if l.GetName() == "phase" && l.GetValue() == "burst" && m.GetCounter().GetValue() > 0 {
				burstSeries++
			}
		}
	}
	if burstSeries < 2 {
		t.Fatalf("%d burst request series with counts, want set and get", burstSeries)
	}
	if n := testutil.CollectAndCount(reg, "redis_prober_burst_last_latency_seconds"); n != 1 {
		t.Fatalf("%d last-latency series, want one summary (its three quantiles)", n)
	}
	stop()
	if keys := srv.Keys(t.Context(), "redis-prober:*"); len(keys) != 0 {
		t.Fatalf("keys left: %v", keys)
	}
	if d := srv.Client().Do(t.Context(), "debug", "digest").Val(); d != digest {
		t.Fatalf("user data changed: digest %s, was %s", d, digest)
	}
}

// SIGTERM cancels the run context: a burst in progress is aborted and its
// keys deleted before the engine returns.
func TestBurstsStopMidBurstLeavesNoTrace(t *testing.T) {
	srv := redistest.Start(t, "enable-debug-command yes")
	user := srv.Client()
	user.HSet(t.Context(), "user:h", "f", "v")
	digest := user.Do(t.Context(), "debug", "digest").Val()

	_, stop := runEngineWithBursts(t, srv, testBurstsConfig(300*time.Millisecond, 30*time.Second))
	waitFor(t, 10*time.Second, "burst keys", func() bool {
		return len(srv.Keys(t.Context(), "redis-prober:*burst:*")) > 10
	})
	start := time.Now()
	stop()
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("stopping mid-burst took %v", took)
	}
	if keys := srv.Keys(t.Context(), "redis-prober:*"); len(keys) != 0 {
		t.Fatalf("%d keys left, e.g. %s", len(keys), keys[0])
	}
	if d := srv.Client().Do(t.Context(), "debug", "digest").Val(); d != digest {
		t.Fatalf("user data changed")
	}
}

func TestStaggerOffsetSpreadsTargets(t *testing.T) {
	seen := map[time.Duration]bool{}
	for _, name := range []string{"a:6379", "b:6379", "c:6379", "d:6379"} {
		off := staggerOffset(name, time.Minute)
		if off < 0 || off >= time.Minute {
			t.Fatalf("offset %v outside the interval", off)
		}
		if off != staggerOffset(name, time.Minute) {
			t.Fatal("offset not stable")
		}
		seen[off] = true
	}
	if len(seen) != 4 {
		t.Fatalf("offsets collide: %v", seen)
	}
}

// A burst cut because its target stops says why: the target was removed
// (by a reload or its file_sd/http_sd source), changed by a reload (it
// restarts with the new settings), or the prober is stopping. Its keys
// are deleted all the same.
func TestBurstCancelSaysWhy(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		end        func(e *Engine, ctx context.Context, tg Target, stop func())
	}{
		{"removed", "the target was removed", func(e *Engine, ctx context.Context, _ Target, _ func()) {
			e.Apply(ctx, Config{CleanupTimeout: 3 * time.Second})
		}},
		{"changed", "the target was changed by a reload", func(e *Engine, ctx context.Context, tg Target, _ func()) {
			tg.ConnectInterval *= 2
			e.Apply(ctx, Config{Targets: []Target{tg}, CleanupTimeout: 3 * time.Second})
		}},
		{"stopping", "the prober is stopping", func(_ *Engine, _ context.Context, _ Target, stop func()) { stop() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			logs := &logtest.Buffer{}
			reg := prometheus.NewRegistry()
			m := prober.NewMetrics(reg)
			svc := NewBursts(testBurstsConfig(300*time.Millisecond, 30*time.Second),
				slog.New(slog.NewTextHandler(logs, nil)), m, burst.NewMetrics(reg))
			e := NewWithMetrics(m, quietLogger(), svc)
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan struct{})
			tg := testTarget(t, srv)
			go func() {
				defer close(done)
				e.Run(ctx, Config{Targets: []Target{tg}, CleanupTimeout: 3 * time.Second})
			}()
			stop := func() {
				cancel()
				select {
				case <-done:
				case <-time.After(10 * time.Second):
					t.Fatal("engine did not stop within 10s")
				}
			}
			defer stop()
			waitFor(t, 10*time.Second, "burst keys", func() bool {
				return len(srv.Keys(t.Context(), "redis-prober:*burst:*")) > 10
			})
			tc.end(e, ctx, tg, stop) // returns once the old target's loops are over
			line := ""
			for _, l := range strings.Split(logs.String(), "\n") {
				if strings.Contains(l, `msg="burst aborted"`) && strings.Contains(l, "reason=cancelled") {
					line = l
					break
				}
			}
			if want := `reason=cancelled detail="` + tc.want + `"`; !strings.Contains(line, want) {
				t.Errorf("the burst's line %q does not say %s; log:\n%s", line, want, logs.String())
			}
			stop()
			if keys := srv.Keys(t.Context(), "redis-prober:*"); len(keys) != 0 {
				t.Errorf("%d keys left, e.g. %s", len(keys), keys[0])
			}
		})
	}
}
