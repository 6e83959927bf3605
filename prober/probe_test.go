package prober

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/redis-prober/redis-prober/internal/redistest"
)

// probeHarness runs one Probe against a real redis-server and reads back
// what it recorded.
type probeHarness struct {
	t      *testing.T
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan struct{}
}

func startProbe(t *testing.T, addr string, cfg ProbeConfig) *probeHarness {
	t.Helper()
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	names := make([]string, len(cfg.Commands))
	for i, c := range cfg.Commands {
		names[i] = c.Name
	}
	rec := m.ForTarget("t", names, 5*time.Millisecond)
	ep := Endpoint{Network: "tcp", Addr: addr}
	ctx, cancel := context.WithCancel(context.Background())
	h := &probeHarness{t: t, reg: reg, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(h.done)
		NewProbe(cfg, ep, rec, NewFaultLog(slog.New(slog.NewTextHandler(io.Discard, nil)))).Run(ctx)
	}()
	t.Cleanup(h.stop)
	return h
}

func (h *probeHarness) stop() {
	h.cancel()
	select {
	case <-h.done:
	case <-time.After(5 * time.Second):
		h.t.Fatal("probe did not stop within 5s")
	}
}

func (h *probeHarness) families() map[string]*dto.MetricFamily {
	h.t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// requests sums redis_prober_requests_total for a result ("" for all).
func (h *probeHarness) requests(result string) float64 {
	var sum float64
	for _, m := range h.families()["redis_prober_requests_total"].GetMetric() {
		if result == "" || label(m, "result") == result {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// latency returns the total sample count and how many samples took longer
// than le seconds (le must be a classic bucket bound).
func (h *probeHarness) latency(le float64) (total, slower uint64) {
	for _, m := range h.families()["redis_prober_latency_seconds"].GetMetric() {
		hist := m.GetHistogram()
		total += hist.GetSampleCount()
		var below uint64
		for _, b := range hist.GetBucket() {
			if b.GetUpperBound() == le {
				below = b.GetCumulativeCount()
			}
		}
		slower += hist.GetSampleCount() - below
	}
	return total, slower
}

func (h *probeHarness) up() float64 {
	ms := h.families()["redis_prober_up"].GetMetric()
	if len(ms) == 0 {
		return -1
	}
	return ms[0].GetGauge().GetValue()
}

func testProbeConfig(t *testing.T, rate float64, timeout time.Duration, cmds string) ProbeConfig {
	t.Helper()
	c, err := ParseCommands(cmds)
	if err != nil {
		t.Fatal(err)
	}
	return ProbeConfig{Rate: rate, Timeout: timeout, Commands: c, Connections: 2, DataSize: 32,
		KeyTTL: time.Minute, Namespace: Namespace{Prefix: "redis-prober:", Tag: "test"}, Poller: NewPoller()}
}

// bothPaths runs f with the probe's open connections served by a Poller
// (as the engine runs them on Linux) and on goroutines of their own (TLS,
// unix sockets, other systems).
func bothPaths(t *testing.T, f func(t *testing.T, poller *Poller)) {
	t.Run("poller", func(t *testing.T) { f(t, NewPoller()) })
	t.Run("goroutine", func(t *testing.T) { f(t, nil) })
}

// eventually polls cond every 20ms for at most d.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("timed out after %v waiting for %s", d, what)
}

func TestProbeCountsMatchHistogram(t *testing.T) {
	srv := redistest.Start(t)
	h := startProbe(t, srv.Addr(), testProbeConfig(t, 200, time.Second,
		"ping,get,set,incr,hset,hgetall,lpush,lrange,zadd,zrevrange,eval,mget"))
	eventually(t, 10*time.Second, "200 requests", func() bool { return h.requests("") >= 200 })
	h.stop()

	total, _ := h.latency(10)
	if float64(total) != h.requests("") {
		t.Errorf("histogram holds %d samples, requests_total says %v", total, h.requests(""))
	}
	if errs := h.requests("error") + h.requests("timeout"); errs != 0 {
		t.Errorf("%v failed requests against a healthy server", errs)
	}
	// Every command of the rotation was sent.
	for _, m := range h.families()["redis_prober_requests_total"].GetMetric() {
		if label(m, "result") == "ok" && m.GetCounter().GetValue() == 0 {
			t.Errorf("command %s never succeeded", label(m, "command"))
		}
	}
	if h.up() != 1 {
		t.Errorf("up = %v, want 1", h.up())
	}
}

// A stalled server must show in the tail at its true weight: every probe due
// during the stall is slow, not just the one that was in flight.
func TestProbeStallIsNotCoordinatedOmission(t *testing.T) {
	bothPaths(t, func(t *testing.T, poller *Poller) {
		srv := redistest.Start(t)
		const rate = 100.0
		cfg := testProbeConfig(t, rate, 2*time.Second, "ping")
		cfg.Poller = poller
		h := startProbe(t, srv.Addr(), cfg)
		eventually(t, 5*time.Second, "warm-up", func() bool { return h.requests("ok") >= 50 })

		const stall = 350 * time.Millisecond
		_, slowBefore := h.latency(0.1)
		paused := time.Now()
		srv.Pause()
		time.Sleep(stall)
		srv.Resume()
		// A busy host may oversleep: the bound on slow probes follows the
		// stall as it was, not as asked.
		stalled := time.Since(paused)
		time.Sleep(300 * time.Millisecond)
		h.stop()

		_, slowAfter := h.latency(0.1)
		slow := slowAfter - slowBefore
		// Probes due in the first 250ms of the stall waited more than 100ms.
		// A closed-loop prober would record one slow sample here.
		want := uint64(rate * (stall - 100*time.Millisecond).Seconds() * 0.6)
		if slow < want {
			t.Errorf("%d probes slower than 100ms during a %v stall at %v/s; want at least %d", slow, stall, rate, want)
		}
		if max := uint64(rate*stalled.Seconds()) + 10; slow > max {
			t.Errorf("%d slow probes, more than the %d due during the %v stall", slow, max, stalled)
		}
		if h.requests("timeout") != 0 {
			t.Errorf("%v timeouts with a 2s timeout and a %v stall", h.requests("timeout"), stall)
		}
	})
}

func TestProbeTimeoutsAreCountedNotDropped(t *testing.T) {
	bothPaths(t, func(t *testing.T, poller *Poller) {
		srv := redistest.Start(t)
		cfg := testProbeConfig(t, 50, 150*time.Millisecond, "ping")
		cfg.Poller = poller
		h := startProbe(t, srv.Addr(), cfg)
		eventually(t, 5*time.Second, "warm-up", func() bool { return h.requests("ok") >= 10 })
		srv.Pause()
		time.Sleep(600 * time.Millisecond)
		srv.Resume()
		eventually(t, 5*time.Second, "recovery", func() bool { return h.up() == 1 })
		h.stop()

		timeouts := h.requests("timeout")
		// ~30 probes were due during the pause; each must be counted, as a
		// timeout (none answered within 150ms of its due time).
		if timeouts < 15 {
			t.Errorf("%v timeouts recorded for a 600ms pause at 50/s with a 150ms timeout; want about 25", timeouts)
		}
		total, slow := h.latency(0.1)
		if float64(total) != h.requests("") {
			t.Errorf("histogram %d samples != requests %v: a timeout was dropped", total, h.requests(""))
		}
		if float64(slow) < timeouts {
			t.Errorf("%d samples above 100ms but %v timeouts: timeouts must be recorded at their elapsed time", slow, timeouts)
		}
	})
}

func TestProbeUpFollowsRedis(t *testing.T) {
	srv := redistest.Start(t)
	h := startProbe(t, srv.Addr(), testProbeConfig(t, 50, 200*time.Millisecond, "ping,set"))
	eventually(t, 5*time.Second, "up=1", func() bool { return h.up() == 1 })
	srv.Kill()
	eventually(t, 5*time.Second, "up=0 after kill", func() bool { return h.up() == 0 })
	errorsDown := h.requests("error") + h.requests("timeout")
	if errorsDown == 0 {
		t.Error("no failed request counted while Redis was down")
	}
	srv.Restart()
	eventually(t, 5*time.Second, "up=1 after restart", func() bool { return h.up() == 1 })
}

// An error reply (here OOM on a write) proves Redis answers: up stays 1 and
// the write is counted as an error while reads keep working.
func TestProbeErrorReplyKeepsUp(t *testing.T) {
	srv := redistest.Start(t, "maxmemory 1", "maxmemory-policy noeviction")
	h := startProbe(t, srv.Addr(), testProbeConfig(t, 100, time.Second, "get,set"))
	eventually(t, 5*time.Second, "errors", func() bool { return h.requests("error") >= 10 })
	h.stop()
	var setErr, getOK float64
	for _, m := range h.families()["redis_prober_requests_total"].GetMetric() {
		switch {
		case label(m, "command") == "set" && label(m, "result") == "error":
			setErr = m.GetCounter().GetValue()
		case label(m, "command") == "get" && label(m, "result") == "ok":
			getOK = m.GetCounter().GetValue()
		}
	}
	if setErr == 0 || getOK == 0 {
		t.Errorf("set errors %v, get ok %v: want both above 0", setErr, getOK)
	}
	if h.up() != 1 {
		t.Errorf("up = %v with Redis answering OOM errors, want 1", h.up())
	}
}

// Stopping interrupts a probe blocked on a silent server at once instead of
// waiting for its timeout.
func TestProbeStopsPromptlyOnSilentServer(t *testing.T) {
	bothPaths(t, func(t *testing.T, poller *Poller) {
		srv := redistest.Start(t)
		cfg := testProbeConfig(t, 20, 30*time.Second, "ping")
		cfg.Poller = poller
		h := startProbe(t, srv.Addr(), cfg)
		eventually(t, 5*time.Second, "warm-up", func() bool { return h.requests("ok") >= 3 })
		srv.Pause()
		defer srv.Resume()
		time.Sleep(200 * time.Millisecond)
		start := time.Now()
		h.stop()
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("stop took %v with a 30s probe timeout", d)
		}
	})
}
