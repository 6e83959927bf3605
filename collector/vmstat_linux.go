package collector

import (
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redis-prober/redis-prober/internal/host"
)

type vmstatCollector struct {
	paths                     host.Paths
	boot                      bootTime // since when the counters count
	swapIn, swapOut, thp, cmp *prometheus.Desc
}

func newVMStatCollector(paths host.Paths) source {
	return &vmstatCollector{
		paths: paths,
		swapIn: prometheus.NewDesc("redis_prober_host_swap_in_pages_total",
			"Pages swapped in from disk (/proc/vmstat pswpin): a process waited for each one.", nil, nil),
		swapOut: prometheus.NewDesc("redis_prober_host_swap_out_pages_total",
			"Pages swapped out to disk (/proc/vmstat pswpout).", nil, nil),
		thp: prometheus.NewDesc("redis_prober_host_thp_events_total",
			"Transparent huge page events from /proc/vmstat thp_* counters, by event (the counter name without thp_).",
			[]string{"event"}, nil),
		cmp: prometheus.NewDesc("redis_prober_host_compact_stalls_total",
			"Allocations that stalled for direct memory compaction (/proc/vmstat compact_stall), a classic THP latency source.", nil, nil),
	}
}

func (c *vmstatCollector) describe(ch chan<- *prometheus.Desc) {
	ch <- c.swapIn
	ch <- c.swapOut
	ch <- c.thp
	ch <- c.cmp
}

func (c *vmstatCollector) update(ch chan<- prometheus.Metric) error {
	vm, err := c.paths.Host().VMStat()
	if err != nil {
		return err
	}
	boot := c.boot.get(c.paths)
	counter := func(d *prometheus.Desc, key string, labels ...string) {
		if v, ok := vm[key]; ok {
			constCounter(ch, d, float64(v), boot, labels...)
		}
	}
	counter(c.swapIn, "pswpin")
	counter(c.swapOut, "pswpout")
	counter(c.cmp, "compact_stall")
	keys := make([]string, 0, len(vm))
	for k := range vm {
		if strings.HasPrefix(k, "thp_") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		counter(c.thp, k, strings.TrimPrefix(k, "thp_"))
	}
	return nil
}
