package collector

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// readSysctl reads one integer sysctl, e.g. vm.swappiness from
// <procfs>/sys/vm/swappiness.
func readSysctl(paths Paths, name string) (int64, error) {
	s, err := readTrimmed(paths.proc(append([]string{"sys"}, strings.Split(name, ".")...)...))
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("sysctl %s: %q is not a number", name, s)
	}
	return v, nil
}

// readSysctls reads what it can; a missing one is left out.
func readSysctls(paths Paths) (map[string]int64, error) {
	out := map[string]int64{}
	var errs []error
	for _, name := range SysctlNames() {
		v, err := readSysctl(paths, name)
		if err != nil {
			if !errors.Is(err, ErrNoData) {
				errs = append(errs, err)
			}
			continue
		}
		out[name] = v
	}
	if len(out) == 0 && len(errs) == 0 {
		return out, fmt.Errorf("sysctl: none readable under %s: %w", paths.proc("sys"), ErrNoData)
	}
	return out, errors.Join(errs...)
}

type sysctlCollector struct {
	paths Paths
	desc  *prometheus.Desc
}

func newSysctlCollector(paths Paths) source {
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
