package collector

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/internal/faultlog"
	"github.com/redis-prober/redis-prober/internal/host"
	"github.com/redis-prober/redis-prober/internal/redisinfo"
)

// Doer is the narrow slice of go-redis the Redis-side collectors use;
// *redis.Client is one.
type Doer interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// TargetConfig describes one Redis target's collectors.
type TargetConfig struct {
	Name     string   // the target label
	Node     string   // the node label: host:port in a Cluster or Sentinel target, "" for a single server
	Commands []string // probed commands (lower case), for LATENCY HISTOGRAM
	Paths    host.Paths
	Enabled  Enabled
	Log      *slog.Logger
	// ServerClassicBuckets adds classic buckets to the server-side
	// latency histogram (22 series a command) beside its native buckets,
	// for a Prometheus that does not ingest native histograms.
	ServerClassicBuckets bool
	// Duration exports redis_prober_collector_duration_seconds of the
	// target's collectors beside their success: a series per collector
	// and node that few read (the refresh is off the scrape), so it is
	// opt-in (--collector.per-target-duration).
	Duration bool
	// Processes, when set, shares /proc reads of one redis-server between
	// the targets that name it.
	Processes *ProcessCache
	// HostFacts, when set, shares the host's kernel state between targets.
	HostFacts *HostFactsCache
	// HostChecks, when set, are the process's host-scope checks: the
	// checks collector's refresh refreshes them (at most once a host
	// read), and a target has the Redis-scope checks only.
	HostChecks *HostChecks
	// Spell, when set, is the node's spell of not answering, shared with
	// its probe: a refresh Redis did not answer is logged there, once for
	// the node whoever noticed, rather than as a collector's failure.
	Spell *faultlog.Node
}

// Snapshot is what one refresh learned about a target.
type Snapshot struct {
	Time       time.Time
	Info       redisinfo.Info
	Config     map[string]string
	Events     []LatencyEvent
	Histograms []CommandHistogram
	// Commandlog is COMMANDLOG LEN of each log (Valkey 8.1+); nil when
	// not read.
	Commandlog *CommandlogLengths
	Process    *ProcessStats
	// Since is since when the server's own counters count.
	Since  ServerSince
	Host   HostFacts
	Checks []Result
	// Errors per collector name: nil when it succeeded. Collectors not
	// run are absent.
	Errors    map[string]error
	Durations map[string]time.Duration
}

// Target holds the cached Redis-side state of one target; its set
// (Targets) exports it. Refresh is the only place that talks to Redis;
// Collect reads the cache.
type Target struct {
	cfg    TargetConfig
	client Doer
	faults *faultlog.Log
	reach  reachLog // Redis not answering the node's collectors; refreshMu guards it
	set    *Targets
	sl     seriesLabels // the values of the target and node labels

	refreshMu sync.Mutex // one refresh at a time; guards the fields below
	forks     forkTracker
	since     serverSince
	capLogged map[string]bool // collectors whose drops were logged
	lastBad   string          // the absurd INFO values logged last
	// fork is the target's child of the set's fork histogram, from Add;
	// before, observations wait in pendingForks.
	fork         prometheus.Histogram
	pendingForks []float64
	// newDropped makes the target's child of the set's dropped counter,
	// from Add; before, drops wait in pendingDrops.
	newDropped   func(collector string) prometheus.Counter
	pendingDrops [len(dropCollectors)]float64
	cl           commandlogState

	mu      sync.RWMutex // guards snap and the existence of dropped's children
	snap    Snapshot
	dropped [len(dropCollectors)]prometheus.Counter // by dropCollectors index; nil until the first drop or Add
	slow    prometheus.Histogram                    // the child of the set's COMMANDLOG slow histogram; nil until the server is seen to have COMMANDLOG
}

var _ prometheus.Collector = (*Target)(nil)

// dropCollectors are the collectors that can drop series, in the order of
// Target.dropped.
var dropCollectors = [...]string{"info", "latency"}

func dropIndex(collector string) int {
	for i, c := range dropCollectors {
		if c == collector {
			return i
		}
	}
	panic("collector: " + collector + " does not drop series")
}

// NewTarget declares the series of one target, collected alone: a
// prometheus.Collector of its own (with descriptors of its own), for a
// one-off read (the doctor) and tests. The exporter adds every target to
// one Targets. A target whose labels are not valid UTF-8 has no series;
// Refresh and Snapshot work all the same. It does not call Redis; Refresh
// does.
func NewTarget(cfg TargetConfig, client Doer) *Target {
	s := NewTargets()
	t := s.NewTarget(cfg, client)
	_, _ = s.Add(t) // a new set holds nothing else
	return t
}

// NewTarget makes a target of the set, not collected until Add. It does
// not call Redis; Refresh does.
func (s *Targets) NewTarget(cfg TargetConfig, client Doer) *Target {
	if cfg.Enabled == nil {
		cfg.Enabled = AllEnabled()
	}
	return &Target{
		cfg:       cfg,
		client:    client,
		faults:    faultlog.Collectors(cfg.Log, ErrNoData),
		set:       s,
		sl:        newSeriesLabels(cfg.Name, cfg.Node),
		capLogged: map[string]bool{},
	}
}

// bind gives t its children of the set's fork histogram and dropped
// counter, and moves what waited into them; t.refreshMu is held. The
// collectors that can drop start at 0, when they run.
func (t *Target) bind(fork prometheus.Histogram, newDropped func(collector string) prometheus.Counter) {
	t.fork, t.newDropped = fork, newDropped
	for _, v := range t.pendingForks {
		fork.Observe(v)
	}
	t.pendingForks = nil
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, name := range dropCollectors {
		if t.cfg.Enabled[name] || t.pendingDrops[i] > 0 {
			t.dropped[i] = newDropped(name)
			t.dropped[i].Add(t.pendingDrops[i])
		}
	}
	t.pendingDrops = [len(dropCollectors)]float64{}
}

// observeFork records a fork of d seconds; t.refreshMu is held.
func (t *Target) observeFork(d float64) {
	if t.fork != nil {
		t.fork.Observe(d)
	} else if len(t.pendingForks) < maxForksPerRefresh {
		t.pendingForks = append(t.pendingForks, d)
	}
}

// countDropped adds n to the dropped series of collector; t.refreshMu is
// held.
func (t *Target) countDropped(collector string, n float64) {
	i := dropIndex(collector)
	if t.newDropped == nil {
		t.pendingDrops[i] += n
		return
	}
	t.mu.Lock()
	if t.dropped[i] == nil {
		t.dropped[i] = t.newDropped(collector)
	}
	c := t.dropped[i]
	t.mu.Unlock()
	c.Add(n)
}

// collectDropped collects the target's dropped counters.
func (t *Target) collectDropped(out *sink) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, c := range t.dropped {
		if c != nil {
			out.metric(t.set.droppedDesc, c)
		}
	}
}

// drop counts n series collector left out, and logs the first time it
// happens (the counter tells the rest).
func (t *Target) drop(collector string, n int, why string) {
	if n <= 0 {
		return
	}
	t.countDropped(collector, float64(n))
	if t.capLogged[collector] {
		return
	}
	t.capLogged[collector] = true
	t.faults.Logger().Warn("collector dropped series; redis_prober_collector_dropped_series_total counts further drops, this is logged once",
		"collector", collector, "dropped", n, "why", why)
}

// Name is the target label.
func (t *Target) Name() string { return t.cfg.Name }

// Node is the node label.
func (t *Target) Node() string { return t.cfg.Node }

// Snapshot returns the last refresh's result.
func (t *Target) Snapshot() Snapshot {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.snap
}

// Refresh reads INFO, LATENCY, CONFIG, the Redis process and the host
// facts the enabled collectors need, evaluates the checks, and replaces the
// cache. What cannot be read this time is absent from the cache (a stale
// value would lie), and the collector's error says why. Failures are
// logged once the refresh is over (logRefresh), when it is known whether
// Redis answered at all.
func (t *Target) Refresh(ctx context.Context) {
	t.refreshMu.Lock()
	defer t.refreshMu.Unlock()
	on := t.cfg.Enabled
	s := Snapshot{Time: time.Now(), Errors: map[string]error{}, Durations: map[string]time.Duration{}}
	var r refreshState
	var outs []outcome
	for _, d := range definitions {
		if d.Kind != KindTarget || !needed(d, on) {
			continue
		}
		r.start = time.Now()
		ran, err := d.part.refresh(ctx, t, &s, &r)
		if ran && on[d.Name] {
			s.Errors[d.Name], s.Durations[d.Name] = err, time.Since(r.start)
			outs = append(outs, outcome{d.Name, err})
		}
	}
	t.logRefresh(ctx, r.infoErr, outs)

	s.Info = s.Info.Retain(retainedInfo)
	for i := range s.Checks {
		// A value quoted from INFO would keep the whole reply alive.
		s.Checks[i].Value = strings.Clone(s.Checks[i].Value)
	}
	t.mu.Lock()
	t.snap = s
	t.mu.Unlock()
}

// Describe implements prometheus.Collector: the descriptors of its set,
// those of its Health too. Register a Target of NewTarget alone, or a
// Targets; never a Target beside its set.
func (t *Target) Describe(ch chan<- *prometheus.Desc) {
	t.set.Describe(ch)
	t.set.health.describe(ch)
}

// Collect implements prometheus.Collector from the cache only: the
// target's series in its set, nothing before Add or after remove.
func (t *Target) Collect(ch chan<- prometheus.Metric) { t.set.collectOne(ch, t) }

// dropAbsurd removes the absurd values of info (see infoRanges), counts
// them and logs them at debug when they differ from last time.
func (t *Target) dropAbsurd(info redisinfo.Info) {
	bad := dropAbsurd(info)
	if len(bad) == 0 {
		t.lastBad = ""
		return
	}
	t.countDropped("info", float64(len(bad)))
	if msg := strings.Join(bad, " "); msg != t.lastBad {
		t.lastBad = msg
		t.faults.Logger().Debug("INFO values out of range ignored; their series are absent", "fields", msg)
	}
}
