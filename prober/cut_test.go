package prober

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/redistest"
	"github.com/redis-prober/redis-prober/wire"
)

// lateCtx is a context whose deadline has passed but whose timer has not
// fired yet: Done is open and Err is nil. A context made by WithTimeout is
// in that state for a moment after its deadline, while the net package
// already fails a dial by the deadline itself ("i/o timeout"); lateCtx
// holds the moment open until fire, so a test runs in it every time.
type lateCtx struct {
	context.Context
	deadline time.Time
	done     chan struct{}
	once     sync.Once
}

func newLateCtx(t *testing.T) *lateCtx {
	c := &lateCtx{Context: context.Background(), deadline: time.Now().Add(-time.Millisecond), done: make(chan struct{})}
	t.Cleanup(c.fire)
	return c
}

func (c *lateCtx) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *lateCtx) Done() <-chan struct{}       { return c.done }
func (c *lateCtx) fire()                       { c.once.Do(func() { close(c.done) }) }

func (c *lateCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// connectRecorder keeps the connect probe's results.
type connectRecorder struct {
	mu  sync.Mutex
	res []Result
}

func (r *connectRecorder) RecordConnect(res Result, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res = append(r.res, res)
}

func (r *connectRecorder) results() []Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Result(nil), r.res...)
}

// A connect cut by the end of its caller's window (the doctor's measuring
// window) is not a fault of Redis: it is neither recorded nor logged, even
// when the dial fails by the window's deadline before the window's context
// says it is done (the doctor reported "1 errors" and "probe failing
// command=connect err=... i/o timeout" on a healthy Redis).
func TestConnectCutByWindowIsNotAnError(t *testing.T) {
	srv := redistest.Start(t)
	var logBuf bytes.Buffer
	faults := NewFaultLog(slog.New(slog.NewTextHandler(&logBuf, nil)))
	rec := &connectRecorder{}
	cp := NewConnectProbe(Endpoint{Network: "tcp", Addr: srv.Addr()}, 2*time.Second, rec, faults)

	cp.Once(t.Context())
	if got := rec.results(); len(got) != 1 || got[0] != ResultOK {
		t.Fatalf("connect to a healthy server: %v, want one ok", got)
	}
	cp.Once(newLateCtx(t))
	if got := rec.results(); len(got) != 1 {
		t.Errorf("a connect cut by the window was recorded: %v", got[1:])
	}
	if logBuf.Len() > 0 {
		t.Errorf("a connect cut by the window was logged:\n%s", logBuf.String())
	}
}

// The same for the probe's own dial: a worker whose connection is dialled
// as its caller's deadline passes stops without a sample or a log line.
func TestProbeDialCutByWindowIsNotAnError(t *testing.T) {
	srv := redistest.Start(t)
	var logBuf bytes.Buffer
	faults := NewFaultLog(slog.New(slog.NewTextHandler(&logBuf, nil)))
	ctx := newLateCtx(t)
	rec := &firingRecorder{fire: ctx.fire}
	cfg := testProbeConfig(t, 100, 2*time.Second, "ping")
	cfg.Connections, cfg.Poller = 1, nil
	done := make(chan struct{})
	go func() {
		defer close(done)
		NewProbe(cfg, Endpoint{Network: "tcp", Addr: srv.Addr()}, rec, faults).Run(ctx)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		ctx.fire()
		<-done
		t.Fatal("the probe ran on past its caller's deadline")
	}
	if got := rec.results(); len(got) > 0 {
		t.Errorf("a dial cut by the window was recorded: %v", got)
	}
	if logBuf.Len() > 0 {
		t.Errorf("a dial cut by the window was logged:\n%s", logBuf.String())
	}
}

// firingRecorder keeps the probe's results, and fires its context at the
// first, so a probe that records a cut dial stops at once.
type firingRecorder struct {
	mu   sync.Mutex
	res  []Result
	fire func()
}

func (r *firingRecorder) Record(_ int, res Result, _ time.Duration) {
	r.mu.Lock()
	r.res = append(r.res, res)
	r.mu.Unlock()
	r.fire()
}

func (r *firingRecorder) results() []Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Result(nil), r.res...)
}

func (r *firingRecorder) SetUp(bool)                      {}
func (r *firingRecorder) RecordLag(time.Duration)         {}
func (r *firingRecorder) RecordClientDelay(time.Duration) {}
func (r *firingRecorder) SetClock(wire.Clock)             {}
func (r *firingRecorder) ClockFallback()                  {}
func (r *firingRecorder) RecordNetwork(NetworkSample)     {}
