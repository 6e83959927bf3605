package burst

import (
	"context"
	"errors"
	"fmt"
	"github.com/HdrHistogram/hdrhistogram-go"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/internal/resp"
	"github.com/redis-prober/redis-prober/prober"
)

// Recorder takes every measured request of a burst; a
// *CommandRecorder of phase "burst" feeds redis_prober_latency_seconds.
// Command i is the plan's i-th mix entry.
type Recorder interface {
	Record(cmd int, res prober.Result, d time.Duration)
}

// Progress is what a progress display shows, about four times a second.
type Progress struct {
	Elapsed   time.Duration // since the load began, warm-up included
	Planned   time.Duration // warm-up plus test time
	Ops       int64         // measured requests so far
	Rate      float64       // the target rate, 0 when unlimited
	OpsPerSec float64       // over the governor's window
	P99       time.Duration // over the governor's window
}

// Runner runs bounded bursts against one endpoint. Burst traffic goes over
// its own ordinary (netpoller) connections, never the probe's.
type Runner struct {
	Endpoint prober.Endpoint
	// Control reads INFO during the burst and deletes the keys afterwards.
	Control  redis.Cmdable
	Guards   Guards
	Recorder Recorder // may be nil
	Log      *slog.Logger
	Progress func(Progress) // may be nil
	// CleanupTimeout bounds the deletion of the burst's keys (default 10s).
	CleanupTimeout time.Duration

	// beforeCleanup is a test seam: it runs with the load over and the
	// burst's keys still in place.
	beforeCleanup func()
	// stall is a test seam: it runs before each batch is claimed, a
	// client that cannot keep its schedule.
	stall func()
	// stampOverUser counts stamped requests charged more than the
	// prober's own clock read for them: none, unless stamps are matched
	// to the wrong request (the tests read it).
	stampOverUser atomic.Int64
}

// Result is the outcome and the figures of one burst.
type Result struct {
	Plan    Plan
	Outcome Outcome
	Reason  string
	Detail  string
	// Bound is what ended a completed burst: "test-time", "requests" or "bytes".
	Bound  string
	Server ServerState // as INFO said before the burst

	Start        time.Time // the load began (warm-up included)
	MeasureStart time.Time // warm-up over
	End          time.Time // the load ended
	Elapsed      time.Duration

	Commands     []*CommandStats // in the plan's mix order
	Total        *CommandStats
	BytesWritten int64
	KeysWritten  int64 // distinct keys written; -1 when the range is too large to track
	Interrupted  int64 // requests cut short by an abort or a cancel, not counted
	KeysDeleted  int64 // keys named in UNLINKs at cleanup
	CleanupError string

	// Lag is the client's own schedule lag of the measured requests: how
	// much later than it could have (its due time, or when the ideal
	// client had a connection free, see idealPool) the prober sent each.
	// It is never in the latency.
	Lag *hdrhistogram.Histogram
	// Stamped counts the measured requests timed by the kernel's stamps;
	// the rest (Total.Ops - Stamped) were timed by the prober's clock.
	Stamped int64
	// ClientCPU is the CPU the prober's process used during the load, in
	// cores (1.0: one core all the time), whatever else it did meanwhile.
	ClientCPU float64
}

// Clock names what timed the burst's requests: "kernel" (every measured
// request by its kernel stamps), "user" (none: the prober's own clock) or
// "mixed".
func (r *Result) Clock() string {
	switch {
	case r.Total == nil || r.Total.Ops == 0 || r.Stamped == 0:
		return "user"
	case r.Stamped >= r.Total.Ops:
		return "kernel"
	}
	return "mixed"
}

// clientLagLimit is the schedule lag p99 beyond which a client did not keep
// its schedule: a millisecond is what Go's own timers miss by.
const clientLagLimit = time.Millisecond

// KeptSchedule tells whether the client delivered its rate (90 %) with a
// lag p99 of at most a millisecond; when it did not, the run says so
// (client-bound), and its latency, which leaves the lag out, still holds.
func (r *Result) KeptSchedule() bool {
	return r.DeliveredRate() && r.LagQuantile(0.99) <= clientLagLimit
}

// DeliveredRate tells whether the client sent at least 90 % of its rate:
// one that did not is client-bound; one that did but late is only behind
// its schedule, its lateness kept out of the latency either way.
func (r *Result) DeliveredRate() bool { return r.Achieved() >= minAchieved }

// LagQuantile is the schedule lag at q.
func (r *Result) LagQuantile(q float64) time.Duration {
	if r.Lag == nil || r.Lag.TotalCount() == 0 {
		return 0
	}
	return time.Duration(r.Lag.ValueAtPercentile(q * 100))
}

// Achieved is the measured throughput as a share of the plan's rate (1
// when unpaced).
func (r *Result) Achieved() float64 {
	if r.Plan.Rate <= 0 {
		return 1
	}
	return r.OpsPerSec() / r.Plan.Rate
}

// OpsPerSec is the measured throughput.
func (r *Result) OpsPerSec() float64 {
	if r.Total == nil || r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Total.Ops) / r.Elapsed.Seconds()
}

// Run admits, runs and cleans up one burst. It never returns with burst
// keys left behind unless the cleanup itself failed (then they expire by
// their TTL, and CleanupError says why).
func (b *Runner) Run(ctx context.Context, plan Plan) Result {
	res := Result{Plan: plan, Start: time.Now(), KeysWritten: -1}
	if d := b.Admit(ctx, plan, &res); !d.OK() {
		res.decide(d)
		b.logResult(&res)
		return res
	}
	written := newWrittenKeys(plan)
	b.load(ctx, plan, written, &res)
	b.cleanup(ctx, plan, written, &res)
	b.logResult(&res)
	return res
}

// Admit reads INFO and asks the governor whether plan may start; a
// refusal is an outcome of skipped (or failed when INFO is unreadable).
func (b *Runner) Admit(ctx context.Context, plan Plan, res *Result) Decision {
	if ctx.Err() != nil {
		return Decision{Outcome: OutcomeSkipped, Reason: ReasonCancelled, Detail: "the prober is stopping"}
	}
	st, err := ReadServerState(ctx, b.Control)
	if err != nil {
		return Decision{Outcome: OutcomeFailed, Reason: ReasonInfo, Detail: err.Error()}
	}
	res.Server = st
	return b.Guards.Admit(st, plan)
}

func (r *Result) decide(d Decision) {
	r.Outcome, r.Reason, r.Detail = d.Outcome, d.Reason, d.Detail
	if r.End.IsZero() {
		r.End = time.Now()
	}
}

func (b *Runner) logResult(r *Result) {
	if b.Log == nil {
		return
	}
	attrs := []any{"plan", r.Plan.Name, "outcome", r.Outcome, "reason", r.Reason}
	if r.Detail != "" {
		attrs = append(attrs, "detail", r.Detail)
	}
	if r.Total != nil {
		attrs = append(attrs, "ops", r.Total.Ops, "ops_per_second", int64(r.OpsPerSec()),
			"p99", r.Total.Quantile(0.99), "bytes_written", r.BytesWritten, "keys_deleted", r.KeysDeleted)
	}
	switch {
	case r.CleanupError != "":
		b.Log.Warn("burst keys not all deleted; they expire by their TTL", append(attrs, "err", r.CleanupError, "ttl", r.Plan.KeyTTL)...)
	case r.Outcome == OutcomeCompleted:
		b.Log.Info("burst completed", append(attrs, "bound", r.Bound)...)
	default:
		b.Log.Warn("burst "+string(r.Outcome), attrs...)
	}
}

// cleanup deletes what the burst wrote (UNLINK in batches), on a budget of
// its own: it runs after a cancel too. Every key is marked before it is
// written, so the tracked set is exact; the SCAN sweep of the burst
// namespace runs only when the key range was too large to track, because
// SCAN walks the whole keyspace and that is no cost to pay on a large
// production dataset after every burst. TTLs are the last resort.
func (b *Runner) cleanup(ctx context.Context, plan Plan, written *writtenKeys, res *Result) {
	if b.beforeCleanup != nil {
		b.beforeCleanup()
	}
	timeout := b.CleanupTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	res.KeysWritten = written.Count()
	n, err := written.unlinkAll(cctx, b.Control, plan.Namespace)
	res.KeysDeleted = n
	if err == nil && written == nil {
		err = prober.SweepKeys(cctx, b.Control, KeyPattern(plan.Namespace))
	}
	if err != nil {
		res.CleanupError = err.Error()
	}
}

// burstLoad is the shared state of one running load.
type burstLoad struct {
	b       *Runner
	plan    Plan
	written *writtenKeys
	pacer   *prober.Timetable // the slots of the total rate, counted from t0
	ideal   *idealPool        // the ideal client's connections (see loadWorker.wireTime)
	// slots carries the paced slots from the dispatcher to the clients,
	// oldest first (nil when unpaced: clients claim from pacer at once).
	slots      chan int64
	dispatched atomic.Int64 // the next slot the dispatcher will hand out
	taken      atomic.Int64 // the event loop's: the next slot it will hand out
	// wake rouses the event loop when the load stops (nil without one).
	wakeMu      sync.Mutex
	wake        func()
	t0          time.Time
	warmEnd     time.Duration // since t0
	end         time.Duration // since t0
	shards      []*statShard
	clients     []*loadClient
	requests    atomic.Int64 // measured requests claimed
	bytes       atomic.Int64
	interrupted atomic.Int64

	stopped  atomic.Bool
	stopCh   chan struct{}
	stopOnce sync.Once
	mu       sync.Mutex
	decision Decision
	bound    string

	connMu sync.Mutex
	conns  []net.Conn
	closed bool
}

// loadClient is one connection's worker; the governor reads its in-flight
// batch to charge a stall while it lasts.
type loadClient struct {
	inflightFrom atomic.Int64 // start of the oldest outstanding request as charged, since t0
	inflightN    atomic.Int64
}

// stop ends the load. An abort also closes the connections so requests
// stuck on a stalled server return at once; a bound lets them finish.
func (l *burstLoad) stop(d Decision, bound string) {
	l.stopOnce.Do(func() {
		l.mu.Lock()
		l.decision, l.bound = d, bound
		l.mu.Unlock()
		l.stopped.Store(true)
		close(l.stopCh)
		if !d.OK() {
			l.closeConns()
		}
		l.wakeMu.Lock()
		if l.wake != nil {
			l.wake()
		}
		l.wakeMu.Unlock()
	})
}

// setWake sets what rouses the event loop on a stop.
func (l *burstLoad) setWake(f func()) {
	l.wakeMu.Lock()
	l.wake = f
	l.wakeMu.Unlock()
}

func (l *burstLoad) closeConns() {
	l.connMu.Lock()
	defer l.connMu.Unlock()
	l.closed = true
	for _, c := range l.conns {
		_ = c.Close()
	}
}

// register keeps a new burst socket so an abort can close it; after an
// abort it refuses, so no connection outlives the burst.
func (l *burstLoad) register(c net.Conn) error {
	l.connMu.Lock()
	defer l.connMu.Unlock()
	if l.closed {
		return fmt.Errorf("burst stopped")
	}
	l.conns = append(l.conns, c)
	return nil
}

// load runs the clients until a bound, an abort or ctx ends them.
func (b *Runner) load(ctx context.Context, plan Plan, written *writtenKeys, res *Result) {
	l := &burstLoad{b: b, plan: plan, written: written, stopCh: make(chan struct{}), ideal: newIdealPool(plan.Clients)}
	nShards := min(plan.Clients, 4)
	for range nShards {
		l.shards = append(l.shards, newStatShard(plan.CommandNames()))
	}
	defer l.closeConns()

	// Every connection is open before the clock starts, so no request is
	// charged for a dial.
	conns := make([]*burstConn, plan.Clients)
	var dialErr error
	var dialMu sync.Mutex
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := dialBurst(ctx, b.Endpoint, plan.Timeout, burstLimits(plan), plan.Rate > 0, l.register)
			dialMu.Lock()
			defer dialMu.Unlock()
			if err != nil && dialErr == nil {
				dialErr = err
			}
			conns[i] = c
		}()
	}
	wg.Wait()
	if dialErr != nil {
		reason := ReasonConnect
		if ctx.Err() != nil {
			reason = ReasonCancelled
		}
		res.decide(Decision{Outcome: OutcomeFailed, Reason: reason, Detail: "open burst connections: " + dialErr.Error()})
		return
	}

	cpu0 := processCPU()
	l.t0 = time.Now()
	l.warmEnd = plan.Warmup
	l.end = plan.Duration()
	l.pacer = prober.NewTimetable(l.t0, prober.IntervalFor(plan.Rate))
	res.Start, res.MeasureStart = l.t0, l.t0.Add(plan.Warmup)

	seq := mixSequence(plan.Mix)
	var cw sync.WaitGroup
	for range conns {
		l.clients = append(l.clients, &loadClient{})
	}
	if loop := l.eventLoop(ctx, conns, seq); loop != nil {
		cw.Add(1)
		go func() { defer cw.Done(); loop.run() }()
	} else {
		if plan.Rate > 0 {
			l.slots = make(chan int64, slotQueue(plan))
			cw.Add(1)
			go func() { defer cw.Done(); l.dispatch() }()
		}
		for i := range conns {
			cw.Add(1)
			go func() {
				defer cw.Done()
				newLoadWorker(l, i, l.clients[i], conns[i], l.shards[i%nShards], seq).run(ctx)
			}()
		}
	}
	monitorDone := make(chan struct{})
	var mw sync.WaitGroup
	mw.Add(2)
	go func() { defer mw.Done(); l.monitor(ctx, monitorDone) }()
	go func() { defer mw.Done(); l.watchServer(ctx, monitorDone) }()
	cw.Wait()
	close(monitorDone)
	mw.Wait()
	l.stop(Decision{}, "test-time") // no-op when something stopped it already

	res.End = time.Now()
	if wall := res.End.Sub(l.t0); wall > 0 {
		res.ClientCPU = float64(processCPU()-cpu0) / float64(wall)
	}
	l.mu.Lock()
	d, bound := l.decision, l.bound
	l.mu.Unlock()
	if d.OK() {
		res.Outcome, res.Reason, res.Bound = OutcomeCompleted, ReasonNone, bound
	} else {
		res.decide(d)
	}
	l.summarize(res)
}

// summarize merges the shards into the result.
func (l *burstLoad) summarize(res *Result) {
	res.Total = newCommandStats("totals")
	res.Commands = nil
	res.Lag, res.Stamped = newLatencyHist(), 0
	var lastEnd time.Duration
	for _, s := range l.shards {
		s.mu.Lock()
		lastEnd = max(lastEnd, s.lastEnd)
		res.Lag.Merge(s.lag)
		res.Stamped += s.stamped
		s.mu.Unlock()
	}
	for i, name := range l.plan.CommandNames() {
		c := newCommandStats(name)
		for _, s := range l.shards {
			s.mu.Lock()
			c.merge(s.cmds[i])
			s.mu.Unlock()
		}
		res.Commands = append(res.Commands, c)
		res.Total.merge(c)
	}
	res.BytesWritten = min(l.bytes.Load(), l.plan.MaxBytes)
	res.Interrupted = l.interrupted.Load()
	res.Elapsed = lastEnd - l.warmEnd
	if res.Elapsed <= 0 {
		res.Elapsed = res.End.Sub(res.MeasureStart)
	}
}

// mixSequence spreads the weights into one cycle (1:10 gives one SET and
// ten GETs), so every client sends the exact ratio over each cycle.
func mixSequence(mix []MixEntry) []int {
	var seq []int
	total := 0
	for _, m := range mix {
		total += m.Weight
	}
	// Smooth weighted round robin: the cycle interleaves rather than
	// sending all GETs then all SETs.
	cur := make([]int, len(mix))
	for range total {
		best := 0
		for i, m := range mix {
			cur[i] += m.Weight
			if cur[i] > cur[best] {
				best = i
			}
		}
		cur[best] -= total
		seq = append(seq, best)
	}
	return seq
}

// A client whose connection failed (a refused dial, a handshake or a reply
// that broke the stream) waits before it dials again, twice as long after
// each failure in a row: a dead or garbage-speaking server sees a trickle of
// dials until the error budget ends the burst, not thousands a second.
const (
	redialPause    = 50 * time.Millisecond
	redialPauseMax = time.Second
)

func nextRedialPause(d time.Duration) time.Duration {
	return min(max(2*d, redialPause), redialPauseMax)
}

// burstLimits bounds each reply on a burst connection: values of the
// plan's size (MGET reads a few of them), and the small arrays the other
// commands return.
func burstLimits(p Plan) resp.Limits {
	bulk := int64(max(p.DataSize, p.DataMax, 64<<10)) + 64
	return resp.Limits{Name: "burst", MaxBulk: bulk, MaxElems: 4096, MaxDepth: 4,
		MaxLine: 64 << 10, MaxReply: (mgetKeys + 4) * bulk}
}

// requestResult classifies the outcome of one request of a burst.
func requestResult(err error) prober.Result {
	if err == nil {
		return prober.ResultOK
	}
	if _, ok := err.(resp.ErrorReply); ok {
		return prober.ResultError
	}
	var ne net.Error
	if errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return prober.ResultTimeout
	}
	return prober.ResultError
}

func (l *burstLoad) isAborted() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.decision.OK()
}
