package prober

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sys/unix"
)

// ProbeConfig is the steady trickle of one target.
type ProbeConfig struct {
	Rate        float64       // requests per second over all commands
	Timeout     time.Duration // per request, counted from its charged start
	Commands    []Command
	Connections int // probe connections; more than one lets the schedule go on while a reply is outstanding
	DataSize    int
	KeyTTL      time.Duration
	Namespace   Namespace
	Offset      time.Duration // delay of the first slot, to stagger targets
	// OnError, when set, sees every failed request (off the success path),
	// e.g. so a Cluster MOVED reply refreshes the topology at once.
	OnError func(error)
}

// Recorder takes the probe's samples.
type Recorder interface {
	Record(cmd int, res Result, d time.Duration)
	SetUp(answered bool)
	RecordLag(d time.Duration)
}

// Probe runs the open-loop schedule of one target on dedicated connections.
type Probe struct {
	cfg    ProbeConfig
	ep     Endpoint
	rec    Recorder
	faults *FaultLog
}

// NewProbe wires a probe; Run starts it.
func NewProbe(cfg ProbeConfig, ep Endpoint, rec Recorder, faults *FaultLog) *Probe {
	if cfg.Connections < 1 {
		cfg.Connections = 1
	}
	return &Probe{cfg: cfg, ep: ep, rec: rec, faults: faults}
}

// Run probes until ctx is done. Every worker is stopped and every connection
// closed when it returns.
func (p *Probe) Run(ctx context.Context) {
	sched := newSchedule(time.Now().Add(p.cfg.Offset), intervalFor(p.cfg.Rate))
	var stop atomic.Bool
	workers := make([]*worker, p.cfg.Connections)
	var wg sync.WaitGroup
	for i := range workers {
		w := &worker{probe: p, sched: sched, stop: &stop}
		workers[i] = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run()
		}()
	}
	<-ctx.Done()
	stop.Store(true)
	for _, w := range workers {
		if c := w.conn.Load(); c != nil {
			c.Interrupt()
		}
	}
	wg.Wait()
}

type worker struct {
	probe *Probe
	sched *schedule
	stop  *atomic.Bool
	conn  atomic.Pointer[blockingConn]
}

// sleepSlice bounds each nanosleep so a stopping prober notices within it.
const sleepSlice = 50 * time.Millisecond

// run is one probe connection. It stays on its own OS thread and uses only
// blocking system calls, so a reply wakes it the way it would wake a C client
// (see docs/architecture.md, "Probe fidelity").
func (w *worker) run() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	p := w.probe
	cfg := p.cfg
	opts := p.ep.ClientOptions(cfg.Timeout, 1)
	opts.Dialer = func(ctx context.Context, _, _ string) (net.Conn, error) {
		c, raw, err := p.ep.dialFast(ctx, cfg.Timeout)
		if err != nil {
			return nil, err
		}
		w.conn.Store(raw)
		return c, nil
	}
	client := redis.NewClient(opts)
	defer client.Close()

	keys := newKeySet(cfg.Namespace)
	value := probeValue(cfg.DataSize)
	cmds := make([]*redis.Cmd, len(cfg.Commands))
	// go-redis takes its context per call; the probe's own deadline lives in
	// the socket (see blockingConn.limit), so this context is never cancelled
	// mid-request and costs nothing per call.
	ctx := context.Background()
	for i, c := range cfg.Commands {
		cmds[i] = redis.NewCmd(ctx, c.args(keys, value, cfg.KeyTTL)...)
	}

	for !w.stop.Load() {
		k, due := w.sched.claim()
		claimed := time.Now()
		if !claimed.After(due) && !w.sleepUntil(due) {
			return
		}
		woke := time.Now()
		start, lag, overdue := chargeFrom(claimed, due, woke)
		if !overdue {
			p.rec.RecordLag(lag)
		}
		ci := int(k % int64(len(cmds)))
		if elapsed := woke.Sub(start); elapsed >= cfg.Timeout {
			// The slot waited its whole timeout behind stalled requests:
			// it is a timeout at its true age, not a dropped sample.
			p.rec.Record(ci, ResultTimeout, elapsed)
			p.rec.SetUp(false)
			continue
		}
		if c := w.conn.Load(); c != nil {
			c.limit = start.Add(cfg.Timeout)
		}
		cmd := cmds[ci]
		cmd.SetErr(nil)
		cmd.SetVal(nil)
		err := client.Process(ctx, cmd)
		d := time.Since(start)
		if w.stop.Load() {
			return // interrupted by shutdown: not a Redis fault
		}
		res, answered := classify(err)
		p.rec.Record(ci, res, d)
		p.rec.SetUp(answered)
		p.faults.Observe(cfg.Commands[ci].Name, err, answered)
		if err != nil && res != ResultOK && cfg.OnError != nil {
			cfg.OnError(err)
		}
	}
}

// sleepUntil sleeps on this thread with nanosleep(2), in slices so a stop is
// seen quickly. It reports false when the probe is stopping.
func (w *worker) sleepUntil(t time.Time) bool {
	for {
		if w.stop.Load() {
			return false
		}
		d := time.Until(t)
		if d <= 0 {
			return true
		}
		d = min(d, sleepSlice)
		ts := unix.NsecToTimespec(d.Nanoseconds())
		_ = unix.Nanosleep(&ts, nil)
	}
}

// classify maps a go-redis outcome to a result, and tells whether Redis
// answered at all (an error reply such as OOM still proves it is up).
func classify(err error) (Result, bool) {
	if err == nil || errors.Is(err, redis.Nil) {
		return ResultOK, true
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		return ResultError, true
	}
	var nerr net.Error
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) ||
		(errors.As(err, &nerr) && nerr.Timeout()) {
		return ResultTimeout, false
	}
	return ResultError, false
}

// FaultLog logs a repeating fault once: the first failure, a change of
// failure, and the recovery, never one line per probe.
type FaultLog struct {
	log     *slog.Logger
	failing atomic.Bool
	mu      sync.Mutex
	last    string
	lastAt  time.Time
	repeats int
}

// faultRepeatEvery is how often a fault that goes on is logged again.
const faultRepeatEvery = 5 * time.Minute

// NewFaultLog returns a FaultLog writing to log.
func NewFaultLog(log *slog.Logger) *FaultLog { return &FaultLog{log: log} }

// Observe takes every probe outcome; the success path is one atomic load.
func (f *FaultLog) Observe(what string, err error, answered bool) {
	if err == nil || errors.Is(err, redis.Nil) {
		if f.failing.Load() && f.failing.Swap(false) {
			f.mu.Lock()
			f.log.Info("probe recovered", "after_failures", f.repeats+1, "last_error", f.last)
			f.last, f.repeats = "", 0
			f.mu.Unlock()
		}
		return
	}
	f.failing.Store(true)
	msg := err.Error()
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	if msg == f.last && now.Sub(f.lastAt) < faultRepeatEvery {
		f.repeats++
		return
	}
	attrs := []any{"command", what, "err", msg, "redis_answered", answered}
	if msg == f.last {
		attrs = append(attrs, "repeated", f.repeats)
	}
	f.log.Warn("probe failing", attrs...)
	f.last, f.lastAt, f.repeats = msg, now, 0
}
