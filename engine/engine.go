// Package engine owns time and lifecycles: it starts one set of loops per
// target (probe, connect probe, key keeper), staggers them, applies a new
// target list without disturbing unchanged targets, and stops everything
// cleanly, deleting the probe keys on the way out.
package engine

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redis-prober/redis-prober/internal/faultlog"
	"github.com/redis-prober/redis-prober/prober"
)

// Target is everything the engine needs to run one configured Redis target.
// A target is a single server, or a Redis Cluster (found by itself: any node
// with cluster_enabled:1), or the primary that Sentinels name. The engine
// expands it into nodes; each node runs its own probe, connect probe, key
// keeper and services, and its series carry a `node` label.
type Target struct {
	Name            string
	Endpoint        prober.Endpoint
	Probe           prober.ProbeConfig
	ConnectInterval time.Duration
	SeedInterval    time.Duration
	Objective       time.Duration

	// Node is set by the engine on the per-node copy handed to services:
	// "" for a single server, host:port for a Cluster or Sentinel node.
	Node string
	// ReadOnly is set on replica nodes: read commands only, no seeding.
	ReadOnly bool

	Cluster  ClusterOptions
	Sentinel *SentinelOptions
	// Discovery bounds the nodes a Cluster or Sentinel target expands into.
	Discovery DiscoveryOptions

	// Labels are extra labels from the config file, exported on
	// redis_prober_target_info.
	Labels map[string]string
	// Fingerprint stands for settings sameTarget cannot see, such as the
	// content of TLS files: a change of it restarts the target on reload.
	Fingerprint string
}

// ClusterOptions tune how a Cluster target is followed.
type ClusterOptions struct {
	// Replicas probes replicas too (READONLY, read commands only).
	Replicas bool
	// Refresh is how often the topology is read again (MOVED replies
	// trigger a refresh at once).
	Refresh time.Duration
	// Seeds are further nodes to ask for the topology when the target's
	// own address does not answer.
	Seeds []prober.Endpoint
}

// SentinelOptions say which primary to follow and where to ask.
type SentinelOptions struct {
	MasterName    string
	Sentinels     []prober.Endpoint
	ProbeReplicas bool
	Refresh       time.Duration
}

// sameTarget is what decides whether a reload changed a target: the two
// configs are compared whole (reflect.DeepEqual), so a field added to
// Target or to anything in it counts without being listed here. Only what
// cannot or must not be compared is taken out first, each for its reason
// below; TestSameTargetSeesEveryField fails on a field that does not
// count and is not on its list of exceptions.
func sameTarget(a, b Target) bool {
	if !slices.EqualFunc(a.Probe.Commands, b.Probe.Commands, sameCommand) {
		return false
	}
	return reflect.DeepEqual(forComparison(a), forComparison(b))
}

// sameCommand compares commands by their name and kind: a command's
// template is a function (of ParseCommands), which no two parses share.
func sameCommand(a, b prober.Command) bool { return a.Name == b.Name && a.Write == b.Write }

// forComparison is t without what sameTarget must not compare:
//   - Probe.Commands: compared by sameCommand;
//   - Probe.Offset: set by Apply from the target's place in the list, so
//     a target added before it does not restart it;
//   - Probe.OnError and Probe.Poller: set per node by runNode, never by
//     a config;
//   - every Endpoint's TLS: a *tls.Config holds functions and a pool that
//     no two loads share; its plain settings count (comparableTLS), the
//     content of its files counts through Fingerprint.
func forComparison(t Target) Target {
	t.Probe.Commands, t.Probe.Offset, t.Probe.OnError, t.Probe.Poller = nil, 0, nil, nil
	t.Endpoint = comparableEndpoint(t.Endpoint)
	t.Cluster.Seeds = comparableEndpoints(t.Cluster.Seeds)
	if t.Sentinel != nil {
		s := *t.Sentinel
		s.Sentinels = comparableEndpoints(s.Sentinels)
		t.Sentinel = &s
	}
	return t
}

func comparableEndpoint(ep prober.Endpoint) prober.Endpoint {
	if ep.TLS != nil {
		ep.TLS = comparableTLS(ep.TLS)
	}
	return ep
}

// comparableTLS keeps the settings config.TLS sets from the YAML; its
// certificates and CA pool are the files Target.Fingerprint hashes.
func comparableTLS(c *tls.Config) *tls.Config {
	return &tls.Config{ServerName: c.ServerName, InsecureSkipVerify: c.InsecureSkipVerify, MinVersion: c.MinVersion}
}

func comparableEndpoints(eps []prober.Endpoint) []prober.Endpoint {
	if eps == nil {
		return nil
	}
	out := make([]prober.Endpoint, len(eps))
	for i, ep := range eps {
		out[i] = comparableEndpoint(ep)
	}
	return out
}

// Config is the whole set of targets and process-wide samplers.
type Config struct {
	Targets           []Target
	IntrinsicWindow   time.Duration
	IntrinsicInterval time.Duration
	// CleanupTimeout bounds the deletion of probe keys at stop.
	CleanupTimeout time.Duration
}

// Engine runs the targets of a Config.
type Engine struct {
	log      *slog.Logger
	metrics  *prober.Metrics
	services []Service
	ready    atomic.Bool
	// poller serves every target's open probe connections from one event
	// loop (prober.Poller).
	poller *prober.Poller
	// outages are the nodes' spells of not answering, one line for the
	// nodes of a server failing together.
	outages *faultlog.Outages

	mu      sync.Mutex
	running map[string]*runningTarget
}

type runningTarget struct {
	cfg       Target
	cancel    context.CancelCauseFunc
	done      chan struct{}
	discovery *discoveryStats
}

// New registers the prober metrics on reg and returns an engine that has not
// started yet. services run per target beside the probe.
func New(reg prometheus.Registerer, log *slog.Logger, services ...Service) *Engine {
	return NewWithMetrics(prober.NewMetrics(reg), log, services...)
}

// NewWithMetrics is New for callers that build the services from the same
// Metrics (bursts record into the shared latency histogram).
func NewWithMetrics(m *prober.Metrics, log *slog.Logger, services ...Service) *Engine {
	return &Engine{log: log, metrics: m, services: services, running: map[string]*runningTarget{},
		poller: prober.NewPoller(), outages: faultlog.NewOutages(log)}
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
	want := map[string]Target{}
	for _, t := range cfg.Targets {
		want[t.Name] = t
	}
	var stopping []*runningTarget
	for name, rt := range e.running {
		t, ok := want[name]
		switch {
		case ok && sameTarget(t, rt.cfg):
			continue
		case parent.Err() != nil:
			rt.cancel(errStopping)
		case ok:
			rt.cancel(errTargetChanged)
		default:
			rt.cancel(errTargetRemoved)
		}
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
		// Start the targets themselves (discovery, seeding, collectors,
		// connect probes) spread too: hundreds of INFO calls and dials in
		// one instant would time each other out on a small host.
		delay := startSpread(n) * time.Duration(i) / time.Duration(max(n, 1))
		ctx, cancel := targetContext(parent)
		rt := &runningTarget{cfg: t, cancel: cancel, done: make(chan struct{}), discovery: &discoveryStats{}}
		e.running[t.Name] = rt
		go func() {
			defer close(rt.done)
			select {
			case <-ctx.Done():
				return
			case <-time.After(delay):
			}
			e.runGroup(ctx, &t, cfg.CleanupTimeout, rt.discovery)
		}()
	}
}

// Why a target's or node's context ends, as context.Cause tells what runs
// on it: a burst it cuts says which in its detail.
var (
	errStopping        = errors.New("the prober is stopping")
	errTargetRemoved   = errors.New("the target was removed")
	errTargetChanged   = errors.New("the target was changed by a reload")
	errNodeLeft        = errors.New("the node left the target's topology")
	errTopologyChanged = errors.New("the target's topology changed")
)

// targetContext is a target's context, cancelled with the cause Apply
// gives (removed, changed); the end of parent is the prober stopping,
// whatever parent's own cause (a signal, a plain cancel).
func targetContext(parent context.Context) (context.Context, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	unwatch := context.AfterFunc(parent, func() { cancel(errStopping) })
	return ctx, func(cause error) {
		unwatch()
		cancel(cause)
	}
}

// startSpread is how long the start of n targets is spread over: 25 ms per
// target, at most 5 s.
func startSpread(n int) time.Duration {
	return min(5*time.Second, time.Duration(n)*25*time.Millisecond)
}

// Logger is log with the node's target label, its node when it has one,
// and the extra attributes: every per-node line says where it comes from
// the same way.
func (t *Target) Logger(log *slog.Logger, attrs ...any) *slog.Logger {
	attrs = append([]any{"target", t.Name}, attrs...)
	if t.Node != "" {
		attrs = append(attrs, "node", t.Node)
	}
	return log.With(attrs...)
}
