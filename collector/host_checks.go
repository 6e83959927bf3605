package collector

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redis-prober/redis-prober/internal/host"
)

// HostChecks are the host-scope tuning checks (Scope ScopeHost: THP,
// vm.swappiness, vm.overcommit_memory, intrinsic latency, the CPU
// governor), evaluated once per host refresh for the whole process and
// exported without target or node labels, beside the other
// redis_prober_host_* families: they read only the prober's own host,
// which is the same for every target (and is not the host of a remote
// target's Redis). Register it once per process.
type HostChecks struct {
	paths     host.Paths
	facts     *HostFactsCache
	intrinsic func() (time.Duration, bool)
	passed    *prometheus.Desc
	unknown   *prometheus.Desc

	mu      sync.Mutex
	at      time.Time
	ran     bool
	results []Result
}

// HostChecksConfig is what the host checks read.
type HostChecksConfig struct {
	Paths host.Paths
	// Facts is the host read the targets' refresh shares; its ttl is the
	// host refresh, so the checks are evaluated at most once a read. nil
	// reads and evaluates on every Refresh.
	Facts *HostFactsCache
	// Intrinsic returns the host's worst scheduling gap since its last
	// call; nil or ok=false leaves the intrinsic_latency check unknown.
	Intrinsic func() (d time.Duration, ok bool)
}

var _ prometheus.Collector = (*HostChecks)(nil)

// NewHostChecks returns the host checks, not evaluated yet: they have no
// series before the first Refresh.
func NewHostChecks(cfg HostChecksConfig) *HostChecks {
	return &HostChecks{
		paths: cfg.Paths, facts: cfg.Facts, intrinsic: cfg.Intrinsic,
		passed: prometheus.NewDesc("redis_prober_host_check_passed",
			"1 when a tuning check of the prober's host passes at the given severity, 0 when it fails; absent while its input cannot be read (see redis_prober_host_check_unknown). The checks of each Redis are redis_prober_check_passed.",
			[]string{"check", "severity"}, nil),
		unknown: prometheus.NewDesc("redis_prober_host_check_unknown",
			"1 when a tuning check of the prober's host cannot be evaluated because an input is not readable here (no /sys, no cpufreq in a VM, no intrinsic latency samples); never a failure. Absent for checks that were evaluated (see redis_prober_host_check_passed).",
			[]string{"check"}, nil),
	}
}

// Refresh evaluates the host checks at now, unless they were evaluated
// within the host read's ttl. Every target's Redis-side refresh calls it
// (TargetConfig.HostChecks), so the checks run on the engine's schedule,
// once a host refresh however many targets share the process. A nil
// HostChecks does nothing.
func (h *HostChecks) Refresh(now time.Time) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if age := now.Sub(h.at); h.ran && h.facts != nil && age >= 0 && age < h.facts.ttl {
		return
	}
	// A read error is the targets' checks collector's to report (it
	// reads the same facts); the checks of what was not read are unknown.
	hf, _ := h.facts.Read(h.paths, now)
	f := Facts{Host: hf}
	if h.intrinsic != nil {
		f.Intrinsic, f.HasIntrinsic = h.intrinsic()
	}
	h.results = Evaluate(&f, ScopeHost)
	h.at, h.ran = now, true
}

// Results are the checks of the last Refresh; ok is false before the
// first (or for a nil HostChecks).
func (h *HostChecks) Results() (results []Result, ok bool) {
	if h == nil {
		return nil, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.results, h.ran
}

// Failing is Failing over the last Refresh, for the status page; ok is
// false before the first.
func (h *HostChecks) Failing() (failing []FailedCheck, ok bool) {
	results, ok := h.Results()
	return Failing(results), ok
}

// Describe implements prometheus.Collector.
func (h *HostChecks) Describe(ch chan<- *prometheus.Desc) {
	ch <- h.passed
	ch <- h.unknown
}

// Collect implements prometheus.Collector from the last Refresh: a scrape
// never reads the host or evaluates a check.
func (h *HostChecks) Collect(ch chan<- prometheus.Metric) {
	results, _ := h.Results()
	checkSeries(results, func(id string, sev Severity, passed bool) {
		constMetric(ch, h.passed, prometheus.GaugeValue, boolFloat(passed), id, string(sev))
	}, func(id string) {
		constMetric(ch, h.unknown, prometheus.GaugeValue, 1, id)
	})
}
