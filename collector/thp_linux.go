package collector

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redis-prober/redis-prober/internal/host"
)

type thpCollector struct {
	paths           host.Paths
	enabled, defrag *prometheus.Desc
}

func newTHPCollector(paths host.Paths) source {
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
		m, err := c.paths.Host().THP(f.file)
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
