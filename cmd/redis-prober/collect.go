package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/collector"
	"github.com/redis-prober/redis-prober/engine"
)

// pathFlags are the roots of /proc and /sys; run and doctor share them.
type pathFlags struct {
	procfs, sysfs *string
}

func addPathFlags(g flagGroup) pathFlags {
	return pathFlags{
		procfs: g.Flag("path.procfs", "procfs mountpoint (the host's /proc mounted into a container, e.g. /host/proc).").Default("/proc").String(),
		sysfs:  g.Flag("path.sysfs", "sysfs mountpoint (the host's /sys mounted into a container, e.g. /host/sys).").Default("/sys").String(),
	}
}

func (p pathFlags) paths() collector.Paths {
	return collector.Paths{ProcFS: *p.procfs, SysFS: *p.sysfs}
}

// addCollectorRunFlags declares the collector flags of `run`: one
// --collector.<name> / --no-collector.<name> per entry of collector.All(),
// --path.procfs, --path.sysfs and --collector.refresh-interval. Its
// extension registers the host collectors once and returns the service that
// runs the Redis-side collectors of each target.
func addCollectorRunFlags(g flagGroup) extension {
	enabled := map[string]*bool{}
	for _, d := range collector.All() {
		enabled[d.Name] = g.Flag("collector."+d.Name, d.Help+" Disable with --no-collector."+d.Name+".").Default("true").Bool()
	}
	paths := addPathFlags(g)
	interval := durationFlag(g, "collector.refresh-interval",
		"How often the Redis-side collectors read INFO, LATENCY and CONFIG; scrapes read the cache and never call Redis.", "5s")
	serverClassic := g.Flag("collector.server-latency.classic-buckets",
		"Add classic buckets (22 series a probed command) to redis_prober_server_latency_seconds beside its native ones, for a Prometheus that does not ingest native histograms.").Bool()

	return func(env extensionEnv) ([]engine.Service, error) {
		if *interval < 100*time.Millisecond {
			return nil, usagef("--collector.refresh-interval: %v must be at least 100ms", *interval)
		}
		on := collector.Enabled{}
		var host, target bool
		for _, d := range collector.All() {
			if !*enabled[d.Name] {
				continue
			}
			on[d.Name] = true
			host = host || d.Kind == collector.KindHost
			target = target || d.Kind == collector.KindTarget
		}
		if host {
			if err := env.reg.Register(collector.NewHost(paths.paths(), on, env.log)); err != nil {
				return nil, fmt.Errorf("register host collectors: %w", err)
			}
		}
		if !target {
			return nil, nil
		}
		svc := &collectorService{
			log:      env.log,
			reg:      env.reg,
			paths:    paths.paths(),
			enabled:  on,
			interval: *interval,
			classic:  *serverClassic,
			// Half an interval: every target's refresh within it reads
			// the same process once.
			processes: collector.NewProcessCache(*interval / 2),
			hostFacts: collector.NewHostFactsCache(*interval / 2),
		}
		if env.metrics != nil {
			if m, ok := env.metrics.Intrinsic().(prometheus.Metric); ok {
				svc.intrinsic = m
			}
		}
		return []engine.Service{svc}, nil
	}
}

// collectorService runs the Redis-side collectors of every target (every
// node of a Cluster or Sentinel target): it refreshes their cache on the
// interval and keeps them registered while the target runs.
type collectorService struct {
	log       *slog.Logger
	reg       prometheus.Registerer
	paths     collector.Paths
	enabled   collector.Enabled
	interval  time.Duration
	intrinsic prometheus.Metric // the prober's intrinsic-latency histogram, if any
	classic   bool              // classic buckets on the server-side latency histogram
	processes *collector.ProcessCache
	hostFacts *collector.HostFactsCache
	checks    checkBoard // for the status page
}

var _ engine.TaskService = (*collectorService)(nil)

func (s *collectorService) Name() string { return "collector" }

// RunTarget refreshes the target's collectors until ctx is done and
// unregisters them on the way out. The engine runs the same work as
// NodeTasks, on the node's housekeeping loop.
func (s *collectorService) RunTarget(ctx context.Context, t engine.Target, control *redis.Client) {
	tasks, done := s.NodeTasks(t, control)
	defer done()
	engine.RunTasks(ctx, tasks)
}

// NodeTasks is the node's refresh on the interval. The first refresh
// registers the target's collectors (so a scrape never sees them empty);
// done unregisters them.
func (s *collectorService) NodeTasks(t engine.Target, control *redis.Client) ([]engine.Task, func()) {
	log := s.log.With("target", t.Name)
	if t.Node != "" {
		log = log.With("node", t.Node)
	}
	cmds := make([]string, len(t.Probe.Commands))
	for i, c := range t.Probe.Commands {
		cmds[i] = c.Name
	}
	cfg := collector.TargetConfig{
		Name: t.Name, Node: t.Node, Commands: cmds, Paths: s.paths, Enabled: s.enabled, Log: log,
		ServerClassicBuckets: s.classic, Processes: s.processes, HostFacts: s.hostFacts,
	}
	if s.intrinsic != nil {
		cfg.Intrinsic = newIntrinsicReader(s.intrinsic).worst
	}
	tgt := collector.NewTarget(cfg, control)
	var registered, failed bool
	var unboard func()
	run := func(ctx context.Context) {
		if failed {
			return
		}
		s.refresh(ctx, tgt)
		if registered {
			return
		}
		if err := s.reg.Register(tgt); err != nil {
			log.Error("cannot register the target's collectors", "err", err)
			failed = true
			return
		}
		registered, unboard = true, s.checks.add(t, tgt)
	}
	done := func() {
		if registered {
			unboard()
			s.reg.Unregister(tgt)
		}
	}
	return []engine.Task{{Every: s.interval, Run: run}}, done
}

// refresh bounds one refresh by the interval, so a slow Redis never piles
// refreshes up.
func (s *collectorService) refresh(ctx context.Context, tgt *collector.Target) {
	rctx, cancel := context.WithTimeout(ctx, s.interval)
	defer cancel()
	tgt.Refresh(rctx)
}

// intrinsicReader turns the prober's intrinsic-latency histogram into "the
// worst scheduling gap since the last call", at the resolution of its
// classic buckets (which have a bound at exactly 1 ms, the check's
// threshold). Each target has its own reader, so each sees every window.
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
