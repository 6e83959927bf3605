package explain

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redis-prober/redis-prober/internal/nodeid"
)

// Metrics exports the attribution of every running node: one collector
// for the process, a node joining with Add and leaving with its remove.
type Metrics struct {
	slow, threshold, unexplained *prometheus.Desc

	mu    sync.Mutex
	nodes map[nodeid.ID]*Node
	// added is when each node joined: since then its counts count (their
	// created timestamp).
	added map[nodeid.ID]time.Time
}

var _ prometheus.Collector = (*Metrics)(nil)

// The families' names and helps.
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
		nodes:       map[nodeid.ID]*Node{},
		added:       map[nodeid.ID]time.Time{},
	}
}

// Add exports n as the node id until remove is called.
func (m *Metrics) Add(key nodeid.ID, n *Node) (remove func()) {
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

// Node is the attribution of node id, nil when it does not run.
func (m *Metrics) Node(id nodeid.ID) *Node {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.nodes[id]
}

func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.slow
	ch <- m.threshold
	ch <- m.unexplained
}

func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	nodes := make(map[nodeid.ID]*Node, len(m.nodes))
	added := make(map[nodeid.ID]time.Time, len(m.nodes))
	for k, n := range m.nodes {
		nodes[k], added[k] = n, m.added[k]
	}
	m.mu.Unlock()
	for k, n := range nodes {
		counts := n.Counts()
		for c, v := range counts {
			ch <- prometheus.MustNewConstMetricWithCreatedTimestamp(m.slow, prometheus.CounterValue, float64(v), added[k], k.Target, k.Node, Cause(c).String())
		}
		ch <- prometheus.MustNewConstMetric(m.threshold, prometheus.GaugeValue, n.Threshold().Seconds(), k.Target, k.Node)
		ch <- prometheus.MustNewConstMetric(m.unexplained, prometheus.GaugeValue, n.UnexplainedShare(), k.Target, k.Node)
	}
}
