package engine

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Each task runs at once and then on its own cadence: the fast one many
// times while the hourly one has had only its first run, however slowly
// the host schedules the loop (the test counts runs, never time).
func TestRunPeriodicRunsEachOnItsCadence(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	counts := map[string]int{}
	count := func(name string) func(context.Context) {
		return func(context.Context) {
			mu.Lock()
			defer mu.Unlock()
			counts[name]++
			if counts["fast"] == 20 {
				cancel()
			}
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		RunTasks(ctx, []Task{
			{Every: time.Millisecond, Run: count("fast")},
			{Every: time.Hour, Run: count("hourly")},
			{Every: 0, Run: count("off")},
		})
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the fast task did not run 20 times, or RunTasks did not return after its context ended")
	}
	mu.Lock()
	defer mu.Unlock()
	if counts["fast"] != 20 || counts["hourly"] != 1 || counts["off"] != 0 {
		t.Errorf("runs %v; want fast 20, hourly 1 (its first run), off 0", counts)
	}
}

func TestRunPeriodicWithNothingToDoWaitsForTheEnd(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); RunTasks(ctx, nil) }()
	select {
	case <-done:
		t.Fatal("returned before its context ended")
	case <-time.After(20 * time.Millisecond):
	}
	cancel()
	<-done
}
