package collector

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Pressure is the cumulative stall time of /proc/pressure/memory.
type Pressure struct {
	SomeMicros, FullMicros uint64
	HasFull                bool
}

// parsePressure parses a PSI file:
//
//	some avg10=0.00 avg60=0.00 avg300=0.00 total=0
//	full avg10=0.00 avg60=0.00 avg300=0.00 total=0
func parsePressure(b []byte) (Pressure, error) {
	var p Pressure
	var hasSome bool
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		var total uint64
		found := false
		for _, kv := range f[1:] {
			k, v, ok := strings.Cut(kv, "=")
			if ok && k == "total" {
				n, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					return Pressure{}, fmt.Errorf("pressure: %s total: %w", f[0], err)
				}
				total, found = n, true
			}
		}
		if !found {
			return Pressure{}, fmt.Errorf("pressure: no total in %q", sc.Text())
		}
		switch f[0] {
		case "some":
			p.SomeMicros, hasSome = total, true
		case "full":
			p.FullMicros, p.HasFull = total, true
		}
	}
	if err := sc.Err(); err != nil {
		return Pressure{}, fmt.Errorf("pressure: %w", err)
	}
	if !hasSome {
		return Pressure{}, fmt.Errorf("pressure: no some line")
	}
	return p, nil
}

type pressureCollector struct {
	paths Paths
	desc  *prometheus.Desc
}

func newPressureCollector(paths Paths) source {
	return &pressureCollector{paths: paths, desc: prometheus.NewDesc("redis_prober_host_memory_pressure_seconds_total",
		"Time tasks stalled waiting for memory (/proc/pressure/memory): kind some = at least one task, full = all non-idle tasks at once.",
		[]string{"kind"}, nil)}
}

func (c *pressureCollector) describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *pressureCollector) update(ch chan<- prometheus.Metric) error {
	b, err := readFile(c.paths.proc("pressure", "memory"))
	if err != nil {
		return err
	}
	p, err := parsePressure(b)
	if err != nil {
		return err
	}
	constMetric(ch, c.desc, prometheus.CounterValue, float64(p.SomeMicros)/1e6, "some")
	if p.HasFull {
		constMetric(ch, c.desc, prometheus.CounterValue, float64(p.FullMicros)/1e6, "full")
	}
	return nil
}
