package collector

import (
	"bufio"
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// parseKeyValues parses the "name value" lines of /proc/vmstat. procfs has
// no parser for this file.
func parseVMStat(b []byte) (map[string]uint64, error) {
	out := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 {
			return nil, fmt.Errorf("vmstat: malformed line %q", sc.Text())
		}
		v, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("vmstat: %s: %w", f[0], err)
		}
		out[f[0]] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("vmstat: %w", err)
	}
	return out, nil
}

type vmstatCollector struct {
	paths                     Paths
	swapIn, swapOut, thp, cmp *prometheus.Desc
}

func newVMStatCollector(paths Paths) source {
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
	b, err := readFile(c.paths.proc("vmstat"))
	if err != nil {
		return err
	}
	vm, err := parseVMStat(b)
	if err != nil {
		return err
	}
	counter := func(d *prometheus.Desc, key string, labels ...string) {
		if v, ok := vm[key]; ok {
			constMetric(ch, d, prometheus.CounterValue, float64(v), labels...)
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
