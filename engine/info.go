package engine

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// The engine is also a collector of redis_prober_target_info{target, ...},
// which carries the extra labels configured per target (team, tier, ...),
// and of redis_prober_discovery_nodes{target, outcome} for the targets that
// expand into Cluster or Sentinel nodes.
// Their names are the union over all targets, so the family's label set
// changes with the config: the collector is unchecked (Describe sends
// nothing) and builds its descriptor at collect time.
var _ prometheus.Collector = (*Engine)(nil)

// Describe sends nothing: redis_prober_target_info is an unchecked metric.
func (e *Engine) Describe(chan<- *prometheus.Desc) {}

// Collect emits one target_info series per running target.
func (e *Engine) Collect(ch chan<- prometheus.Metric) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var names []string
	for _, rt := range e.running {
		for k := range rt.cfg.Labels {
			if !slices.Contains(names, k) {
				names = append(names, k)
			}
		}
	}
	slices.Sort(names)
	desc := prometheus.NewDesc("redis_prober_target_info",
		"One series per configured target with its extra labels from the config file; join on target.",
		append([]string{"target", "kind"}, names...), nil)
	for name, rt := range e.running {
		values := []string{name, rt.cfg.kind()}
		for _, k := range names {
			values = append(values, rt.cfg.Labels[k])
		}
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, 1, values...)
		rt.discovery.collect(ch, name)
	}
}

func (t Target) kind() string {
	switch {
	case t.Sentinel != nil:
		return "sentinel"
	default:
		return "server" // a Cluster is found at run time from a server address
	}
}
