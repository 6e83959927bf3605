package engine

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redis-prober/redis-prober/internal/redistest"
	"github.com/redis-prober/redis-prober/prober"
)

// hooksService uses every hook and records what the engine does with
// them.
type hooksService struct {
	mu                     sync.Mutex
	attached               []Node
	samples, errors, tasks atomic.Int64
	running                atomic.Int32 // Run goroutines not returned
	late                   atomic.Int64 // samples, errors or tasks after Done
	done                   atomic.Bool
}

func (s *hooksService) Name() string { return "hooks" }

func (s *hooksService) Attach(n Node) NodeHooks {
	s.mu.Lock()
	s.attached = append(s.attached, n)
	s.mu.Unlock()
	after := func() {
		if s.done.Load() {
			s.late.Add(1)
		}
	}
	return NodeHooks{
		Tap: func(rec prober.Recorder) prober.Recorder {
			return countingRecorder{Recorder: rec, f: func() { s.samples.Add(1); after() }}
		},
		OnError: func(error) { s.errors.Add(1); after() },
		Tasks:   []Task{{Every: 10 * time.Millisecond, Run: func(context.Context) { s.tasks.Add(1); after() }}},
		Run: func(ctx context.Context) {
			s.running.Add(1)
			defer s.running.Add(-1)
			<-ctx.Done()
			// A Run that takes its time to end, as a burst's clean-up
			// does: Done must wait for it.
			time.Sleep(200 * time.Millisecond)
		},
		Done: func() {
			if s.running.Load() != 0 {
				s.late.Add(1) // Done before Run returned
			}
			s.done.Store(true)
		},
	}
}

type countingRecorder struct {
	prober.Recorder
	f func()
}

func (r countingRecorder) Record(cmd int, res prober.Result, d time.Duration) {
	r.Recorder.Record(cmd, res, d)
	r.f()
}

// A service gets what its hooks ask for and nothing else: the node (its
// target, its probe's commands, a control client), every probe sample
// through its tap, every failed request through OnError, its tasks on the
// housekeeping loop, its Run on a goroutine; Done comes once all of them
// have stopped.
func TestServiceHooks(t *testing.T) {
	// Every probe request fails: the target gives no password.
	srv := redistest.Start(t, "requirepass secret")
	svc := &hooksService{}
	e := New(prometheus.NewRegistry(), quietLogger(), svc)
	tgt := testTarget(t, srv)
	stop := runEngine(t, e, Config{Targets: []Target{tgt}, CleanupTimeout: time.Second})
	waitFor(t, 10*time.Second, "samples, errors and task runs", func() bool {
		return svc.samples.Load() > 5 && svc.errors.Load() > 5 && svc.tasks.Load() > 5 && svc.running.Load() == 1
	})
	stop()
	if !svc.done.Load() || svc.running.Load() != 0 || svc.late.Load() != 0 {
		t.Errorf("after stop: done %v, Run goroutines %d, %d hook calls after Done or Done before Run returned",
			svc.done.Load(), svc.running.Load(), svc.late.Load())
	}
	svc.mu.Lock()
	defer svc.mu.Unlock()
	if len(svc.attached) != 1 {
		t.Fatalf("attached %d times, want once", len(svc.attached))
	}
	n := svc.attached[0]
	if n.Target.Name != tgt.Name || n.Control == nil || !slices.Equal(n.Commands, commandNames(tgt.Probe.Commands)) {
		t.Errorf("attached to %+v, commands %v, control %v", n.Target.Name, n.Commands, n.Control)
	}
}
