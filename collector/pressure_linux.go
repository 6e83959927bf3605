package collector

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/redis-prober/redis-prober/internal/host"
)

type pressureCollector struct {
	paths host.Paths
	boot  bootTime // since when the stall times count
	desc  *prometheus.Desc
}

func newPressureCollector(paths host.Paths) source {
	return &pressureCollector{paths: paths, desc: prometheus.NewDesc("redis_prober_host_memory_pressure_seconds_total",
		"Time tasks stalled waiting for memory (/proc/pressure/memory): kind some = at least one task, full = all non-idle tasks at once.",
		[]string{"kind"}, nil)}
}

func (c *pressureCollector) describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *pressureCollector) update(ch chan<- prometheus.Metric) error {
	p, err := c.paths.Host().MemoryPressure()
	if err != nil {
		return err
	}
	boot := c.boot.get(c.paths)
	constCounter(ch, c.desc, float64(p.SomeMicros)/1e6, boot, "some")
	if p.HasFull {
		constCounter(ch, c.desc, float64(p.FullMicros)/1e6, boot, "full")
	}
	return nil
}
