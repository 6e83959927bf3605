// Package engine owns time and lifecycles: it starts one set of loops per
// target (probe, connect probe, key keeper), staggers them, applies a new
// target list without disturbing unchanged targets, and stops everything
// cleanly, deleting the probe keys on the way out.
package engine

import (
	"context"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/prober"
)

// Target is everything the engine needs to run one Redis target.
type Target struct {
	Name            string
	Endpoint        prober.Endpoint
	Probe           prober.ProbeConfig
	ConnectInterval time.Duration
	SeedInterval    time.Duration
	Objective       time.Duration
}

// Config is the whole set of targets and process-wide samplers.
type Config struct {
	Targets           []Target
	IntrinsicWindow   time.Duration
	IntrinsicInterval time.Duration
	// CleanupTimeout bounds the deletion of probe keys at stop.
	CleanupTimeout time.Duration
}

// Service runs beside the probe of every target for as long as the target
// runs: a collector's refresh loop, periodic bursts, change detection. It
// gets the target's context (cancelled when the target stops or is removed)
// and the target's control client, a go-redis client kept apart from the
// probe connections. RunTarget returns when ctx is done and must leave no
// goroutine, key or series of the target behind.
type Service interface {
	Name() string
	RunTarget(ctx context.Context, t Target, control *redis.Client)
}

// Engine runs the targets of a Config.
type Engine struct {
	log      *slog.Logger
	metrics  *prober.Metrics
	services []Service
	ready    atomic.Bool

	mu      sync.Mutex
	running map[string]*runningTarget
	cfg     Config
}

type runningTarget struct {
	cfg    Target
	cancel context.CancelFunc
	done   chan struct{}
}

// New registers the prober metrics on reg and returns an engine that has not
// started yet. services run per target beside the probe.
func New(reg prometheus.Registerer, log *slog.Logger, services ...Service) *Engine {
	return &Engine{log: log, metrics: prober.NewMetrics(reg), services: services, running: map[string]*runningTarget{}}
}

// NewWithMetrics is New for callers that build the services from the same
// Metrics (bursts record into the shared latency histogram).
func NewWithMetrics(m *prober.Metrics, log *slog.Logger, services ...Service) *Engine {
	return &Engine{log: log, metrics: m, services: services, running: map[string]*runningTarget{}}
}

// Metrics exposes the shared recorders, for bursts and collectors wired by
// the caller.
func (e *Engine) Metrics() *prober.Metrics { return e.metrics }

// Ready reports whether the engine has started its targets.
func (e *Engine) Ready() bool { return e.ready.Load() }

// Run applies cfg and runs until ctx is done, then stops every target and
// returns when all of them are stopped and cleaned up.
func (e *Engine) Run(ctx context.Context, cfg Config) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		prober.IntrinsicSampler{Window: cfg.IntrinsicWindow, Interval: cfg.IntrinsicInterval,
			Observer: e.metrics.Intrinsic()}.Run(ctx)
	}()
	e.Apply(ctx, cfg)
	e.ready.Store(true)
	<-ctx.Done()
	e.ready.Store(false)
	e.Apply(ctx, Config{CleanupTimeout: cfg.CleanupTimeout})
	wg.Wait()
}

// Apply makes the running targets match cfg: targets that are gone or changed
// stop (and their series go), new ones start, unchanged ones keep running
// with their histograms and connections. parent bounds the new targets.
func (e *Engine) Apply(parent context.Context, cfg Config) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cfg.CleanupTimeout = cfg.CleanupTimeout
	want := map[string]Target{}
	for _, t := range cfg.Targets {
		want[t.Name] = t
	}
	var stopping []*runningTarget
	for name, rt := range e.running {
		if t, ok := want[name]; ok && reflect.DeepEqual(t, rt.cfg) {
			continue
		}
		rt.cancel()
		stopping = append(stopping, rt)
		delete(e.running, name)
	}
	for _, rt := range stopping {
		<-rt.done
		e.metrics.Forget(rt.cfg.Name)
	}
	if parent.Err() != nil {
		return
	}
	n := len(cfg.Targets)
	for i, t := range cfg.Targets {
		if _, ok := e.running[t.Name]; ok {
			continue
		}
		// Spread the first probes of all targets over one probe interval
		// so hundreds of targets never fire in the same instant.
		if n > 1 && t.Probe.Rate > 0 {
			t.Probe.Offset = time.Duration(float64(time.Second) / t.Probe.Rate * float64(i) / float64(n))
		}
		ctx, cancel := context.WithCancel(parent)
		rt := &runningTarget{cfg: t, cancel: cancel, done: make(chan struct{})}
		rt.cfg.Probe.Offset = 0 // compare configs without the stagger
		e.running[t.Name] = rt
		go func() {
			defer close(rt.done)
			e.runTarget(ctx, t, cfg.CleanupTimeout)
		}()
	}
}

// runTarget runs the loops of one target and cleans up after them.
func (e *Engine) runTarget(ctx context.Context, t Target, cleanupTimeout time.Duration) {
	log := e.log.With("target", t.Name)
	names := make([]string, len(t.Probe.Commands))
	for i, c := range t.Probe.Commands {
		names[i] = c.Name
	}
	rec := e.metrics.ForTarget(t.Name, names, t.Objective)
	faults := prober.NewFaultLog(log)
	control := t.Endpoint.NewClient(t.Probe.Timeout, 2)
	defer control.Close()
	keeper := prober.NewKeeper(control, t.Probe)

	log.Info("probing target", "endpoint", t.Endpoint.String(), "rate", t.Probe.Rate,
		"commands", names, "connections", t.Probe.Connections)
	var wg sync.WaitGroup
	run := func(f func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f()
		}()
	}
	run(func() { keeper.Run(ctx, t.SeedInterval) })
	run(func() { prober.NewProbe(t.Probe, t.Endpoint, rec, faults).Run(ctx) })
	for _, svc := range e.services {
		run(func() { svc.RunTarget(ctx, t, control) })
	}
	if t.ConnectInterval > 0 {
		run(func() {
			prober.NewConnectProbe(t.Endpoint, t.Probe.Timeout, rec, faults).Run(ctx, t.ConnectInterval)
		})
	}
	wg.Wait()

	// The parent is done; cleaning up gets its own short budget.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := keeper.Cleanup(cctx); err != nil {
		log.Warn("could not delete probe keys; they expire by their TTL", "err", err, "ttl", t.Probe.KeyTTL)
	} else {
		log.Debug("probe keys deleted")
	}
}
