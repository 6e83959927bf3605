package collector

import (
	"errors"
	"sort"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redis-prober/redis-prober/internal/host"
)

type cpuCollector struct {
	paths          host.Paths
	governor, numa *prometheus.Desc
}

func newCPUCollector(paths host.Paths) source {
	return &cpuCollector{
		paths: paths,
		governor: prometheus.NewDesc("redis_prober_host_cpu_governor",
			"Number of CPUs per cpufreq scaling governor (powersave and ondemand add wake-up latency to an idle Redis).",
			[]string{"governor"}, nil),
		numa: prometheus.NewDesc("redis_prober_host_numa_nodes", "NUMA nodes of the host.", nil, nil),
	}
}

func (c *cpuCollector) describe(ch chan<- *prometheus.Desc) {
	ch <- c.governor
	ch <- c.numa
}

func (c *cpuCollector) update(ch chan<- prometheus.Metric) error {
	govs, gerr := c.paths.Host().CPUGovernors()
	names := make([]string, 0, len(govs))
	for g := range govs {
		names = append(names, g)
	}
	sort.Strings(names)
	for _, g := range names {
		constMetric(ch, c.governor, prometheus.GaugeValue, float64(govs[g]), g)
	}
	n, nerr := c.paths.Host().NUMANodes()
	if nerr == nil {
		constMetric(ch, c.numa, prometheus.GaugeValue, float64(n))
	}
	switch {
	case gerr != nil && nerr != nil:
		return errors.Join(gerr, nerr)
	case gerr != nil && !errors.Is(gerr, ErrNoData):
		return gerr
	case nerr != nil && !errors.Is(nerr, ErrNoData):
		return nerr
	}
	return nil
}
