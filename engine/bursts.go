package engine

import (
	"context"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/internal/nodeid"
	"github.com/redis-prober/redis-prober/prober"
	"github.com/redis-prober/redis-prober/prober/burst"
)

// BurstsConfig is the periodic burst of run mode.
type BurstsConfig struct {
	// Interval between two bursts on one node; 0 disables bursts.
	Interval time.Duration
	// Plan is the load; its namespace tag is replaced by the node's, so
	// Cluster bursts land in slots the node owns.
	Plan   burst.Plan
	Guards burst.Guards
	// Steps, when set, makes every run a step-load capacity search (whose
	// rates stay at most Steps.MaxRate).
	Steps *burst.StepPlan
	// MaxConcurrent bounds the bursts running at once across all targets,
	// so the prober's own CPU is never the bottleneck of a burst.
	MaxConcurrent  int
	CleanupTimeout time.Duration
}

// Bursts is the engine service that runs bounded bursts on every target
// node, beside the probe: the probe goes on over its own connections during
// a burst, so the dashboard shows what ordinary clients felt.
type Bursts struct {
	cfg     BurstsConfig
	log     *slog.Logger
	metrics *prober.Metrics
	bm      *burst.Metrics
	slots   chan struct{}

	// last is the last burst of each running node, for the status page:
	// one small value a node, dropped when the node's loop ends.
	mu   sync.Mutex
	last map[nodeid.ID]LastBurst
}

// LastBurst is what the status page shows of a node's last burst.
type LastBurst struct {
	Plan    string
	Outcome burst.Outcome
	// Reason is one of the bounded prober.Reason* values; Detail is the
	// governor's or the dialer's sentence about it (no credentials: the
	// endpoint's address never carries them).
	Reason, Detail string
	// OpsPerSec and P99 are over the measured requests; 0 when the burst
	// sent none (skipped, failed to start).
	OpsPerSec float64
	P99       time.Duration
	Requests  int64
	// Capacity is the step-load's highest rate that met the objective; 0
	// for a plain burst or a search that did not complete.
	Capacity float64
	End      time.Time
}

var _ Service = (*Bursts)(nil)

// NewBursts returns the service. metrics is the shared per-request
// registry (bursts record with phase="burst"); bm holds the burst series.
func NewBursts(cfg BurstsConfig, log *slog.Logger, metrics *prober.Metrics, bm *burst.Metrics) *Bursts {
	n := max(cfg.MaxConcurrent, 1)
	return &Bursts{cfg: cfg, log: log, metrics: metrics, bm: bm, slots: make(chan struct{}, n), last: map[nodeid.ID]LastBurst{}}
}

// Name names the service in logs.
func (b *Bursts) Name() string { return "bursts" }

// staggerOffset spreads the first burst of each node over one interval by a
// hash of its name, so a restart or a reload never lines all targets up.
func staggerOffset(key string, interval time.Duration) time.Duration {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return time.Duration(h.Sum64() % uint64(interval))
}

// Attach runs the node's bursts on a goroutine of their own (a burst lasts
// seconds: on the housekeeping loop it would hold the node's other tasks
// up).
func (b *Bursts) Attach(n Node) NodeHooks {
	if b.cfg.Interval <= 0 {
		return NodeHooks{}
	}
	return NodeHooks{Run: func(ctx context.Context) { b.run(ctx, n.Target, n.Control) }}
}

// run runs the bursts of one node until ctx is done. Bursts on one node
// run one after the other, never overlapping; a burst in progress when ctx
// ends is aborted and its keys deleted before run returns.
func (b *Bursts) run(ctx context.Context, t Target, control *redis.Client) {
	log := t.Logger(b.log, "service", "bursts")
	if t.ReadOnly && !b.cfg.Guards.AllowReplica {
		log.Debug("no bursts on a replica node")
		return
	}
	plan := b.cfg.Plan
	plan.Namespace = t.Probe.Namespace
	burster := &burst.Runner{
		Endpoint:       t.Endpoint,
		Control:        control,
		Guards:         b.cfg.Guards,
		Recorder:       b.metrics.NodeCommands(t.Name, t.Node, prober.PhaseBurst, plan.CommandNames()),
		Log:            log,
		CleanupTimeout: b.cfg.CleanupTimeout,
	}
	b.bm.Init(t.Name, t.Node, plan.Name)
	defer b.bm.ForgetNode(t.Name, t.Node)
	defer b.forget(t)

	wait := time.NewTimer(staggerOffset(t.Name+"|"+t.Node, b.cfg.Interval))
	defer wait.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-wait.C:
		}
		started := time.Now()
		select {
		case b.slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		if ctx.Err() != nil {
			// Both were ready and select took the slot: a burst not
			// started is no burst, not one skipped as cancelled.
			<-b.slots
			return
		}
		b.runOnce(ctx, t, burster, plan)
		<-b.slots
		// The next burst is an interval after this one started, never
		// sooner than half an interval after it ended.
		wait.Reset(max(b.cfg.Interval-time.Since(started), b.cfg.Interval/2))
	}
}

// runOnce runs one burst or search and records it. Observe goes last: its
// runs counter says the burst is over, so a scrape that counts it finds the
// capacity and the status page's last burst already recorded.
func (b *Bursts) runOnce(ctx context.Context, t Target, burster *burst.Runner, plan burst.Plan) {
	if b.cfg.Steps == nil {
		res := burster.Run(ctx, plan)
		b.remember(t, &res, 0)
		b.bm.Observe(t.Name, t.Node, &res)
		return
	}
	res := burster.RunSteps(ctx, plan, *b.cfg.Steps)
	var capacity float64
	if res.Final.Outcome == burst.OutcomeCompleted {
		b.bm.ObserveCapacity(t.Name, t.Node, plan.Name, res.Capacity)
		capacity = res.Capacity
	}
	b.remember(t, &res.Final, capacity)
	b.bm.Observe(t.Name, t.Node, &res.Final)
}

func (b *Bursts) remember(t Target, r *burst.Result, capacity float64) {
	lb := LastBurst{Plan: r.Plan.Name, Outcome: r.Outcome, Reason: r.Reason, Detail: r.Detail,
		OpsPerSec: r.OpsPerSec(), Capacity: capacity, End: r.End}
	if lb.End.IsZero() {
		lb.End = r.Start
	}
	if r.Total != nil && r.Total.Ops > 0 {
		lb.P99, lb.Requests = r.Total.Quantile(0.99), r.Total.Ops
	}
	b.mu.Lock()
	b.last[t.ID()] = lb
	b.mu.Unlock()
}

func (b *Bursts) forget(t Target) {
	b.mu.Lock()
	delete(b.last, t.ID())
	b.mu.Unlock()
}

// LastBurst is the last burst of a running node; false before its first
// burst, when bursts are off or when the node does not run them (a replica).
func (b *Bursts) LastBurst(id nodeid.ID) (LastBurst, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	lb, ok := b.last[id]
	return lb, ok
}
