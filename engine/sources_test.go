package engine

import (
	"context"
	"errors"
	"github.com/redis-prober/redis-prober/internal/logtest"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// A source's failed reads keep its last good content, are logged once per
// distinct problem and show in Healthy; a change is reported once.
func TestSourceWatcherKeepsLastGood(t *testing.T) {
	var mu sync.Mutex
	content, fail := []string{"a"}, error(nil)
	set := func(c []string, err error) { mu.Lock(); content, fail = c, err; mu.Unlock() }
	var logs logtest.Buffer
	w := NewSourceWatcher(slog.New(slog.NewTextHandler(&logs, nil)), Source[[]string]{
		Name: "file_sd_configs[0]", Interval: 10 * time.Millisecond,
		Read: func(context.Context) ([]string, error) {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(content), fail
		},
	})
	ctx, cancel := context.WithCancel(t.Context())
	if !w.Poll(ctx) || !slices.Equal(w.Snapshot()[0], []string{"a"}) || !w.Healthy() {
		t.Fatalf("first poll: %v healthy %v", w.Snapshot(), w.Healthy())
	}
	changes := make(chan struct{}, 100)
	done := make(chan struct{})
	go func() { w.Run(ctx, func() { changes <- struct{}{} }); close(done) }()
	wait := func(what string) {
		t.Helper()
		select {
		case <-changes:
		case <-time.After(5 * time.Second):
			t.Fatalf("no change reported: %s", what)
		}
	}
	set([]string{"a", "b"}, nil)
	wait("b added")
	set(nil, errors.New("/sd/x.json: not a JSON list"))
	wait("health lost")
	time.Sleep(100 * time.Millisecond) // ten more failed reads
	if w.Healthy() || !slices.Equal(w.Snapshot()[0], []string{"a", "b"}) {
		t.Errorf("after a bad read: %v healthy %v", w.Snapshot(), w.Healthy())
	}
	if n := strings.Count(logs.String(), "target source failed"); n != 1 {
		t.Errorf("%d log lines for one problem, want 1:\n%s", n, logs.String())
	}
	if len(changes) != 0 {
		t.Errorf("%d changes reported for repeated failures", len(changes))
	}
	set([]string{"b"}, nil)
	wait("recovered")
	if !w.Healthy() || !slices.Equal(w.Snapshot()[0], []string{"b"}) {
		t.Errorf("after recovery: %v healthy %v", w.Snapshot(), w.Healthy())
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}
