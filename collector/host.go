package collector

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redis-prober/redis-prober/internal/faultlog"
	"github.com/redis-prober/redis-prober/internal/host"
)

// Host runs the enabled host collectors at scrape time. Register it once per
// process: the host is the same for every target.
type Host struct {
	health  healthDescs
	sources []namedSource
	faults  *faultlog.Log
}

type namedSource struct {
	name string
	src  source
}

var _ prometheus.Collector = (*Host)(nil)

// NewHost builds the enabled host collectors over paths.
func NewHost(paths host.Paths, enabled Enabled, log *slog.Logger) *Host {
	h := &Host{health: newHealthDescs(prometheus.Labels{"target": "", "node": ""}), faults: faultlog.Collectors(log, ErrNoData)}
	for _, d := range All() {
		if d.Kind != KindHost || !enabled[d.Name] {
			continue
		}
		h.sources = append(h.sources, namedSource{name: d.Name, src: d.newHost(paths)})
	}
	return h
}

// Describe implements prometheus.Collector.
func (h *Host) Describe(ch chan<- *prometheus.Desc) {
	h.health.describe(ch)
	for _, s := range h.sources {
		s.src.describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (h *Host) Collect(ch chan<- prometheus.Metric) {
	out := &sink{ch: ch}
	for _, s := range h.sources {
		start := time.Now()
		err := s.src.update(ch)
		h.health.emit(out, nil, s.name, err, time.Since(start).Seconds(), true)
		h.faults.Observe(s.name, err, true)
	}
}
