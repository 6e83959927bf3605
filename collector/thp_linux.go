package collector

import (
	"errors"
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// parseTHPMode parses a /sys/kernel/mm/transparent_hugepage file such as
// "always [madvise] never". Exactly one mode must be bracketed.
func parseTHPMode(s string) (THPMode, error) {
	var m THPMode
	for _, w := range strings.Fields(s) {
		if strings.HasPrefix(w, "[") && strings.HasSuffix(w, "]") && len(w) > 2 {
			if m.Active != "" {
				return THPMode{}, fmt.Errorf("two active modes in %q", s)
			}
			w = w[1 : len(w)-1]
			m.Active = w
		}
		if strings.ContainsAny(w, "[]") {
			return THPMode{}, fmt.Errorf("malformed mode %q", w)
		}
		m.Modes = append(m.Modes, w)
	}
	if m.Active == "" {
		return THPMode{}, fmt.Errorf("no active mode in %q", s)
	}
	return m, nil
}

// readTHP reads one THP file ("enabled" or "defrag").
func readTHP(paths Paths, file string) (THPMode, error) {
	s, err := readTrimmed(paths.sys("kernel", "mm", "transparent_hugepage", file))
	if err != nil {
		return THPMode{}, err
	}
	m, err := parseTHPMode(s)
	if err != nil {
		return THPMode{}, fmt.Errorf("transparent_hugepage/%s: %w", file, err)
	}
	return m, nil
}

type thpCollector struct {
	paths           Paths
	enabled, defrag *prometheus.Desc
}

func newTHPCollector(paths Paths) source {
	return &thpCollector{
		paths: paths,
		enabled: prometheus.NewDesc("redis_prober_host_thp_enabled",
			"Transparent huge pages mode of /sys/kernel/mm/transparent_hugepage/enabled: 1 for the active mode, 0 for the others.",
			[]string{"mode"}, nil),
		defrag: prometheus.NewDesc("redis_prober_host_thp_defrag",
			"Transparent huge pages mode of /sys/kernel/mm/transparent_hugepage/defrag: 1 for the active mode, 0 for the others.",
			[]string{"mode"}, nil),
	}
}

func (c *thpCollector) describe(ch chan<- *prometheus.Desc) {
	ch <- c.enabled
	ch <- c.defrag
}

func (c *thpCollector) update(ch chan<- prometheus.Metric) error {
	var errs []error
	for _, f := range []struct {
		file string
		desc *prometheus.Desc
	}{{"enabled", c.enabled}, {"defrag", c.defrag}} {
		m, err := readTHP(c.paths, f.file)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, mode := range m.Modes {
			v := 0.0
			if mode == m.Active {
				v = 1
			}
			constMetric(ch, f.desc, prometheus.GaugeValue, v, mode)
		}
	}
	return errors.Join(errs...)
}
