package engine

import (
	"context"
	"sync"
	"testing"
	"time"
)

func TestRunPeriodicRunsEachOnItsCadence(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 230*time.Millisecond)
	defer cancel()
	var mu sync.Mutex
	counts := map[string]int{}
	count := func(name string) func(context.Context) {
		return func(context.Context) { mu.Lock(); counts[name]++; mu.Unlock() }
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		runPeriodic(ctx, []periodic{
			{every: 50 * time.Millisecond, run: count("fast")},
			{every: 100 * time.Millisecond, run: count("slow")},
			{every: 0, run: count("off")},
		})
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("runPeriodic did not return after its context ended")
	}
	mu.Lock()
	defer mu.Unlock()
	// fast at 0, 50, ..., 200 ms; slow at 0, 100, 200 ms; off never.
	if counts["fast"] < 3 || counts["fast"] > 5 || counts["slow"] < 2 || counts["slow"] > 3 || counts["off"] != 0 {
		t.Errorf("runs %v; want fast about 5, slow about 3, off 0", counts)
	}
	if counts["fast"] <= counts["slow"] {
		t.Errorf("the faster task ran %d times, the slower %d", counts["fast"], counts["slow"])
	}
}

func TestRunPeriodicWithNothingToDoWaitsForTheEnd(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); runPeriodic(ctx, nil) }()
	select {
	case <-done:
		t.Fatal("returned before its context ended")
	case <-time.After(20 * time.Millisecond):
	}
	cancel()
	<-done
}
