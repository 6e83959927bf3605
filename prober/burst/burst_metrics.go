package burst

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the burst series beside the shared latency histogram
// (which bursts feed with phase="burst" through prober.Metrics.Commands).
type Metrics struct {
	runs        *prometheus.CounterVec
	decisions   *prometheus.CounterVec
	lastOps     *prometheus.GaugeVec
	lastLatency *lastLatency
	lastEnd     *prometheus.GaugeVec
	capacity    *prometheus.GaugeVec
	lastLag     *prometheus.GaugeVec
	lastKept    *prometheus.GaugeVec
	lastClock   *prometheus.GaugeVec
}

// burstQuantiles are the quantiles of redis_prober_burst_last_latency_seconds.
var burstQuantiles = []float64{0.5, 0.99, 0.999}

var burstOutcomes = []Outcome{OutcomeCompleted, OutcomeAborted, OutcomeSkipped, OutcomeFailed}

// NewMetrics registers the burst series on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "redis_prober_burst_runs_total",
			Help: "Bursts by outcome: completed, aborted (by the governor or a stop), skipped (the governor refused to start), failed (could not start).",
		}, []string{"target", "node", "plan", "outcome"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "redis_prober_burst_decisions_total",
			Help: "Bursts by outcome and the governor's reason (replica, loading, fork, memory, busy, p99, errors, cancelled, info, connect; none when completed).",
		}, []string{"target", "node", "plan", "outcome", "reason"}),
		lastOps: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "redis_prober_burst_last_ops_per_second",
			Help: "Measured throughput of the last burst that ran (completed or aborted).",
		}, []string{"target", "node", "plan"}),
		lastLatency: newLastLatency(),
		lastEnd: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "redis_prober_burst_last_end_timestamp_seconds",
			Help: "When the last burst (of any outcome) ended, in Unix seconds.",
		}, []string{"target", "node", "plan"}),
		capacity: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "redis_prober_capacity_ops_per_second",
			Help: "Highest throughput that met the latency objective in the last step-load capacity search (0 when none did); the knee; a lower bound when the search stopped on its own bound (its rate ceiling, --burst.rate, or its time) or as client-bound, not at the server's knee.",
		}, []string{"target", "node", "plan"}),
		lastLag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "redis_prober_burst_last_schedule_lag_seconds",
			Help: "p99 of the last burst's schedule lag: how much later than it could have the prober sent its requests (its own lateness, never in the burst's latency).",
		}, []string{"target", "node", "plan"}),
		lastKept: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "redis_prober_burst_last_kept_schedule",
			Help: "1 when the last burst's client delivered 90% of its rate with a schedule-lag p99 of at most 1 ms; 0 when it was client-bound (its latency still leaves the lag out).",
		}, []string{"target", "node", "plan"}),
		lastClock: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "redis_prober_burst_last_clock_info",
			Help: "1 for the clock that timed the last burst's requests: kernel (SO_TIMESTAMPING wire time, a paced burst over TCP), user (the prober's own clock: unpaced, unix socket, no stamps) or mixed; only the clock in use has a series.",
		}, []string{"target", "node", "plan", "clock"}),
	}
	reg.MustRegister(m.runs, m.decisions, m.lastOps, m.lastLatency, m.lastEnd, m.capacity, m.lastLag, m.lastKept, m.lastClock)
	return m
}

// Init creates the run counters of a node's plan at zero, so rate() and
// increase() see the first burst. node is "" for a single server, as on
// the probe's series.
func (m *Metrics) Init(target, node, plan string) {
	for _, o := range burstOutcomes {
		m.runs.WithLabelValues(target, node, plan, string(o))
	}
}

// Observe records the outcome of one burst (or one step-load search). The
// runs counter goes last: a scrape that counts the run sees its decision
// and last_* figures too.
func (m *Metrics) Observe(target, node string, r *Result) {
	plan := r.Plan.Name
	m.decisions.WithLabelValues(target, node, plan, string(r.Outcome), r.Reason).Inc()
	m.lastEnd.WithLabelValues(target, node, plan).Set(float64(r.End.UnixNano()) / 1e9)
	if r.Total != nil && r.Total.Ops > 0 {
		m.lastOps.WithLabelValues(target, node, plan).Set(r.OpsPerSec())
		m.lastLag.WithLabelValues(target, node, plan).Set(r.LagQuantile(0.99).Seconds())
		kept := 0.0
		if r.KeptSchedule() {
			kept = 1
		}
		m.lastKept.WithLabelValues(target, node, plan).Set(kept)
		m.lastClock.DeletePartialMatch(prometheus.Labels{"target": target, "node": node, "plan": plan})
		m.lastClock.WithLabelValues(target, node, plan, r.Clock()).Set(1)
		quantiles := make(map[float64]float64, len(burstQuantiles))
		for _, q := range burstQuantiles {
			quantiles[q] = r.Total.Quantile(q).Seconds()
		}
		m.lastLatency.set([3]string{target, node, plan}, lastBurst{
			count: uint64(r.Total.Ops), sum: r.Total.Mean().Seconds() * float64(r.Total.Ops), quantiles: quantiles,
		})
	}
	m.runs.WithLabelValues(target, node, plan, string(r.Outcome)).Inc()
}

// lastLatency exports the last burst's latency of each node and plan as a
// summary: the quantile label of the metric contract is a summary's, so
// `promtool check metrics` accepts it, and _count says how many requests
// the quantiles are over.
type lastLatency struct {
	desc *prometheus.Desc
	mu   sync.Mutex
	last map[[3]string]lastBurst
}

type lastBurst struct {
	count     uint64
	sum       float64
	quantiles map[float64]float64
}

var _ prometheus.Collector = (*lastLatency)(nil)

func newLastLatency() *lastLatency {
	return &lastLatency{
		desc: prometheus.NewDesc("redis_prober_burst_last_latency_seconds",
			"Latency quantiles (0.5, 0.99, 0.999) over all commands of the last burst that ran; _count is its requests.",
			[]string{"target", "node", "plan"}, nil),
		last: map[[3]string]lastBurst{},
	}
}

func (l *lastLatency) set(k [3]string, b lastBurst) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last[k] = b
}

func (l *lastLatency) forget(match func(target, node string) bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.last {
		if match(k[0], k[1]) {
			delete(l.last, k)
		}
	}
}

func (l *lastLatency) Describe(ch chan<- *prometheus.Desc) { ch <- l.desc }

func (l *lastLatency) Collect(ch chan<- prometheus.Metric) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, b := range l.last {
		if m, err := prometheus.NewConstSummary(l.desc, b.count, b.sum, b.quantiles, k[0], k[1], k[2]); err == nil {
			ch <- m
		}
	}
}

// ObserveCapacity records the result of a step-load search.
func (m *Metrics) ObserveCapacity(target, node, plan string, opsPerSec float64) {
	m.capacity.WithLabelValues(target, node, plan).Set(opsPerSec)
}

// ForgetNode drops the series of one node, when its burst loop ends.
func (m *Metrics) ForgetNode(target, node string) {
	m.forget(prometheus.Labels{"target": target, "node": node})
	m.lastLatency.forget(func(t, n string) bool { return t == target && n == node })
}

// Forget drops every series of a target that was removed.
func (m *Metrics) Forget(target string) {
	m.forget(prometheus.Labels{"target": target})
	m.lastLatency.forget(func(t, _ string) bool { return t == target })
}

func (m *Metrics) forget(l prometheus.Labels) {
	m.runs.DeletePartialMatch(l)
	m.decisions.DeletePartialMatch(l)
	m.lastOps.DeletePartialMatch(l)
	m.lastEnd.DeletePartialMatch(l)
	m.capacity.DeletePartialMatch(l)
	m.lastLag.DeletePartialMatch(l)
	m.lastKept.DeletePartialMatch(l)
	m.lastClock.DeletePartialMatch(l)
}
