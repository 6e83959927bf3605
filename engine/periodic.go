package engine

import (
	"context"
	"time"
)

// Task is a node's periodic job: it runs at once and then every Every, on
// the node's one housekeeping loop.
type Task struct {
	Every time.Duration
	Run   func(context.Context)
}

// RunTasks runs the tasks on the calling goroutine, each at once and then
// every interval, until ctx is done: a node's housekeeping (seeding the probe
// keys, the connect probe, the collectors' refresh, the change watch) costs
// one goroutine and one timer, not one each.
// A task that overruns delays the others; each is short and bounded by its
// own timeout. Tasks with no interval are skipped.
func RunTasks(ctx context.Context, tasks []Task) {
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
			if t.Every > 0 && (soonest < 0 || next[i].Before(next[soonest])) {
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
		tasks[soonest].Run(ctx)
		// The next run keeps the task's own cadence; one that fell a whole
		// interval behind starts again from now instead of catching up.
		next[soonest] = next[soonest].Add(tasks[soonest].Every)
		if now := time.Now(); next[soonest].Before(now) {
			next[soonest] = now
		}
	}
}
