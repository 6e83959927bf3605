package explain

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/types/known/timestamppb"
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
// gathering Collect took 27-29 ms of CPU and 244,000 allocations a
// scrape, Gather 2.6-5.1 ms and 1,026 (BenchmarkMetricsGather,
// docs/performance.md, "Explain's series gathered directly").
// exposition.Registry gathers a Metrics so; Collect stays for any other
// registry, and a test holds the two to the same families.
func (m *Metrics) Gather() ([]*dto.MetricFamily, error) {
	type row struct {
		target, node string
		counts       [NumCauses]uint64
		created      *timestamppb.Timestamp
		n            *Node
	}
	m.mu.Lock()
	rows := make([]row, 0, len(m.nodes))
	for k, n := range m.nodes {
		rows = append(rows, row{target: k[0], node: k[1], n: n, created: timestamppb.New(m.added[k])})
	}
	m.mu.Unlock()
	if len(rows) == 0 {
		return nil, nil
	}
	slices.SortFunc(rows, func(a, b row) int {
		return cmp.Or(cmp.Compare(a.node, b.node), cmp.Compare(a.target, b.target))
	})
	for i := range rows {
		rows[i].counts = rows[i].n.Counts()
	}
	causeLabel, nodeLabel, targetLabel := "cause", "node", "target"
	// One allocation each for the label pairs, their pointers, the
	// metrics and the values of all series.
	nc := int(NumCauses)
	series := len(rows) * (nc + 2)
	pairs := make([]dto.LabelPair, 0, len(rows)*(2*2+3*nc))
	ptrs := make([]*dto.LabelPair, 0, cap(pairs))
	metrics := make([]dto.Metric, series)
	values := make([]float64, series)
	counters := make([]dto.Counter, len(rows)*nc)
	gauges := make([]dto.Gauge, 2*len(rows))
	next := 0
	// metric takes the next metric, labelled by name, value pointer pairs
	// (the pairs are protobuf messages: filled in place, never copied).
	metric := func(nameValues ...*string) *dto.Metric {
		start := len(ptrs)
		for i := 0; i < len(nameValues); i += 2 {
			pairs = pairs[:len(pairs)+1]
			lp := &pairs[len(pairs)-1]
			lp.Name, lp.Value = nameValues[i], nameValues[i+1]
			ptrs = append(ptrs, lp)
		}
		mt := &metrics[next]
		mt.Label = ptrs[start:len(ptrs):len(ptrs)]
		next++
		return mt
	}
	slow := &dto.MetricFamily{Name: ptr(slowName), Help: ptr(slowHelp), Type: dto.MetricType_COUNTER.Enum(),
		Metric: make([]*dto.Metric, 0, len(rows)*nc)}
	for _, c := range causesByName {
		for i := range rows {
			r := &rows[i]
			mt := metric(&causeLabel, &causeNames[c], &nodeLabel, &r.node, &targetLabel, &r.target)
			v := &values[next-1]
			*v = float64(r.counts[c])
			ct := &counters[len(slow.Metric)]
			ct.Value, ct.CreatedTimestamp = v, r.created
			mt.Counter = ct
			slow.Metric = append(slow.Metric, mt)
		}
	}
	gauge := func(name, help string, value func(*Node) float64) *dto.MetricFamily {
		mf := &dto.MetricFamily{Name: ptr(name), Help: ptr(help), Type: dto.MetricType_GAUGE.Enum(),
			Metric: make([]*dto.Metric, 0, len(rows))}
		for i := range rows {
			r := &rows[i]
			mt := metric(&nodeLabel, &r.node, &targetLabel, &r.target)
			v := &values[next-1]
			*v = value(r.n)
			g := &gauges[0]
			gauges = gauges[1:]
			g.Value = v
			mt.Gauge = g
			mf.Metric = append(mf.Metric, mt)
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

func ptr(s string) *string { return &s }
