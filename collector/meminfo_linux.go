package collector

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// parseMeminfo parses /proc/meminfo into bytes ("MemTotal: 16384 kB").
func parseMeminfo(b []byte) (map[string]uint64, error) {
	out := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return nil, fmt.Errorf("meminfo: %s has no value", name)
		}
		v, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("meminfo: %s: %w", name, err)
		}
		if len(f) > 1 && f[1] == "kB" {
			v *= 1024
		}
		out[strings.TrimSpace(name)] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("meminfo: %w", err)
	}
	return out, nil
}

func readMeminfo(paths Paths) (map[string]uint64, error) {
	b, err := readFile(paths.proc("meminfo"))
	if err != nil {
		return nil, err
	}
	return parseMeminfo(b)
}

type meminfoCollector struct {
	paths                                   Paths
	memTotal, memAvail, swapTotal, swapFree *prometheus.Desc
}

func newMeminfoCollector(paths Paths) source {
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
	mi, err := readMeminfo(c.paths)
	if err != nil {
		return err
	}
	for _, g := range []struct {
		d   *prometheus.Desc
		key string
	}{{c.memTotal, "MemTotal"}, {c.memAvail, "MemAvailable"}, {c.swapTotal, "SwapTotal"}, {c.swapFree, "SwapFree"}} {
		if v, ok := mi[g.key]; ok {
			constMetric(ch, g.d, prometheus.GaugeValue, float64(v))
		}
	}
	return nil
}
