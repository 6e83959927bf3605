package engine

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redis-prober/redis-prober/internal/redistest"
	"github.com/redis-prober/redis-prober/prober"
)

// probeCounts sums the probe requests of one target by result.
func probeCounts(t *testing.T, g prometheus.Gatherer, target string) (all, timeouts float64) {
	t.Helper()
	for _, m := range gatherCounter(t, g, "redis_prober_requests_total") {
		if labelValue(m, "target") != target || labelValue(m, "phase") != string(prober.PhaseProbe) {
			continue
		}
		v := m.GetCounter().GetValue()
		all += v
		if labelValue(m, "result") == prober.ResultTimeout.String() {
			timeouts += v
		}
	}
	return all, timeouts
}

// A target that stops answering (SIGSTOP: its connections stay open, no
// reply ever comes, every probe waits its whole timeout) must not slow the
// schedule of another target: each target has its own probe connections,
// threads and timetable, so the healthy one keeps its rate and sees no
// timeouts. The check is on counts against the schedule, with a loose band;
// it is behaviour, not a timing figure.
func TestSlowTargetDoesNotDelayAnother(t *testing.T) {
	slowSrv, fastSrv := redistest.Start(t), redistest.Start(t)
	slow, fast := testTarget(t, slowSrv), testTarget(t, fastSrv)
	// The stalled target holds many connections, each blocked for its
	// whole timeout: the most it could take from a shared scheduler.
	slow.Probe.Connections = 8
	slow.Probe.Timeout = 2 * time.Second
	const rate = 100.0
	fast.Probe.Rate = rate

	reg := prometheus.NewRegistry()
	e := New(reg, quietLogger())
	stop := runEngine(t, e, Config{Targets: []Target{slow, fast}, CleanupTimeout: time.Second})
	waitFor(t, 10*time.Second, "both targets probed", func() bool {
		s, _ := probeCounts(t, reg, slow.Name)
		f, _ := probeCounts(t, reg, fast.Name)
		return s > 20 && f > 20
	})

	slowSrv.Pause()
	t.Cleanup(slowSrv.Resume) // before the engine stops, so clean-up is quick
	// Let the stall take hold: every slow connection is blocked now.
	time.Sleep(slow.Probe.Timeout)

	_, slowTimeouts0 := probeCounts(t, reg, slow.Name)
	fast0, fastTimeouts0 := probeCounts(t, reg, fast.Name)
	start := time.Now()
	time.Sleep(4 * time.Second)
	fast1, fastTimeouts1 := probeCounts(t, reg, fast.Name)
	window := time.Since(start)
	_, slowTimeouts1 := probeCounts(t, reg, slow.Name)

	// The stall must have bitten, or the test proves nothing.
	if slowTimeouts1 <= slowTimeouts0 {
		t.Fatalf("the paused target recorded no timeouts in the window (%v -> %v)", slowTimeouts0, slowTimeouts1)
	}
	want := rate * window.Seconds()
	got := fast1 - fast0
	if ratio := got / want; ratio < 0.7 || ratio > 1.3 {
		t.Errorf("healthy target sent %.0f probes in %v beside a stalled one, want about %.0f (ratio %.2f)",
			got, window.Round(time.Millisecond), want, ratio)
	}
	if n := fastTimeouts1 - fastTimeouts0; n != 0 {
		t.Errorf("healthy target recorded %.0f timeouts while the other target was stalled", n)
	}
	if up := upByNode(t, reg, fast.Name)[""]; up != 1 {
		t.Errorf("healthy target up = %v, want 1", up)
	}
	if up := upByNode(t, reg, slow.Name)[""]; up != 0 {
		t.Errorf("stalled target up = %v, want 0", up)
	}

	slowSrv.Resume()
	stop()
}
