package prober

import (
	"context"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// IntrinsicSampler measures the host's own scheduling jitter the way
// `redis-cli --intrinsic-latency` does: it busy-reads the monotonic clock on
// a locked thread and keeps the largest gap between two readings, which is
// time the thread was not running. It works in short windows at a low duty
// cycle (window/interval, a millisecond a second by default) so it costs
// almost nothing, and records each window's largest gap.
type IntrinsicSampler struct {
	Window   time.Duration
	Interval time.Duration
	Observer prometheus.Observer
}

// Run samples until ctx is done.
func (s IntrinsicSampler) Run(ctx context.Context) {
	if s.Window <= 0 || s.Interval <= 0 {
		return
	}
	t := time.NewTicker(s.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.Observer.Observe(maxGap(s.Window).Seconds())
		}
	}
}

// maxGap spins for window and returns the longest stretch between two
// consecutive clock readings.
func maxGap(window time.Duration) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := time.Now()
	prev := start
	var worst time.Duration
	for {
		now := time.Now()
		if gap := now.Sub(prev); gap > worst {
			worst = gap
		}
		prev = now
		if now.Sub(start) >= window {
			return worst
		}
	}
}
