package engine

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/redis-prober/redis-prober/collector"
	"github.com/redis-prober/redis-prober/internal/host"
	"github.com/redis-prober/redis-prober/internal/nodeid"
)

// CollectorsConfig is the Redis-side collectors' part of run mode.
type CollectorsConfig struct {
	Log        *slog.Logger
	Registerer prometheus.Registerer // the collectors of every node register here, once
	Paths      host.Paths
	Enabled    collector.Enabled
	Interval   time.Duration // of the refresh (--collector.refresh-interval)
	// ServerClassicBuckets adds classic buckets to the server-side latency
	// histogram.
	ServerClassicBuckets bool
	// Duration exports every node's redis_prober_collector_duration_seconds
	// (collector.TargetConfig.Duration).
	Duration bool
	// Intrinsic is the prober's intrinsic-latency histogram, if any: the
	// intrinsic_latency host check reads it.
	Intrinsic prometheus.Metric
}

// Collectors runs the Redis-side collectors of every target (every node of
// a Cluster or Sentinel target): it refreshes their cache on the interval,
// on the node's housekeeping loop, and keeps them in the one registered
// collector set while the node runs.
type Collectors struct {
	log       *slog.Logger
	targets   *collector.Targets // registered once; a node's target joins on its first refresh
	paths     host.Paths
	enabled   collector.Enabled
	interval  time.Duration
	classic   bool
	duration  bool
	processes *collector.ProcessCache
	hostFacts *collector.HostFactsCache
	// hostChecks are the host-scope checks, once for the process; nil
	// with the checks collector off.
	hostChecks *collector.HostChecks
	checks     checkBoard // for the status page
}

// NewCollectors returns the collector service of cfg.
func NewCollectors(cfg CollectorsConfig) *Collectors {
	s := &Collectors{
		log: cfg.Log, targets: collector.NewTargets(), paths: cfg.Paths, enabled: cfg.Enabled,
		interval: cfg.Interval, classic: cfg.ServerClassicBuckets, duration: cfg.Duration,
		// Half an interval: every target's refresh within it reads the
		// same process and host state once.
		processes: collector.NewProcessCache(cfg.Interval / 2),
		hostFacts: collector.NewHostFactsCache(cfg.Interval / 2),
	}
	registered := []prometheus.Collector{s.targets, s.targets.Health()}
	if cfg.Enabled["checks"] {
		// One intrinsic reader for the one set of host checks, refreshed
		// by whichever node's refresh comes first in a host read.
		hc := collector.HostChecksConfig{Paths: cfg.Paths, Facts: s.hostFacts}
		if cfg.Intrinsic != nil {
			hc.Intrinsic = newIntrinsicReader(cfg.Intrinsic).worst
		}
		s.hostChecks = collector.NewHostChecks(hc)
		registered = append(registered, s.hostChecks)
	}
	if cfg.Registerer != nil {
		for _, c := range registered {
			if err := cfg.Registerer.Register(c); err != nil {
				// The checks still run for the status page.
				s.log.Error("cannot register the Redis-side collectors; their series are absent", "err", err)
			}
		}
	}
	return s
}

var _ Service = (*Collectors)(nil)

func (s *Collectors) Name() string { return "collector" }

// Attach refreshes the node's collectors on its housekeeping loop, on the
// interval. The first refresh adds the node to the collector set (so a
// scrape never sees it empty); Done removes it. The per-command series
// follow the target's commands, a replica's too.
func (s *Collectors) Attach(n Node) NodeHooks {
	t, control := n.Target, n.Control
	log := t.Logger(s.log)
	cmds := commandNames(t.Probe.Commands)
	cfg := collector.TargetConfig{
		Name: t.Name, Node: t.Node, Commands: cmds, Paths: s.paths, Enabled: s.enabled, Log: log,
		ServerClassicBuckets: s.classic, Duration: s.duration, Processes: s.processes, HostFacts: s.hostFacts, HostChecks: s.hostChecks,
		Spell: n.Spell,
	}
	tgt := s.targets.NewTarget(cfg, control)
	var failed bool
	var remove, unboard func()
	run := func(ctx context.Context) {
		if failed {
			return
		}
		s.refresh(ctx, tgt)
		if remove != nil {
			return
		}
		r, err := s.targets.Add(tgt)
		if err != nil {
			log.Error("cannot add the target's collectors", "err", err)
			failed = true
			return
		}
		remove, unboard = r, s.checks.add(t, tgt)
	}
	done := func() {
		if remove != nil {
			unboard()
			remove()
		}
	}
	return NodeHooks{Tasks: []Task{{Every: s.interval, Run: run}}, Done: done}
}

// refresh bounds one refresh by the interval, so a slow Redis never piles
// refreshes up.
func (s *Collectors) refresh(ctx context.Context, tgt *collector.Target) {
	rctx, cancel := context.WithTimeout(ctx, s.interval)
	defer cancel()
	tgt.Refresh(rctx)
}

// intrinsicReader turns the prober's intrinsic-latency histogram into "the
// worst scheduling gap since the last call", at the resolution of its
// classic buckets (which have a bound at exactly 1 ms, the check's
// threshold). The host checks have the one reader, so they see every window.
type intrinsicReader struct {
	h    prometheus.Metric
	mu   sync.Mutex
	prev []uint64 // cumulative counts at the last call
	n    uint64
}

func newIntrinsicReader(h prometheus.Metric) *intrinsicReader { return &intrinsicReader{h: h} }

// worst returns the smallest bucket bound that holds every sample taken
// since the previous call; ok is false when there was none.
func (r *intrinsicReader) worst() (time.Duration, bool) {
	var m dto.Metric
	if err := r.h.Write(&m); err != nil || m.GetHistogram() == nil {
		return 0, false
	}
	h := m.GetHistogram()
	r.mu.Lock()
	defer r.mu.Unlock()
	cum := make([]uint64, len(h.GetBucket()))
	for i, b := range h.GetBucket() {
		cum[i] = b.GetCumulativeCount()
	}
	prev, prevN := r.prev, r.n
	r.prev, r.n = cum, h.GetSampleCount()
	if len(prev) != len(cum) {
		prev = make([]uint64, len(cum))
		prevN = 0
	}
	fresh := h.GetSampleCount() - prevN
	if fresh == 0 {
		return 0, false
	}
	for i, b := range h.GetBucket() {
		if cum[i]-prev[i] == fresh {
			return time.Duration(b.GetUpperBound() * float64(time.Second)), true
		}
	}
	// Beyond the largest bucket: twice its bound, a lower bound of the truth.
	if n := len(h.GetBucket()); n > 0 {
		return time.Duration(2 * h.GetBucket()[n-1].GetUpperBound() * float64(time.Second)), true
	}
	return 0, false
}

// checkBoard holds the collector target of every running node, so the
// status page can list the checks that fail at their last evaluation. One
// pointer a running node, removed when the node stops; the zero value is
// ready.
type checkBoard struct {
	mu    sync.Mutex
	nodes map[nodeid.ID]*collector.Target
}

func (b *checkBoard) add(t Target, tgt *collector.Target) (remove func()) {
	key := t.ID()
	b.mu.Lock()
	if b.nodes == nil {
		b.nodes = map[nodeid.ID]*collector.Target{}
	}
	b.nodes[key] = tgt
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		if b.nodes[key] == tgt {
			delete(b.nodes, key)
		}
		b.mu.Unlock()
	}
}

var _ CheckSource = (*Collectors)(nil)

// FailingChecks serves the status page: the node's checks that failed at
// the last refresh.
func (s *Collectors) FailingChecks(id nodeid.ID) ([]collector.FailedCheck, bool) {
	s.checks.mu.Lock()
	tgt := s.checks.nodes[id]
	s.checks.mu.Unlock()
	if tgt == nil {
		return nil, false
	}
	return tgt.FailingChecks()
}

var _ HostCheckSource = (*Collectors)(nil)

// FailingHostChecks serves the status page's host section: the host
// checks that failed at their last evaluation.
func (s *Collectors) FailingHostChecks() ([]collector.FailedCheck, bool) {
	return s.hostChecks.Failing()
}
