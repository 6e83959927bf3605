package engine

import (
	"context"
	"time"
)

// periodic is a node's task that runs at once and then every interval.
type periodic struct {
	every time.Duration
	run   func(context.Context)
}

// runPeriodic runs the tasks on the calling goroutine, each at once and then
// every interval, until ctx is done: a node's housekeeping (seeding the probe
// keys, the connect probe) costs one goroutine and one timer, not one each.
// A task that overruns delays the others; each is short and bounded by its
// own timeout. Tasks with no interval are skipped.
func runPeriodic(ctx context.Context, tasks []periodic) {
	next := make([]time.Time, len(tasks))
	now := time.Now()
	for i := range next {
		next[i] = now
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		soonest := -1
		for i, t := range tasks {
			if t.every > 0 && (soonest < 0 || next[i].Before(next[soonest])) {
				soonest = i
			}
		}
		if soonest < 0 {
			<-ctx.Done()
			return
		}
		if d := time.Until(next[soonest]); d > 0 {
			timer.Reset(d)
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
		}
		if ctx.Err() != nil {
			return
		}
		tasks[soonest].run(ctx)
		// The next run keeps the task's own cadence; one that fell a whole
		// interval behind starts again from now instead of catching up.
		next[soonest] = next[soonest].Add(tasks[soonest].every)
		if now := time.Now(); next[soonest].Before(now) {
			next[soonest] = now
		}
	}
}
