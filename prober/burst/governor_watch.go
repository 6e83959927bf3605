package burst

import (
	"context"
	"errors"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// windowSlots is how many ticks make up the sliding window.
const windowSlots = 4

// monitor is the governor's latency and error watch during a load. Every
// quarter window it folds what the clients recorded into a sliding window,
// adds what is still outstanding (requests in flight and slots overdue
// longer than the abort threshold, so a stalled server shows before its
// replies come back), and aborts when the window's p99 (its median when it
// holds fewer than minP99Samples requests) or the error budget is blown. It also stops the load when ctx is cancelled.
func (l *burstLoad) monitor(ctx context.Context, done <-chan struct{}) {
	g := l.b.Guards
	tick := max(g.Window/windowSlots, 25*time.Millisecond)
	ring := make([]*hdrhistogram.Histogram, windowSlots)
	for i := range ring {
		ring[i] = newWindowHist()
	}
	scratch := newWindowHist()
	t := time.NewTicker(tick)
	defer t.Stop()
	for n := 0; ; n++ {
		select {
		case <-done:
			return
		case <-ctx.Done():
			l.stop(Decision{Outcome: OutcomeAborted, Reason: ReasonCancelled, Detail: cancelDetail(ctx)}, "")
			return
		case <-t.C:
		}
		cur := ring[n%windowSlots]
		cur.Reset()
		var total, failed int64
		for _, s := range l.shards {
			t, f := s.drain(cur)
			total += t
			failed += f
		}
		scratch.Reset()
		for _, h := range ring {
			scratch.Merge(h)
		}
		completed := scratch.TotalCount()
		now := time.Since(l.t0)
		if g.AbortP99 > 0 {
			for _, c := range l.clients {
				if k := c.inflightN.Load(); k > 0 {
					if age := now - time.Duration(c.inflightFrom.Load()); age > g.AbortP99 {
						_ = scratch.RecordValues(min(int64(age), histHighest), k)
					}
				}
			}
			if k, oldest := l.queuedOverdue(now, g.AbortP99); k > 0 {
				_ = scratch.RecordValues(min(int64(g.AbortP99+oldest)/2, histHighest), k)
			}
		}
		p50, p99 := time.Duration(scratch.ValueAtPercentile(50)), time.Duration(scratch.ValueAtPercentile(99))
		if d := g.windowVerdict(p50, p99, scratch.TotalCount(), total, failed); !d.OK() {
			l.stop(d, "")
			return
		}
		if l.b.Progress != nil {
			span := tick * time.Duration(min(n+1, windowSlots))
			l.b.Progress(Progress{Elapsed: now, Planned: l.end, Ops: total, Rate: l.plan.Rate,
				OpsPerSec: float64(completed) / span.Seconds(), P99: p99})
		}
	}
}

// watchServer reads INFO during the load and aborts on what the governor
// forbids mid-burst (a role change, loading, a fork, memory). An INFO that
// fails (a paused server) is left to the latency watch.
func (l *burstLoad) watchServer(ctx context.Context, done <-chan struct{}) {
	g := l.b.Guards
	t := time.NewTicker(g.CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ictx, cancel := context.WithTimeout(ctx, g.CheckInterval)
		st, err := ReadServerState(ictx, l.b.Control)
		cancel()
		if err != nil {
			if l.b.Log != nil {
				l.b.Log.Debug("INFO during burst failed", "err", err)
			}
			continue
		}
		if d := g.Watch(st, l.plan); !d.OK() {
			l.stop(d, "")
			return
		}
	}
}

// cancelDetail says why ctx ended under a burst: the cause its canceller
// gave (the engine's "the target was removed", "the target was changed by
// a reload", "the prober is stopping"; a signal's), or that the prober is
// stopping when it gave none.
func cancelDetail(ctx context.Context) string {
	if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) && !errors.Is(c, context.DeadlineExceeded) {
		return c.Error()
	}
	return "the prober is stopping"
}
