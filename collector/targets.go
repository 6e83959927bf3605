package collector

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Targets is the one collector of the Redis-side series of every target.
// Their descriptors exist once, with the variable labels target and node
// first, and Collect emits each added target's cache under them: at 1,000
// targets a descriptor set (and a registration) per target was the largest
// part of the collectors' memory.
type Targets struct {
	health healthDescs
	info   infoDescs
	lat    latencyDescs
	proc   processDescs
	checks checkDescs
	cl     commandlogDescs
	fork   *prometheus.HistogramVec
	// slow is the COMMANDLOG slow histogram, a child for each target whose
	// server has COMMANDLOG.
	slow *prometheus.HistogramVec
	// dropped counts series left out, by target, node and collector: over
	// a per-target cap, a duplicate label value, an absurd INFO value.
	dropped *prometheus.CounterVec
	// forkDesc, slowDesc and droppedDesc are the vectors' descriptors, for
	// Gather.
	forkDesc, slowDesc, droppedDesc targetDesc

	mu      sync.RWMutex
	targets map[[2]string]*Target // by target and node label
	// sorted are the targets by node, then target label: the order of
	// their series in a family without labels of its own, so Gather
	// sorts only the others.
	sorted []*Target
}

var _ prometheus.Collector = (*Targets)(nil)

// NewTargets declares the Redis-side series once; register it and its
// Health once, and add each target as it starts.
func NewTargets() *Targets {
	// redis_prober_fork_seconds is native only (no Buckets: client_golang
	// then makes no classic ones): forks are a few an hour, so a classic
	// quantile over them is noise, and 4 classic buckets were 4 series a
	// target. A Prometheus without native histograms reads the last fork
	// from redis_prober_fork_last_seconds and the fork_time check.
	forkOpts := prometheus.HistogramOpts{
		Name:                            "redis_prober_fork_seconds",
		Help:                            "Duration of every fork the prober saw happen (from INFO total_forks and latest_fork_usec; several forks between two refreshes are all counted at the latest one's duration). Native buckets only.",
		NativeHistogramBucketFactor:     1.1,
		NativeHistogramMaxBucketNumber:  160,
		NativeHistogramMinResetDuration: time.Hour,
	}
	slowOpts := commandlogHistogramOpts()
	droppedOpts := prometheus.CounterOpts{
		Name: "redis_prober_collector_dropped_series_total",
		Help: "Series a Redis-side collector left out of /metrics: LATENCY LATEST events and LATENCY HISTOGRAM commands over the per-target caps or repeated, INFO fields over the parse bounds or with absurd values (a negative fork time).",
	}
	s := &Targets{
		health:  newHealthDescs(nil, targetLabels()...),
		info:    newInfoDescs(),
		lat:     newLatencyDescs(),
		proc:    newProcessDescs(),
		checks:  newCheckDescs(),
		cl:      newCommandlogDescs(),
		slow:    prometheus.NewHistogramVec(slowOpts, targetLabels()),
		fork:    prometheus.NewHistogramVec(forkOpts, targetLabels()),
		dropped: prometheus.NewCounterVec(droppedOpts, targetLabels("collector")),
		targets: map[[2]string]*Target{},
	}
	s.forkDesc = describedTarget(descOf(s.fork), forkOpts.Name, forkOpts.Help)
	s.slowDesc = describedTarget(descOf(s.slow), slowOpts.Name, slowOpts.Help)
	s.droppedDesc = describedTarget(descOf(s.dropped), droppedOpts.Name, droppedOpts.Help, "collector")
	return s
}

// descOf is the one descriptor of a vector.
func descOf(c prometheus.Collector) *prometheus.Desc {
	ch := make(chan *prometheus.Desc, 1)
	c.Describe(ch)
	return <-ch
}

// Add makes t's series part of the set's until remove is called. t must
// come from the set's NewTarget, and its target and node labels must not
// be those of a target already added: both would be duplicate series.
func (s *Targets) Add(t *Target) (remove func(), err error) {
	if t.set != s {
		return nil, fmt.Errorf("target %q node %q belongs to another collector set", t.cfg.Name, t.cfg.Node)
	}
	key := [2]string{t.cfg.Name, t.cfg.Node}
	t.refreshMu.Lock()
	defer t.refreshMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.targets[key]; dup {
		return nil, fmt.Errorf("target %q node %q is already collected", t.cfg.Name, t.cfg.Node)
	}
	if t.fork != nil {
		return nil, fmt.Errorf("target %q node %q was added before", t.cfg.Name, t.cfg.Node)
	}
	fork, err := s.fork.GetMetricWithLabelValues(t.sl.values[:]...)
	if err != nil { // a label value that is not valid UTF-8
		return nil, fmt.Errorf("target %q node %q: %w", t.cfg.Name, t.cfg.Node, err)
	}
	t.bind(fork.(prometheus.Histogram), func(collector string) prometheus.Counter {
		return s.dropped.WithLabelValues(t.sl.values[0], t.sl.values[1], collector)
	})
	s.targets[key] = t
	i, _ := slices.BinarySearchFunc(s.sorted, t, compareTargets)
	s.sorted = slices.Insert(s.sorted, i, t)
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			delete(s.targets, key)
			s.sorted = slices.DeleteFunc(s.sorted, func(o *Target) bool { return o == t })
			s.mu.Unlock()
			s.fork.DeleteLabelValues(t.sl.values[:]...)
			s.slow.DeleteLabelValues(t.sl.values[:]...)
			s.dropped.DeletePartialMatch(prometheus.Labels{"target": t.sl.values[0], "node": t.sl.values[1]})
		})
	}, nil
}

// Describe implements prometheus.Collector: the shared descriptors, once,
// but those of Health.
func (s *Targets) Describe(ch chan<- *prometheus.Desc) {
	s.info.describe(ch)
	s.fork.Describe(ch)
	s.lat.describe(ch)
	s.proc.describe(ch)
	s.checks.describe(ch)
	s.cl.describe(ch)
	s.slow.Describe(ch)
	s.dropped.Describe(ch)
}

// Collect implements prometheus.Collector from the targets' caches only:
// all their series but those of Health.
func (s *Targets) Collect(ch chan<- prometheus.Metric) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := &sink{ch: ch}
	for _, t := range s.sorted {
		s.collect(out, t, false)
	}
}

// Gather returns the families of Collect, built directly and sorted as a
// registry's Gather sorts them, without the registry's work for each
// series (see sink). A Registry gathers a Targets this way.
func (s *Targets) Gather() ([]*dto.MetricFamily, error) {
	g := newGathering()
	out := &sink{g: g}
	s.mu.RLock()
	for _, t := range s.sorted {
		s.collect(out, t, false)
	}
	s.mu.RUnlock()
	return g.result()
}

// compareTargets orders targets by node, then target label.
func compareTargets(a, b *Target) int {
	if c := strings.Compare(a.cfg.Node, b.cfg.Node); c != 0 {
		return c
	}
	return strings.Compare(a.cfg.Name, b.cfg.Name)
}

// Health is the collector of the targets' redis_prober_collector_success
// and redis_prober_collector_duration_seconds. Register it beside the set;
// it describes nothing, so the registry takes it unchecked: the host
// collectors' series of these families carry target="" and node="" as
// const labels, and client_golang refuses to register one family with
// const and with variable target and node labels.
func (s *Targets) Health() prometheus.Collector { return targetsHealth{s} }

type targetsHealth struct{ s *Targets }

func (targetsHealth) Describe(chan<- *prometheus.Desc) {}

func (h targetsHealth) Collect(ch chan<- prometheus.Metric) {
	h.s.mu.RLock()
	defer h.s.mu.RUnlock()
	out := &sink{ch: ch}
	for _, t := range h.s.sorted {
		h.s.collectHealth(out, t, t.Snapshot())
	}
}

// Gather is Collect's families, as Targets.Gather.
func (h targetsHealth) Gather() ([]*dto.MetricFamily, error) {
	g := newGathering()
	out := &sink{g: g}
	h.s.mu.RLock()
	for _, t := range h.s.sorted {
		h.s.collectHealth(out, t, t.Snapshot())
	}
	h.s.mu.RUnlock()
	return g.result()
}

// collectOne emits t alone, health too, if it was added.
func (s *Targets) collectOne(ch chan<- prometheus.Metric, t *Target) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.targets[[2]string{t.cfg.Name, t.cfg.Node}] == t {
		s.collect(&sink{ch: ch}, t, true)
	}
}

// collectHealth emits the health series of t; s.mu is held.
func (s *Targets) collectHealth(out *sink, t *Target, snap Snapshot) {
	for _, d := range definitions {
		if d.Kind != KindTarget || !t.cfg.Enabled[d.Name] {
			continue
		}
		if err, ran := snap.Errors[d.Name]; ran {
			s.health.emit(out, &t.sl, d.Name, err, snap.Durations[d.Name].Seconds(), t.cfg.Duration)
		}
	}
}

// collect emits the series of t, an added target, with its health series
// if health; s.mu is held.
func (s *Targets) collect(out *sink, t *Target, health bool) {
	snap := t.Snapshot()
	for _, d := range definitions {
		if d.Kind != KindTarget || !t.cfg.Enabled[d.Name] {
			continue
		}
		d.part.emit(s, out, t, &snap)
	}
	if health {
		s.collectHealth(out, t, snap)
	}
	t.collectDropped(out)
}
