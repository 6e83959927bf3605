package collector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/internal/faultlog"
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
	Paths    Paths
	Enabled  Enabled
	// Intrinsic returns the host's recent worst scheduling jitter; nil or
	// ok=false leaves the intrinsic_latency check unknown.
	Intrinsic func() (d time.Duration, ok bool)
	Log       *slog.Logger
	// ServerClassicBuckets adds classic buckets to the server-side
	// latency histogram (22 series a command) beside its native buckets,
	// for a Prometheus that does not ingest native histograms.
	ServerClassicBuckets bool
	// Processes, when set, shares /proc reads of one redis-server between
	// the targets that name it.
	Processes *ProcessCache
	// HostFacts, when set, shares the host's kernel state between targets.
	HostFacts *HostFactsCache
}

// Snapshot is what one refresh learned about a target.
type Snapshot struct {
	Time       time.Time
	Info       Info
	Config     map[string]string
	Events     []LatencyEvent
	Histograms []CommandHistogram
	// Commandlog is COMMANDLOG LEN of each log (Valkey 8.1+); nil when
	// not read.
	Commandlog *CommandlogLengths
	Process    *ProcessStats
	Host       HostFacts
	Checks     []Result
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
	set    *Targets
	sl     seriesLabels // the values of the target and node labels

	refreshMu sync.Mutex // one refresh at a time; guards the fields below
	forks     forkTracker
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
func (t *Target) collectDropped(ch chan<- prometheus.Metric) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, c := range t.dropped {
		if c != nil {
			c.Collect(ch)
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
// value would lie), and the collector's error says why.
func (t *Target) Refresh(ctx context.Context) {
	t.refreshMu.Lock()
	defer t.refreshMu.Unlock()
	on := t.cfg.Enabled
	s := Snapshot{Time: time.Now(), Errors: map[string]error{}, Durations: map[string]time.Duration{}}
	record := func(name string, start time.Time, err error) {
		if !on[name] {
			return
		}
		s.Errors[name], s.Durations[name] = err, time.Since(start)
		t.faults.Observe(name, err, true)
	}

	start := time.Now()
	var infoErr error
	if on["info"] || on["latency"] || on["process"] || on["checks"] || on["commandlog"] {
		var skipped int
		s.Info, skipped, infoErr = fetchInfo(ctx, t.client, "")
		if infoErr == nil {
			t.drop("info", skipped, fmt.Sprintf("INFO lines over the parse bounds (%d fields, %d bytes a line, %d bytes in all)", maxInfoFields, maxInfoLineLen, maxInfoBytes))
			t.dropAbsurd(s.Info)
			if n := t.forks.next(s.Info); n > 0 {
				if usec, ok := s.Info.Float("latest_fork_usec"); ok {
					for range n {
						t.observeFork(usec / 1e6)
					}
				}
			}
		}
	}
	record("info", start, infoErr)

	if on["latency"] {
		start = time.Now()
		err := infoErr
		if err == nil {
			s.Events, s.Histograms, err = t.fetchLatency(ctx, s.Info)
		}
		record("latency", start, err)
	}

	if on["commandlog"] {
		start = time.Now()
		lens, ran, err := t.refreshCommandlog(ctx, s.Info, infoErr, start)
		if ran {
			s.Commandlog = lens
			record("commandlog", start, err)
		}
	}

	var procErr error
	if on["process"] || on["checks"] {
		start = time.Now()
		if procErr = infoErr; procErr == nil {
			s.Process, procErr = t.cfg.Processes.Read(t.cfg.Paths, IdentityFromInfo(s.Info), start)
		}
		record("process", start, procErr)
	}

	if on["checks"] {
		start = time.Now()
		var err error
		if infoErr == nil {
			s.Config, err = fetchConfig(ctx, t.client, s.Info)
		} else {
			err = infoErr
		}
		var hostErr error
		s.Host, hostErr = t.cfg.HostFacts.Read(t.cfg.Paths, time.Now())
		f := Facts{Host: s.Host, Info: s.Info, Config: s.Config, Process: s.Process}
		if t.cfg.Intrinsic != nil {
			f.Intrinsic, f.HasIntrinsic = t.cfg.Intrinsic()
		}
		s.Checks = Evaluate(&f)
		record("checks", start, errors.Join(err, hostErr))
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
func (t *Target) dropAbsurd(info Info) {
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
