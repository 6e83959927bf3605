package collector

import (
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/redis-prober/redis-prober/internal/safetext"
)

// MaxLabelValueLen bounds, in bytes, every label value that comes from a
// Redis reply (LATENCY LATEST event names, LATENCY HISTOGRAM command names,
// the version and role of INFO). Real values are short: the longest event
// class is "module-acquire-GIL" (18 bytes), the longest command with its
// subcommand about 40, and a version string a dozen; 128 leaves room for
// module commands and forks while keeping a hostile 1 MB name out of every
// scrape and every TSDB index.
const MaxLabelValueLen = 128

// LabelValue makes a value from Redis safe to use as a label value: bytes
// that are not valid UTF-8, control characters and other non-printable
// runes each become U+FFFD, and the result is cut to MaxLabelValueLen bytes
// on a rune boundary. client_golang refuses (MustNewConstMetric: panics on)
// invalid UTF-8, and control characters in a label break dashboards and
// terminals. A value that is already clean comes back unchanged without an
// allocation. This is the one sanitiser every collector (and the engine's
// server_info) uses.
func LabelValue(s string) string { return safetext.Label(s, MaxLabelValueLen) }

// constMetric sends a const metric, or nothing when client_golang refuses
// it (a label value that is not valid UTF-8, a wrong label count). The
// labels from Redis went through LabelValue already; this is the guard
// behind it, because MustNewConstMetric's panic costs the whole target's
// scrape and a stack trace at error level on every scrape.
func constMetric(ch chan<- prometheus.Metric, desc *prometheus.Desc, vt prometheus.ValueType, v float64, labels ...string) bool {
	m, err := prometheus.NewConstMetric(desc, vt, v, labels...)
	if err != nil {
		return false
	}
	ch <- m
	return true
}

// constCounter is constMetric for a counter that counts since start: its
// created timestamp, which a Prometheus with start timestamps on uses to
// count the increase up to its first sample. A zero start is unknown, and
// the counter has none.
func constCounter(ch chan<- prometheus.Metric, desc *prometheus.Desc, v float64, start time.Time, labels ...string) bool {
	if start.IsZero() {
		return constMetric(ch, desc, prometheus.CounterValue, v, labels...)
	}
	m, err := prometheus.NewConstMetricWithCreatedTimestamp(desc, prometheus.CounterValue, v, start, labels...)
	if err != nil {
		return false
	}
	ch <- m
	return true
}

// startStamp is the created timestamp of a counter or histogram that
// counts since t; nil when t is zero (unknown).
func startStamp(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

// targetLabels are the variable labels every Redis-side series starts
// with, followed by its own.
func targetLabels(own ...string) []string {
	return append([]string{"target", "node"}, own...)
}

// targetDesc is the descriptor of a Redis-side series, shared by every
// target: its variable labels are target, node and own. Its name, help and
// label order are kept for Gather, which builds the families itself.
type targetDesc struct {
	*prometheus.Desc
	own        []string
	name, help string
	// order lists the labels sorted by name, as a series carries them:
	// 0 is target, 1 node, 2+i own[i].
	order []int
}

func newTargetDesc(name, help string, own ...string) targetDesc {
	return describedTarget(prometheus.NewDesc(name, help, targetLabels(own...), nil), name, help, own...)
}

// describedTarget is the targetDesc of desc, made elsewhere (by a vector
// of client_golang, with the same name, help and labels).
func describedTarget(desc *prometheus.Desc, name, help string, own ...string) targetDesc {
	names := targetLabels(own...)
	order := make([]int, len(names))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(names[a], names[b]) })
	return targetDesc{Desc: desc, own: own, name: name, help: help, order: order}
}

// seriesLabels are a target's target and node label values, with their
// label pairs made once and shared by all its series (read-only), as
// client_golang shares a descriptor's const label pairs: 58,000 series of
// 1,000 targets would otherwise make 116,000 pairs a scrape.
type seriesLabels struct {
	values [2]string
	pairs  [2]*dto.LabelPair
	valid  bool // both values are valid UTF-8, checked once
}

func newSeriesLabels(target, node string) seriesLabels {
	return seriesLabels{
		values: [2]string{target, node},
		pairs:  [2]*dto.LabelPair{{Name: proto.String("target"), Value: proto.String(target)}, {Name: proto.String("node"), Value: proto.String(node)}},
		valid:  utf8.ValidString(target) && utf8.ValidString(node),
	}
}

// targetMetric sends a const gauge or counter of d for the target of sl
// with its own label values labels, a counter with start as its created
// timestamp (nil: none); or, for a nil sl (host collectors, whose desc
// has const labels), what constMetric sends. Like constMetric it sends
// nothing for a wrong label count or a value that is not valid UTF-8.
func targetMetric(ch chan<- prometheus.Metric, d targetDesc, vt prometheus.ValueType, v float64, start *timestamppb.Timestamp, sl *seriesLabels, labels ...string) bool {
	if sl == nil {
		if vt == prometheus.CounterValue && start != nil {
			return constCounter(ch, d.Desc, v, start.AsTime(), labels...)
		}
		return constMetric(ch, d.Desc, vt, v, labels...)
	}
	if len(labels) != len(d.own) || !sl.valid {
		return false
	}
	m := &seriesMetric{desc: d.Desc, vt: vt, v: v, start: start, labels: make([]*dto.LabelPair, 0, 2+len(labels))}
	m.labels = append(m.labels, sl.pairs[:]...)
	for i, l := range labels {
		if !utf8.ValidString(l) {
			return false
		}
		m.labels = append(m.labels, &dto.LabelPair{Name: &d.own[i], Value: proto.String(l)})
	}
	// Sorted by name, as client_golang's: a few pairs, insertion sort.
	for i := 1; i < len(m.labels); i++ {
		for j := i; j > 0 && m.labels[j].GetName() < m.labels[j-1].GetName(); j-- {
			m.labels[j], m.labels[j-1] = m.labels[j-1], m.labels[j]
		}
	}
	ch <- m
	return true
}

// seriesMetric is a const gauge or counter as client_golang's
// NewConstMetric makes one, over label pairs partly shared.
type seriesMetric struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair
	vt     prometheus.ValueType
	v      float64
	start  *timestamppb.Timestamp // a counter's created timestamp, shared read-only; nil: none
}

func (m *seriesMetric) Desc() *prometheus.Desc { return m.desc }

func (m *seriesMetric) Write(out *dto.Metric) error {
	out.Label = m.labels
	switch m.vt {
	case prometheus.CounterValue:
		out.Counter = &dto.Counter{Value: proto.Float64(m.v), CreatedTimestamp: m.start}
	case prometheus.GaugeValue:
		out.Gauge = &dto.Gauge{Value: proto.Float64(m.v)}
	default:
		out.Untyped = &dto.Untyped{Value: proto.Float64(m.v)}
	}
	return nil
}
