package explain

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/redis-prober/redis-prober/internal/exposition"
)

// Metrics exports the attribution of every running node: one collector
// for the process, a node joining with Add and leaving with its remove.
type Metrics struct {
	slow, threshold, unexplained *prometheus.Desc

	mu    sync.Mutex
	nodes map[[2]string]*Node
	// added is when each node joined: since then its counts count (their
	// created timestamp).
	added map[[2]string]time.Time
}

var (
	_ prometheus.Collector = (*Metrics)(nil)
	_ prometheus.Gatherer  = (*Metrics)(nil)
)

// The families' names and helps, shared by the descriptors and Gather.
const (
	slowName        = "redis_prober_slow_requests_total"
	slowHelp        = "Slow probe requests (at or above redis_prober_slow_threshold_seconds) by their one attributed cause (docs/explain.md)."
	thresholdName   = "redis_prober_slow_threshold_seconds"
	thresholdHelp   = "The latency at or above which a probe request is slow, as in force: min(objective, max(4 × the node's p99 over 5 minutes, 1 ms)), or --explain.slow-threshold."
	unexplainedName = "redis_prober_slow_unexplained_ratio"
	unexplainedHelp = "Share of the slow requests of the last 5 minutes that no source explains (0 with none)."
)

// NewMetrics returns the collector; the caller registers it.
func NewMetrics() *Metrics {
	return &Metrics{
		slow:        prometheus.NewDesc(slowName, slowHelp, []string{"target", "node", "cause"}, nil),
		threshold:   prometheus.NewDesc(thresholdName, thresholdHelp, []string{"target", "node"}, nil),
		unexplained: prometheus.NewDesc(unexplainedName, unexplainedHelp, []string{"target", "node"}, nil),
		nodes:       map[[2]string]*Node{},
		added:       map[[2]string]time.Time{},
	}
}

// Add exports n as target's node until remove is called.
func (m *Metrics) Add(target, node string, n *Node) (remove func()) {
	key := [2]string{target, node}
	m.mu.Lock()
	m.nodes[key] = n
	m.added[key] = time.Now()
	m.mu.Unlock()
	return func() {
		m.mu.Lock()
		if m.nodes[key] == n {
			delete(m.nodes, key)
			delete(m.added, key)
		}
		m.mu.Unlock()
	}
}

// Node is the attribution of target's node, nil when it does not run.
func (m *Metrics) Node(target, node string) *Node {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.nodes[[2]string{target, node}]
}

func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.slow
	ch <- m.threshold
	ch <- m.unexplained
}

func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	nodes := make(map[[2]string]*Node, len(m.nodes))
	added := make(map[[2]string]time.Time, len(m.nodes))
	for k, n := range m.nodes {
		nodes[k], added[k] = n, m.added[k]
	}
	m.mu.Unlock()
	for k, n := range nodes {
		counts := n.Counts()
		for c, v := range counts {
			ch <- prometheus.MustNewConstMetricWithCreatedTimestamp(m.slow, prometheus.CounterValue, float64(v), added[k], k[0], k[1], Cause(c).String())
		}
		ch <- prometheus.MustNewConstMetric(m.threshold, prometheus.GaugeValue, n.Threshold().Seconds(), k[0], k[1])
		ch <- prometheus.MustNewConstMetric(m.unexplained, prometheus.GaugeValue, n.UnexplainedShare(), k[0], k[1])
	}
}

// Gather builds the three families itself, series in the order a
// client_golang registry sorts them (label values in the order of the
// label names: cause, node, target), with no constant metric made, hashed
// and sorted for each series: at 1,000 nodes (14,000 series) a registry
// gathering Collect took 34-41 ms of CPU, 11.4 MB and 244,000 allocations
// a scrape, Gather 2.9-3.8 ms, 3.4 MB and 1,107 (BenchmarkMetricsGather,
// docs/performance.md, "Explain's series gathered directly"). A node's
// target and node label pairs are shared by its 14 series.
// exposition.Registry gathers a Metrics so; Collect stays for any other
// registry, and a test holds the two to the same families.
func (m *Metrics) Gather() ([]*dto.MetricFamily, error) {
	type row struct {
		node, target *dto.LabelPair // shared by the node's 14 series
		created      *timestamppb.Timestamp
		n            *Node
	}
	var (
		metrics  exposition.Slab[dto.Metric]
		labels   exposition.Slab[*dto.LabelPair]
		pairs    exposition.Slab[dto.LabelPair]
		strs     exposition.Slab[string]
		values   exposition.Slab[float64]
		counters exposition.Slab[dto.Counter]
		gauges   exposition.Slab[dto.Gauge]
	)
	causeName, nodeName, targetName := proto.String("cause"), proto.String("node"), proto.String("target")
	pair := func(name *string, value string) *dto.LabelPair {
		p, v := pairs.One(), strs.One()
		*v = value
		p.Name, p.Value = name, v
		return p
	}
	m.mu.Lock()
	rows := make([]row, 0, len(m.nodes))
	for k, n := range m.nodes {
		rows = append(rows, row{node: pair(nodeName, k[1]), target: pair(targetName, k[0]),
			created: timestamppb.New(m.added[k]), n: n})
	}
	m.mu.Unlock()
	if len(rows) == 0 {
		return nil, nil
	}
	slices.SortFunc(rows, func(a, b row) int {
		return cmp.Or(cmp.Compare(a.node.GetValue(), b.node.GetValue()), cmp.Compare(a.target.GetValue(), b.target.GetValue()))
	})
	family := func(name, help string, t dto.MetricType, series int) *dto.MetricFamily {
		return &dto.MetricFamily{Name: proto.String(name), Help: proto.String(help), Type: t.Enum(),
			Metric: make([]*dto.Metric, 0, series)}
	}
	// series appends a series of value v labelled ls to mf, and returns it
	// and its value for the caller to make it a counter or a gauge.
	series := func(mf *dto.MetricFamily, v float64, ls ...*dto.LabelPair) (*dto.Metric, *float64) {
		mt := metrics.One()
		mt.Label = labels.Many(len(ls))
		copy(mt.Label, ls)
		mf.Metric = append(mf.Metric, mt)
		f := values.One()
		*f = v
		return mt, f
	}
	slow := family(slowName, slowHelp, dto.MetricType_COUNTER, len(rows)*int(NumCauses))
	counts := make([][NumCauses]uint64, len(rows))
	for i := range rows {
		counts[i] = rows[i].n.Counts()
	}
	for _, c := range causesByName {
		cause := pair(causeName, c.String())
		for i, r := range rows {
			mt, v := series(slow, float64(counts[i][c]), cause, r.node, r.target)
			ct := counters.One()
			ct.Value, ct.CreatedTimestamp = v, r.created
			mt.Counter = ct
		}
	}
	gauge := func(name, help string, value func(*Node) float64) *dto.MetricFamily {
		mf := family(name, help, dto.MetricType_GAUGE, len(rows))
		for _, r := range rows {
			mt, v := series(mf, value(r.n), r.node, r.target)
			g := gauges.One()
			g.Value = v
			mt.Gauge = g
		}
		return mf
	}
	threshold := gauge(thresholdName, thresholdHelp, func(n *Node) float64 { return n.Threshold().Seconds() })
	unexplained := gauge(unexplainedName, unexplainedHelp, (*Node).UnexplainedShare)
	return []*dto.MetricFamily{slow, threshold, unexplained}, nil
}

// causesByName are the causes in the order of their label values, the
// order of a family's series by cause.
var causesByName = func() []Cause {
	cs := Causes()
	slices.SortFunc(cs, func(a, b Cause) int { return cmp.Compare(a.String(), b.String()) })
	return cs
}()
