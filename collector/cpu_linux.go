package collector

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/prometheus/client_golang/prometheus"
)

// readGovernors counts the CPUs per frequency governor. Virtual machines and
// containers often have no cpufreq at all: ErrNoData.
func readGovernors(paths Paths) (map[string]int, error) {
	files, err := filepath.Glob(paths.sys("devices", "system", "cpu", "cpu[0-9]*", "cpufreq", "scaling_governor"))
	if err != nil {
		return nil, fmt.Errorf("cpufreq: %w", err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no cpufreq scaling_governor under %s: %w", paths.sys("devices", "system", "cpu"), ErrNoData)
	}
	out := map[string]int{}
	for _, f := range files {
		g, err := readTrimmed(f)
		if err != nil {
			return nil, err
		}
		out[g]++
	}
	return out, nil
}

// readNUMANodes counts the NUMA nodes the kernel knows.
func readNUMANodes(paths Paths) (int, error) {
	nodes, err := filepath.Glob(paths.sys("devices", "system", "node", "node[0-9]*"))
	if err != nil {
		return 0, fmt.Errorf("numa: %w", err)
	}
	if len(nodes) == 0 {
		return 0, fmt.Errorf("no NUMA nodes under %s: %w", paths.sys("devices", "system", "node"), ErrNoData)
	}
	return len(nodes), nil
}

type cpuCollector struct {
	paths          Paths
	governor, numa *prometheus.Desc
}

func newCPUCollector(paths Paths) source {
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
	govs, gerr := readGovernors(c.paths)
	names := make([]string, 0, len(govs))
	for g := range govs {
		names = append(names, g)
	}
	sort.Strings(names)
	for _, g := range names {
		constMetric(ch, c.governor, prometheus.GaugeValue, float64(govs[g]), g)
	}
	n, nerr := readNUMANodes(c.paths)
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
