package collector

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/redis-prober/redis-prober/internal/host"
)

type sysctlCollector struct {
	paths host.Paths
	desc  *prometheus.Desc
}

func newSysctlCollector(paths host.Paths) source {
	return &sysctlCollector{paths: paths, desc: prometheus.NewDesc("redis_prober_host_sysctl",
		"Kernel settings that matter to Redis latency, by name (net.* ones are those of the prober's network namespace).",
		[]string{"name"}, nil)}
}

func (c *sysctlCollector) describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *sysctlCollector) update(ch chan<- prometheus.Metric) error {
	vals, err := readSysctls(c.paths)
	for _, name := range SysctlNames() {
		if v, ok := vals[name]; ok {
			constMetric(ch, c.desc, prometheus.GaugeValue, float64(v), name)
		}
	}
	return err
}
