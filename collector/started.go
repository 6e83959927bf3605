package collector

import (
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/redis-prober/redis-prober/internal/host"
)

// SinceStart wraps a collector whose counters, histograms and summaries
// all count since start (client_golang's Go and process collectors: since
// the process started) but carry no created timestamp, so that each one
// collected without one carries start. The metrics named in except count
// since something else (process_network_*_total: the network namespace's
// interfaces) and are left as they are. A zero start wraps nothing.
func SinceStart(c prometheus.Collector, start time.Time, except ...string) prometheus.Collector {
	if start.IsZero() {
		return c
	}
	s := &sinceStart{Collector: c, start: timestamppb.New(start), except: map[*prometheus.Desc]bool{}}
	if len(except) > 0 {
		ch := make(chan *prometheus.Desc)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			for _, name := range except {
				if descName(d) == name {
					s.except[d] = true
				}
			}
		}
	}
	return s
}

type sinceStart struct {
	prometheus.Collector
	start  *timestamppb.Timestamp // shared read-only by every metric
	except map[*prometheus.Desc]bool
}

// Collect implements prometheus.Collector.
func (s *sinceStart) Collect(ch chan<- prometheus.Metric) {
	inner := make(chan prometheus.Metric)
	go func() { s.Collector.Collect(inner); close(inner) }()
	for m := range inner {
		if s.except[m.Desc()] {
			ch <- m
			continue
		}
		ch <- startedMetric{Metric: m, start: s.start}
	}
}

// startedMetric is a metric whose counter, histogram or summary gets a
// created timestamp when it has none.
type startedMetric struct {
	prometheus.Metric
	start *timestamppb.Timestamp
}

func (m startedMetric) Write(out *dto.Metric) error {
	if err := m.Metric.Write(out); err != nil {
		return err
	}
	switch {
	case out.Counter != nil && out.Counter.CreatedTimestamp == nil:
		out.Counter.CreatedTimestamp = m.start
	case out.Histogram != nil && out.Histogram.CreatedTimestamp == nil:
		out.Histogram.CreatedTimestamp = m.start
	case out.Summary != nil && out.Summary.CreatedTimestamp == nil:
		out.Summary.CreatedTimestamp = m.start
	}
	return nil
}

// descName reads the metric name of d from its String form, the only
// place client_golang shows it: Desc{fqName: "name", ...}.
func descName(d *prometheus.Desc) string {
	s := d.String()
	_, rest, ok := strings.Cut(s, "fqName: ")
	if !ok {
		return ""
	}
	name, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return ""
	}
	name, _ = strconv.Unquote(name)
	return name
}

// ProcessStarted is when process pid started, from /proc/<pid>/stat
// under paths (rounded down with the boot time); zero where /proc cannot
// tell (another OS).
func ProcessStarted(paths host.Paths, pid int) time.Time {
	t, err := paths.Host().Process(pid).StartTime()
	if err != nil || t <= 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(t*1e9))
}
