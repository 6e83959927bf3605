package collector

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/redis-prober/redis-prober/internal/host"
)

type meminfoCollector struct {
	paths                                   host.Paths
	memTotal, memAvail, swapTotal, swapFree *prometheus.Desc
}

func newMeminfoCollector(paths host.Paths) source {
	return &meminfoCollector{
		paths:     paths,
		memTotal:  prometheus.NewDesc("redis_prober_host_memory_total_bytes", "Host RAM (/proc/meminfo MemTotal).", nil, nil),
		memAvail:  prometheus.NewDesc("redis_prober_host_memory_available_bytes", "Host RAM available without swapping (/proc/meminfo MemAvailable).", nil, nil),
		swapTotal: prometheus.NewDesc("redis_prober_host_swap_total_bytes", "Swap space configured on the host (/proc/meminfo SwapTotal).", nil, nil),
		swapFree:  prometheus.NewDesc("redis_prober_host_swap_free_bytes", "Swap space unused (/proc/meminfo SwapFree).", nil, nil),
	}
}

func (c *meminfoCollector) describe(ch chan<- *prometheus.Desc) {
	ch <- c.memTotal
	ch <- c.memAvail
	ch <- c.swapTotal
	ch <- c.swapFree
}

func (c *meminfoCollector) update(ch chan<- prometheus.Metric) error {
	mi, err := c.paths.Host().Meminfo()
	if err != nil {
		return err
	}
	for _, g := range []struct {
		d *prometheus.Desc
		v *uint64
	}{{c.memTotal, mi.MemTotalBytes}, {c.memAvail, mi.MemAvailableBytes}, {c.swapTotal, mi.SwapTotalBytes}, {c.swapFree, mi.SwapFreeBytes}} {
		if g.v != nil {
			constMetric(ch, g.d, prometheus.GaugeValue, float64(*g.v))
		}
	}
	return nil
}
