package prober

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/redis-prober/redis-prober/internal/exposition"
	"github.com/redis-prober/redis-prober/internal/safetext"
	"github.com/redis-prober/redis-prober/wire"
)

// Result classifies one request for redis_prober_requests_total.
type Result int

const (
	ResultOK Result = iota
	ResultError
	ResultTimeout
	numResults
)

func (r Result) String() string {
	switch r {
	case ResultOK:
		return "ok"
	case ResultError:
		return "error"
	case ResultTimeout:
		return "timeout"
	}
	return "unknown"
}

// Phase tells probe traffic from burst traffic on the same series.
type Phase string

const (
	PhaseProbe Phase = "probe"
	PhaseBurst Phase = "burst"
)

// LatencyBuckets are the classic buckets kept beside the native histogram so a
// Prometheus that does not ingest native histograms still has a p99: 50µs to
// 1s, densest from 100µs to 1ms where LAN Redis lives. Each boundary is a
// series per command and node (3,000 a boundary at 1,000 targets), so there
// are 13, not the 24 of the first build: a classic p99 is interpolated
// within its bucket either way, and the native buckets carry the detail.
var LatencyBuckets = []float64{
	.00005, .0001, .0002, .0003, .0005, .00075, .001,
	.002, .005, .01, .025, .1, 1,
}

// latencyBuckets are the classic buckets of redis_prober_latency_seconds
// in phase p: the probe's (LatencyBuckets unless MetricsOptions says), none
// for bursts. Bursts are 10 s every 15 minutes, so a classic quantile over
// them is a few points an hour (and 13 series per command and node); their
// quantiles are exported as redis_prober_burst_last_latency_seconds, and
// their native buckets stay. The burn-rate and quantile rules read the
// probe phase only.
func (m *Metrics) latencyBuckets(p Phase) []float64 {
	if p == PhaseProbe {
		return m.probeBuckets
	}
	return nil
}

// MetricsOptions choose the shape of the prober's series.
type MetricsOptions struct {
	// ProbeBuckets are the upper bounds of the probe latency histogram's
	// classic buckets (--probe.classic-buckets), increasing: nil is
	// LatencyBuckets, an empty non-nil slice none (native buckets only).
	ProbeBuckets []float64
}

// HistogramOpts returns the house histogram settings: native buckets with a
// factor of 1.1 (schema 3), bounded in count and reset hourly, plus the given
// classic buckets.
func HistogramOpts(name, help string, buckets []float64) prometheus.HistogramOpts {
	return prometheus.HistogramOpts{
		Name:                            name,
		Help:                            help,
		Buckets:                         buckets,
		NativeHistogramBucketFactor:     1.1,
		NativeHistogramMaxBucketNumber:  160,
		NativeHistogramMinResetDuration: time.Hour,
		NativeHistogramZeroThreshold:    1e-7,
	}
}

// Metrics holds every per-request series of the prober. One Metrics serves all
// targets; ForTarget hands out pre-resolved children so the hot path never
// looks a label up.
type Metrics struct {
	latency     *histVec
	requests    *prometheus.CounterVec
	up          *prometheus.GaugeVec
	connect     *histVec
	connects    *prometheus.CounterVec
	objective   *prometheus.GaugeVec
	intrinsic   prometheus.Histogram
	scheduleLag prometheus.Histogram
	changes     *prometheus.CounterVec
	changeLast  *prometheus.GaugeVec
	hostChanges *prometheus.CounterVec
	hostLast    *prometheus.GaugeVec
	clientDelay *histVec // one child: every probe of every target observes it
	clock       *prometheus.GaugeVec
	fallbacks   *prometheus.CounterVec

	families []family // all of the above, in the order of their making

	probeBuckets []float64 // the probe phase's classic buckets
}

// hostDelayBuckets are the classic buckets of the prober's own delays
// (timer lateness, the intrinsic sampler): 1µs to 100ms.
var hostDelayBuckets = []float64{.000001, .000005, .00001, .000025, .00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1}

// Few classic buckets where a series exists per node and its native buckets
// carry the detail: a Prometheus without native histograms still sees the
// connect p90 against the 0.5 s alert line (series per target are the
// budget, see docs/scaling.md). The client delay is the host's, one series
// for the process, so it keeps its microsecond-to-25 ms buckets.
var (
	clientDelayBuckets = []float64{.00001, .00005, .0001, .0005, .001, .005, .025}
	connectBuckets     = []float64{.005, .025, .1, .5, 1}
)

// NewMetrics registers the prober's series on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	return NewMetricsWith(reg, MetricsOptions{})
}

// NewMetricsWith is NewMetrics with the shape opts chooses.
func NewMetricsWith(reg prometheus.Registerer, opts MetricsOptions) *Metrics {
	m := &Metrics{probeBuckets: opts.ProbeBuckets}
	if m.probeBuckets == nil {
		m.probeBuckets = LatencyBuckets
	}
	m.latency = addHist(m, "redis_prober_latency_seconds",
		"Latency of each request, from its intended start (its departure when it was sent on time) to the arrival of the reply's last bytes; on kernel-stamped connections (redis_prober_probe_clock_info) both ends are the kernel's timestamps, so this host's scheduling is not in it.",
		m.probeBuckets, "target", "node", "command", "phase")
	m.requests = addCounters(m, "redis_prober_requests_total",
		"Requests sent to Redis, by result (ok, error, timeout).",
		"target", "node", "command", "phase", "result")
	m.up = addGauges(m, "redis_prober_up",
		"1 when the last probe got an answer from Redis (a reply or a Redis error), 0 on timeout or connection failure.",
		"target", "node")
	m.connect = addHist(m, "redis_prober_connect_latency_seconds",
		"Dial, TLS, AUTH and the first PING reply on a fresh connection.",
		connectBuckets, "target", "node")
	m.connects = addCounters(m, "redis_prober_connects_total",
		"Connect probes by result (ok, error, timeout).",
		"target", "node", "result")
	m.objective = addGauges(m, "redis_prober_objective_seconds",
		"The configured p99 latency objective of the target, for generic alert rules.",
		"target")
	m.intrinsic = addHostHist(m, "redis_prober_intrinsic_latency_seconds",
		"Largest scheduling gap of the prober's own thread in each short busy-loop window (host jitter, not Redis).")
	m.scheduleLag = addHostHist(m, "redis_prober_schedule_lag_seconds",
		"How late the prober's timer woke for a probe that was due (host jitter, excluded from Redis latency).")
	m.clientDelay = addHist(m, "redis_prober_client_delay_seconds",
		"How long each probe reply sat in this host's kernel before the prober read it (kernel RX stamp to read), over every target: this host's own delay, excluded from Redis latency.",
		clientDelayBuckets)
	m.clock = addGauges(m, "redis_prober_probe_clock_info",
		"1 for the clock that times a node's probe latency: kernel (SO_TIMESTAMPING wire time) or user (the prober's own clock, where the kernel gives no stamps).",
		"target", "node", "clock")
	m.fallbacks = addCounters(m, "redis_prober_clock_fallbacks_total",
		"Probe requests on a kernel-stamped connection timed by the prober's own clock instead, because a stamp was missing or disagreed with the monotonic clock (a clock step).",
		"target", "node")
	m.changes = addCounters(m, "redis_prober_changes_total",
		"Changes detected on a target: restart, version, config, role, maxmemory, failover (the prober's host's are redis_prober_host_changes_total).",
		"target", "kind")
	m.changeLast = addGauges(m, "redis_prober_change_last_timestamp_seconds",
		"Unix time of the last change of each kind detected on a target.",
		"target", "kind")
	m.hostChanges = addCounters(m, "redis_prober_host_changes_total",
		"Changes detected on the prober's host, once for the process: kernel, thp, sysctl.",
		"kind")
	m.hostLast = addGauges(m, "redis_prober_host_change_last_timestamp_seconds",
		"Unix time of the last change of each kind detected on the prober's host.",
		"kind")
	reg.MustRegister(m)
	return m
}

// family is one of the prober's metric families: a vector or a lone
// histogram, and the name and help it was made with.
type family struct {
	name, help string
	c          prometheus.Collector
	order      *exposition.Order // of its series at the last Gather
}

// add gathers c as the family name, with help.
func (m *Metrics) add(name, help string, c prometheus.Collector) {
	m.families = append(m.families, family{name, help, c, new(exposition.Order)})
}

func addHist(m *Metrics, name, help string, classic []float64, labels ...string) *histVec {
	v := newHistVec(name, help, classic, labels)
	m.add(name, help, v)
	return v
}

func addHostHist(m *Metrics, name, help string) prometheus.Histogram {
	h := prometheus.NewHistogram(HistogramOpts(name, help, hostDelayBuckets))
	m.add(name, help, h)
	return h
}

func addCounters(m *Metrics, name, help string, labels ...string) *prometheus.CounterVec {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	m.add(name, help, v)
	return v
}

func addGauges(m *Metrics, name, help string, labels ...string) *prometheus.GaugeVec {
	v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	m.add(name, help, v)
	return v
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, f := range m.families {
		f.c.Describe(ch)
	}
}

// Collect implements prometheus.Collector, for a registry that gathers
// collectors itself.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, f := range m.families {
		f.c.Collect(ch)
	}
}

// Gather implements prometheus.Gatherer: the families as a registry would
// gather them, built directly (see exposition.Builder). exposition.Registry
// gathers a Metrics this way; at 1,000 targets its 35,000 series through
// the registry's checks and sort were the longest part of a scrape.
func (m *Metrics) Gather() ([]*dto.MetricFamily, error) {
	var b exposition.Builder
	for _, f := range m.families {
		b.Collect(f.name, f.help, f.c, f.order)
	}
	return b.Result()
}

// Intrinsic is where the host-jitter sampler records.
func (m *Metrics) Intrinsic() prometheus.Observer { return m.intrinsic }

// CommandRecorder records latency and results per command of one target and
// phase through pre-resolved children: the hot path is two atomic adds and no
// allocation. Command i records through index i.
type CommandRecorder struct {
	lat []prometheus.Observer
	req [][numResults]prometheus.Counter
}

// Commands resolves the children of target and phase for the given command
// names (lower case, as they appear in the command label).
func (m *Metrics) Commands(target string, phase Phase, commands []string) *CommandRecorder {
	return m.NodeCommands(target, "", phase, commands)
}

// NodeCommands is Commands for one node of a multi-node target (a Cluster
// shard, the current Sentinel primary). node is host:port; a single server
// has node "", which Prometheus stores as no label at all.
func (m *Metrics) NodeCommands(target, node string, phase Phase, commands []string) *CommandRecorder {
	r := &CommandRecorder{
		lat: make([]prometheus.Observer, len(commands)),
		req: make([][numResults]prometheus.Counter, len(commands)),
	}
	classic := m.latencyBuckets(phase)
	for i, c := range commands {
		r.lat[i] = m.latency.withClassic(classic, []string{target, node, c, string(phase)})
		for res := Result(0); res < numResults; res++ {
			r.req[i][res] = m.requests.WithLabelValues(target, node, c, string(phase), res.String())
		}
	}
	return r
}

// Record counts one request of command cmd and observes its latency.
func (r *CommandRecorder) Record(cmd int, res Result, d time.Duration) {
	r.lat[cmd].Observe(d.Seconds())
	r.req[cmd][res].Inc()
}

// TargetRecorder is what one target's probes record into.
type TargetRecorder struct {
	*CommandRecorder
	up       prometheus.Gauge
	connect  prometheus.Observer
	connects [numResults]prometheus.Counter
	lag      prometheus.Observer
	delay    prometheus.Observer
	fallback prometheus.Counter

	clockVec     *prometheus.GaugeVec
	target, node string
	clock        atomic.Pointer[wire.Clock]
}

// ForTarget resolves every probe child of a single-server target and
// publishes its latency objective.
func (m *Metrics) ForTarget(target string, commands []string, objective time.Duration) *TargetRecorder {
	return m.ForNode(target, "", commands, objective)
}

// ForNode is ForTarget for one node of a multi-node target. node comes from
// what a Redis server said (CLUSTER NODES, Sentinel), so it is made a safe
// label value first (see nodeLabel): client_golang panics on invalid UTF-8.
func (m *Metrics) ForNode(target, node string, commands []string, objective time.Duration) *TargetRecorder {
	node = nodeLabel(node)
	r := &TargetRecorder{
		CommandRecorder: m.NodeCommands(target, node, PhaseProbe, commands),
		up:              m.up.WithLabelValues(target, node),
		connect:         m.connect.WithLabelValues(target, node),
		lag:             m.scheduleLag,
		delay:           m.clientDelay.WithLabelValues(),
		fallback:        m.fallbacks.WithLabelValues(target, node),
		clockVec:        m.clock,
		target:          target,
		node:            node,
	}
	for res := Result(0); res < numResults; res++ {
		r.connects[res] = m.connects.WithLabelValues(target, node, res.String())
	}
	m.objective.WithLabelValues(target).Set(objective.Seconds())
	return r
}

// maxNodeLabel bounds a node label value: a host:port is at most a 253-byte
// DNS name, brackets, a colon and five digits; anything longer is cut.
const maxNodeLabel = 264

// nodeLabel makes a node address safe as a label value (see
// safetext.Label). Valid host:port addresses (the engine refuses every
// other) pass unchanged.
func nodeLabel(node string) string { return safetext.Label(node, maxNodeLabel) }

// Forget drops every series of a target (all its nodes), for a target that
// was removed.
func (m *Metrics) Forget(target string) {
	l := prometheus.Labels{"target": target}
	m.latency.DeletePartialMatch(l)
	m.requests.DeletePartialMatch(l)
	m.up.DeletePartialMatch(l)
	m.connect.DeletePartialMatch(l)
	m.connects.DeletePartialMatch(l)
	m.objective.DeletePartialMatch(l)
	m.changes.DeletePartialMatch(l)
	m.changeLast.DeletePartialMatch(l)
	m.clock.DeletePartialMatch(l)
	m.fallbacks.DeletePartialMatch(l)
}

// InitChanges creates a target's change counters of the given kinds at
// zero, so increase() and the change panels see the first change of each
// kind instead of a series that springs into existence at 1.
func (m *Metrics) InitChanges(target string, kinds ...string) {
	for _, k := range kinds {
		m.changes.WithLabelValues(target, k)
	}
}

// InitHostChanges creates the host change counters of kinds at 0.
func (m *Metrics) InitHostChanges(kinds ...string) {
	for _, k := range kinds {
		m.hostChanges.WithLabelValues(k)
	}
}

// HostChange counts one detected change of the prober's host (kind: kernel,
// thp, sysctl) and stamps its time.
func (m *Metrics) HostChange(kind string, at time.Time) {
	m.hostChanges.WithLabelValues(kind).Inc()
	m.hostLast.WithLabelValues(kind).Set(float64(at.UnixNano()) / 1e9)
}

// Change counts one detected change of a target (kind: restart, version,
// config, role, maxmemory, failover) and stamps its time.
func (m *Metrics) Change(target, kind string, at time.Time) {
	m.changes.WithLabelValues(target, kind).Inc()
	m.changeLast.WithLabelValues(target, kind).Set(float64(at.UnixNano()) / 1e9)
}

// ForgetNode drops the series of one node of a target, for a node that left
// a Cluster or stopped being the Sentinel primary.
func (m *Metrics) ForgetNode(target, node string) {
	l := prometheus.Labels{"target": target, "node": node}
	m.latency.DeletePartialMatch(l)
	m.requests.DeletePartialMatch(l)
	m.up.DeletePartialMatch(l)
	m.connect.DeletePartialMatch(l)
	m.connects.DeletePartialMatch(l)
	m.clock.DeletePartialMatch(l)
	m.fallbacks.DeletePartialMatch(l)
}

// SetUp records whether Redis answered the last probe.
func (r *TargetRecorder) SetUp(answered bool) {
	if answered {
		r.up.Set(1)
	} else {
		r.up.Set(0)
	}
}

// RecordConnect records one connect probe.
func (r *TargetRecorder) RecordConnect(res Result, d time.Duration) {
	r.connect.Observe(d.Seconds())
	r.connects[res].Inc()
}

// RecordLag records how late the prober's own timer woke for a due probe.
func (r *TargetRecorder) RecordLag(d time.Duration) { r.lag.Observe(d.Seconds()) }

// RecordClientDelay records how long a reply waited in the kernel.
func (r *TargetRecorder) RecordClientDelay(d time.Duration) { r.delay.Observe(d.Seconds()) }

// ClockFallback counts a stamped request timed by the user-space clock.
func (r *TargetRecorder) ClockFallback() { r.fallback.Inc() }

// SetClock publishes the clock of the node's probe connection; only the
// clock in use has a series. It runs once per new connection, off the
// request path.
func (r *TargetRecorder) SetClock(c wire.Clock) {
	if old := r.clock.Swap(&c); old != nil {
		if *old == c {
			return
		}
		r.clockVec.DeleteLabelValues(r.target, r.node, string(*old))
	}
	r.clockVec.WithLabelValues(r.target, r.node, string(c)).Set(1)
}

// RequestsCounter returns one child of redis_prober_requests_total, for
// callers that read a count back (tests, the doctor's live measurement).
func (m *Metrics) RequestsCounter(target, node, command string, phase Phase, res Result) prometheus.Counter {
	return m.requests.WithLabelValues(target, node, command, string(phase), res.String())
}
