package prober

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/internal/resp"
	"github.com/redis-prober/redis-prober/wire"
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
	// Poller, when set, serves the probe's open plain TCP connections from
	// one event loop shared by many targets (see Poller); nil keeps every
	// connection on a goroutine of its own.
	Poller *Poller
}

// Recorder takes the probe's samples.
type Recorder interface {
	Record(cmd int, res Result, d time.Duration)
	SetUp(answered bool)
	RecordLag(d time.Duration)
	// RecordClientDelay takes, for a request timed by the kernel's
	// stamps, how long its reply sat in the kernel before the prober read
	// it: this host's own delay, kept out of the Redis figure.
	RecordClientDelay(d time.Duration)
	// SetClock says which clock times the probe's requests, whenever a
	// connection is opened.
	SetClock(c wire.Clock)
	// ClockFallback counts a request on a stamped connection whose stamps
	// were missing or disagreed with the monotonic clock, so it was timed
	// by the prober's own clock.
	ClockFallback()
	// RecordNetwork takes the kernel's view of a probe connection's round
	// trip after a request that was long on the wire (see NetworkSample),
	// before the Record of that request. The sample carries its own times,
	// so a recorder need not pair it with the Record that follows.
	RecordNetwork(s NetworkSample)
}

// Probe runs the open-loop schedule of one target on dedicated connections.
type Probe struct {
	cfg    ProbeConfig
	ep     Endpoint
	rec    Recorder
	faults *FaultLog
	// stamps is the stamping state the probe's connections share: the
	// Poller's, or the probe's own without one.
	stamps *wire.Stamping
}

// NewProbe wires a probe; Run starts it.
func NewProbe(cfg ProbeConfig, ep Endpoint, rec Recorder, faults *FaultLog) *Probe {
	if cfg.Connections < 1 {
		cfg.Connections = 1
	}
	stamps := cfg.Poller.Stamping()
	if stamps == nil {
		stamps = wire.NewStamping()
	}
	return &Probe{cfg: cfg, ep: ep, rec: rec, faults: faults, stamps: stamps}
}

// Run probes until ctx is done. Every worker is stopped and every connection
// closed when it returns.
func (p *Probe) Run(ctx context.Context) { p.Start(ctx)() }

// Start starts the probe's workers, which probe until ctx is done; wait
// returns once every one has stopped and closed its connection. With a
// Poller, a worker whose connection is open hands it to the poller and its
// goroutine ends; it comes back to a goroutine only to open a new one, so
// at a thousand targets a probe costs no goroutine of its own at all.
func (p *Probe) Start(ctx context.Context) (wait func()) {
	sched := NewTimetable(time.Now().Add(p.cfg.Offset), IntervalFor(p.cfg.Rate))
	keys := newKeySet(p.cfg.Namespace)
	value := ProbeValue(p.cfg.DataSize)
	reqs := make([][]byte, len(p.cfg.Commands))
	for i, c := range p.cfg.Commands {
		reqs[i] = encodeArgs(c.args(keys, value, p.cfg.KeyTTL))
	}
	var wg sync.WaitGroup
	workers := make([]*worker, p.cfg.Connections)
	for i := range workers {
		workers[i] = &worker{probe: p, sched: sched, reqs: reqs, ctx: ctx, done: wg.Done}
	}
	// A stop wakes every worker blocked on Redis at once, and the poller
	// lets go of the workers it holds.
	stop := context.AfterFunc(ctx, func() {
		for _, w := range workers {
			if c := w.conn.Load(); c != nil {
				c.Interrupt()
			}
		}
		if p.cfg.Poller != nil {
			p.cfg.Poller.stopped()
		}
	})
	wg.Add(len(workers))
	for _, w := range workers {
		go w.drive()
	}
	return func() {
		wg.Wait()
		stop()
	}
}

type worker struct {
	probe  *Probe
	sched  *Timetable
	ctx    context.Context
	done   func()                      // the worker has stopped for good
	pc     *probeConn                  // the open connection, nil until one is needed
	conn   atomic.Pointer[guardedConn] // pc's socket, for a stop to interrupt
	timer  *time.Timer                 // reused for every wait, so waiting allocates nothing
	reqs   [][]byte                    // each command, encoded once for all workers
	logged bool                        // the missing kernel stamps were logged
	// unpolled: the poller could not take a connection, so none is offered
	// to it again.
	unpolled bool
	// freeAt is when the connection's last reply would have arrived had
	// the prober never been late: its RX stamp when it was sent on time,
	// else its due time plus its charge (see charge). Zero when unknown (a
	// new connection, a reply timed by the prober's clock).
	freeAt time.Time
	// owed: the connection's last request timed out before any of its
	// reply came, and the connection was kept (keepAfter): the reply is
	// read and dropped before the next request, until owedBy. replies is
	// the guard's count before the last request.
	owed    bool
	owedBy  time.Time
	replies uint64
}

// drive runs the worker on the calling goroutine until it stops, or until
// it hands its connection to the poller (which then owns the worker).
func (w *worker) drive() {
	for w.run() {
		if w.handOver() {
			return
		}
		w.unpolled = true // the poller cannot take it: this goroutine keeps it
	}
	w.drop()
	w.done()
}

// slotTiming is where one slot's request stands against the charging rule.
type slotTiming struct {
	k            int64
	due, claimed time.Time
	woke, start  time.Time // woke: when the worker went to send; start: where the charge begins
	lag          time.Duration
	overdue      bool
	wireLag      bool // an overdue request's lag, split off by its connection's RX stamps (heldOnWire)
	behind       bool // it came due while its connection owed an earlier, timed-out request's reply (poller)
	ci           int  // which command
}

// claim takes the next slot of the schedule.
func (w *worker) claim() slotTiming {
	k, due := w.sched.Claim()
	return slotTiming{k: k, due: due, claimed: time.Now()}
}

// wake readies a claimed slot's request at woke. A slot that waited its
// whole timeout behind stalled requests is recorded at once as a timeout
// at its true age (not a dropped sample), and ok is false.
func (w *worker) wake(s *slotTiming, woke time.Time) (deadline time.Time, ok bool) {
	s.woke = woke
	s.start, s.lag, s.overdue = chargeFrom(s.claimed, s.due, woke)
	if s.behind {
		// It waited for a reply its connection owed: Redis's doing, as
		// for a slot claimed overdue.
		s.start, s.lag, s.overdue = s.due, 0, true
	}
	s.ci = int(s.k % int64(len(w.reqs)))
	if elapsed := woke.Sub(s.start); elapsed >= w.probe.cfg.Timeout {
		w.probe.rec.Record(s.ci, ResultTimeout, elapsed)
		w.probe.rec.SetUp(false)
		return time.Time{}, false
	}
	return s.start.Add(w.probe.cfg.Timeout), true
}

// run is the worker on a goroutine: an ordinary netpoller socket whose every
// request and reply the kernel timestamps, so the figure is the wire's, not
// this goroutine's wake-up (see docs/architecture.md, "Probe fidelity"). It
// returns true when its connection is ready for the poller, false when the
// probe is stopping.
func (w *worker) run() (pollable bool) {
	if w.timer == nil {
		w.timer = time.NewTimer(time.Hour)
		w.timer.Stop()
	}
	defer w.timer.Stop()
	ctx := w.ctx

	for ctx.Err() == nil {
		s := w.claim()
		if !s.claimed.After(s.due) && !w.sleepUntil(ctx, s.due) {
			return false
		}
		s.behind = w.owed
		deadline, ok := w.wake(&s, time.Now())
		if !ok {
			if w.owed && !time.Now().Before(w.owedBy) {
				w.drop()
			}
			continue
		}
		// A request that has to open its connection first is timed in
		// user space: its dial belongs in the figure.
		dialed := w.pc == nil
		err := w.open(ctx, deadline)
		if err == nil && w.owed {
			err = w.awaitOwed(deadline)
		}
		if err == nil {
			w.replies = w.pc.conn.guard.Replies()
			err = w.pc.exchange(w.reqs[s.ci], deadline)
		}
		end := time.Now()
		if cutShort(ctx) {
			return false // cut by the caller (a stop, the end of a window): not a Redis fault
		}
		var ex wire.Exchange
		stamped := w.pc != nil && w.pc.conn.stamps != nil
		if stamped && !dialed {
			ex = w.pc.conn.stamps.Last()
			// Before its Record, as the loop does for its own.
			if ns, ok := w.pc.network(ex, end); ok {
				w.probe.rec.RecordNetwork(ns)
			}
		}
		if w.settle(&s, err, end, dialed || !stamped, ex) && !w.keepAfter(err) {
			// The stream is out of step (or gone): the next slot opens
			// a new connection.
			w.drop()
		} else if w.pc != nil && !w.unpolled && w.pollable() {
			return true
		}
	}
	return false
}

// settle records a request's outcome by the charging rule; drop says the
// connection is out of step or gone (any failure other than an error reply).
// userClock times it by the prober's own clock; otherwise ex holds the
// kernel's stamps of the request and its reply.
func (w *worker) settle(s *slotTiming, err error, end time.Time, userClock bool, ex wire.Exchange) (drop bool) {
	p := w.probe
	cfg := p.cfg
	_, replied := err.(resp.ErrorReply)
	// A failure other than a reply has no reply stamp: its age is the
	// user-space reading (a timeout at its true age).
	d := w.charge(s, end, userClock || (err != nil && !replied), ex)
	if !s.overdue || s.wireLag {
		// Recorded after the request, so its cost stays out of the
		// measured round trip.
		p.rec.RecordLag(s.lag)
	}
	res, answered := classify(err)
	p.rec.Record(s.ci, res, d)
	p.rec.SetUp(answered)
	p.faults.Observe(cfg.Commands[s.ci].Name, err, answered)
	if err != nil && res != ResultOK && cfg.OnError != nil {
		cfg.OnError(err)
	}
	return err != nil && !replied
}

// keepAfter says whether a request that failed with err leaves the
// connection in step, so that the next slot keeps it (wire.AfterTimeout,
// the rule the poller keeps too). A connection that owes its reply past
// owedBy is given up on.
func (w *worker) keepAfter(err error) bool {
	if w.pc == nil || !readTimeout(err) {
		return false
	}
	g := w.pc.conn.guard
	switch wire.AfterTimeout(g.Replies()-w.replies, g.Between() && w.pc.r.Buffered() == 0) {
	case wire.KeepOwed:
	case wire.KeepInStep:
		return true
	default:
		return false
	}
	now := time.Now()
	if !w.owed {
		w.owed, w.owedBy = true, wire.OwedBy(now, w.probe.cfg.Timeout)
	}
	return now.Before(w.owedBy)
}

// errUnasked is a server that sent bytes while no request was out: the
// stream is out of step.
var errUnasked = errors.New("reply with no request outstanding")

// readTimeout says err is a read that met its deadline (a write that did
// may have sent part of the request: its stream is out of step).
func readTimeout(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "read" && errors.Is(err, os.ErrDeadlineExceeded)
}

// awaitOwed reads the reply the connection owes, by the slot's deadline,
// and drops it; when it came is where the slot's wait stops being the
// server's (freeAt, heldOnWire).
func (w *worker) awaitOwed(deadline time.Time) error {
	pc := w.pc
	_ = pc.conn.SetDeadline(deadline)
	if _, _, err := pc.r.Reply(); err != nil {
		if _, replied := err.(resp.ErrorReply); !replied {
			return err
		}
	}
	if pc.r.Buffered() > 0 || !pc.conn.guard.Between() {
		return errUnasked
	}
	w.owed = false
	w.freeAt = time.Now()
	if pc.conn.stamps != nil {
		if rx, _, ok := pc.conn.stamps.LastRead(); ok {
			w.freeAt = rx
		}
	}
	return nil
}

// open makes sure the worker has a connection, dialing one if not.
func (w *worker) open(ctx context.Context, deadline time.Time) error {
	if w.pc != nil {
		return nil
	}
	p := w.probe
	pc, stampErr, err := p.ep.openProbeConn(ctx, p.cfg.Timeout, deadline, p.stamps)
	if stampErr != nil && !w.logged && p.faults != nil {
		w.logged = true
		p.faults.Logger().Info("kernel timestamps unavailable; probe latency is read from the prober's own clock",
			"endpoint", p.ep.String(), "reason", stampErr)
	}
	if err != nil {
		return err
	}
	w.pc = pc
	w.conn.Store(pc.conn)
	p.rec.SetClock(pc.conn.Clock())
	if ctx.Err() != nil {
		// A stop that came while the connection was stored missed it.
		pc.conn.Interrupt()
	}
	return nil
}

// drop closes the worker's connection, if any.
func (w *worker) drop() {
	w.owed = false
	if w.pc == nil {
		return
	}
	w.conn.Store(nil)
	_ = w.pc.Close()
	w.pc = nil
	w.freeAt = time.Time{}
}

// charge returns the latency of the request just made, by the charging rule
// (see chargeFrom): from its kernel TX stamp when its slot was taken while
// due, from its due time when it was overdue, to the kernel RX stamp of its
// reply's last bytes. Without trustworthy stamps it is the user-space
// reading from start to end. A request that had to open its connection
// first is timed in user space too: its dial belongs in the figure.
//
// An overdue request whose connection has a known freeAt is charged from
// its own TX stamp plus the part of its wait that the connection spent on
// Redis (heldOnWire); the prober's lateness in reading replies is schedule
// lag, not Redis latency. freeAt follows a client that is never late:
// after a stall, a backlog drained by a slow reader is charged as a prompt
// reader would have drained it, so the reader's lateness at each step does
// not pile up on the requests behind.
func (w *worker) charge(s *slotTiming, end time.Time, userClock bool, ex wire.Exchange) time.Duration {
	freeAt := w.freeAt
	w.freeAt = time.Time{}
	start := s.woke
	var from time.Time
	if s.overdue {
		start, from = s.due, s.due
	}
	if userClock {
		return end.Sub(start)
	}
	onWire := s.overdue && !freeAt.IsZero()
	if onWire {
		from = time.Time{}
	}
	d, delay, ok := wire.Timing(ex, from, s.woke, end)
	if !ok {
		w.probe.rec.ClockFallback()
		return end.Sub(start)
	}
	w.probe.rec.RecordClientDelay(delay)
	if onWire {
		held, lag := heldOnWire(s.due, freeAt, s.woke)
		d += held
		s.lag, s.wireLag = lag, true
	}
	if s.overdue {
		w.freeAt = s.due.Add(d)
	} else {
		w.freeAt = ex.ReadAt.Add(-delay) // the RX stamp
	}
	return d
}

// sleepUntil waits until t; it reports false when the probe is stopping.
//
// The wait parks the goroutine on one Go timer for the whole gap, woken early
// only by a stop. Parking matters twice:
//   - fidelity: a goroutine that never passes through the scheduler (one
//     that only ever sleeps in nanosleep(2)) looks to sysmon like one that
//     has run for over 10 ms, so sysmon would preempt it with SIGURG and take
//     its P while it waits in read(2) for Redis, and the thread hand-offs
//     that follow land inside the measured round trip. Parked before each
//     request, the goroutine starts it on a fresh scheduling slice;
//   - scale: a thread in nanosleep(2) keeps its P until sysmon takes it, so
//     hundreds of probe threads sleeping before each request held the two
//     Ps of a small host for seconds at a time and a scrape of /metrics
//     waited for one (docs/lab/2026-12-performance-notes.md, "Scale (200
//     targets, the first build)"). A parked goroutine holds no P.
//
// The timer may wake the worker up to a millisecond late; that lateness is
// the prober's own (schedule lag, excluded from Redis latency by chargeFrom).
func (w *worker) sleepUntil(ctx context.Context, t time.Time) bool {
	for {
		if ctx.Err() != nil {
			return false
		}
		d := time.Until(t)
		if d <= 0 {
			return true
		}
		w.timer.Reset(d)
		select {
		case <-ctx.Done():
			return false
		case <-w.timer.C:
		}
	}
}

// cutShort reports whether the caller's ctx has ended: cancelled (a stop,
// a reload) or past its deadline (the end of the doctor's measuring
// window). A request that fails then was cut short by its caller, not
// failed by Redis. The deadline is read by the clock, not only through
// ctx.Err(): the net package enforces a context's deadline on the socket
// itself, so a dial fails with "i/o timeout" a moment before the context's
// own timer marks it done.
func cutShort(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// classify maps a request's outcome to a result (an error reply is a
// resp.ErrorReply, which is a redis.Error), and tells whether Redis
// answered at all (an error reply such as OOM still proves it is up). A
// refused AUTH does not: nothing can be probed until the credentials are
// fixed, so up must say 0.
func classify(err error) (Result, bool) {
	if err == nil {
		return ResultOK, true
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		return ResultError, !isAuthRefusal(rerr.Error())
	}
	var refused *ServerRefusal
	if errors.As(err, &refused) {
		return ResultError, !isAuthRefusal(refused.Reply)
	}
	var nerr net.Error
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) ||
		(errors.As(err, &nerr) && nerr.Timeout()) {
		return ResultTimeout, false
	}
	return ResultError, false
}

// authRefusals are how Redis and Valkey word "you may not in": WRONGPASS
// and NOAUTH (Redis 6+, Valkey), the ERR forms of Redis 5 and earlier and of
// an AUTH sent to a server without a password, and protected mode's DENIED.
var authRefusals = []string{
	"ERR invalid password",                  // Redis <= 5
	"ERR invalid username-password pair",    // early Redis 6 wording
	"ERR Client sent AUTH, but no password", // Redis <= 5, AUTH without requirepass
	"ERR AUTH <password> called without",    // Redis 6+, the same
}

func isAuthRefusal(msg string) bool {
	if strings.HasPrefix(msg, "WRONGPASS") || strings.HasPrefix(msg, "NOAUTH") || strings.HasPrefix(msg, "DENIED") {
		return true
	}
	for _, p := range authRefusals {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// NopRecorder discards every sample: the base of a recorder that keeps
// only some of them (a tap), or a probe whose figures nobody reads.
type NopRecorder struct{}

func (NopRecorder) Record(int, Result, time.Duration) {}
func (NopRecorder) SetUp(bool)                        {}
func (NopRecorder) RecordLag(time.Duration)           {}
func (NopRecorder) RecordClientDelay(time.Duration)   {}
func (NopRecorder) SetClock(wire.Clock)               {}
func (NopRecorder) ClockFallback()                    {}
func (NopRecorder) RecordNetwork(NetworkSample)       {}
