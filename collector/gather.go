package collector

import (
	"fmt"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/redis-prober/redis-prober/internal/exposition"
)

// sink is where the emit functions send a target's series: the channel of
// a Collect, or the families of a Gather, which builds them directly. At
// 1,000 targets (about 60,000 Redis-side series) the registry's work for
// each series of a Collect (a dto.Metric written through an interface, a
// hash for the duplicate check, a label check, then a sort of every family
// over pointers scattered on the heap) was most of the scrape.
type sink struct {
	ch chan<- prometheus.Metric // Collect
	g  *gathering               // Gather, when set
}

// series sends a gauge or counter of d for the target of sl with its own
// label values labels (see targetMetric).
func (o *sink) series(d targetDesc, vt prometheus.ValueType, v float64, sl *seriesLabels, labels ...string) {
	if o.g != nil {
		o.g.series(d, vt, v, nil, sl, labels)
		return
	}
	targetMetric(o.ch, d, vt, v, nil, sl, labels...)
}

// counter sends a counter of d, as series, with its start (created)
// timestamp: since when it counts, or nil when that is unknown. The
// pointer is shared, read-only, by every series that starts then.
func (o *sink) counter(d targetDesc, v float64, start *timestamppb.Timestamp, sl *seriesLabels, labels ...string) {
	if o.g != nil {
		o.g.series(d, prometheus.CounterValue, v, start, sl, labels)
		return
	}
	targetMetric(o.ch, d, prometheus.CounterValue, v, start, sl, labels...)
}

// metric sends m, a metric of family d made elsewhere (a histogram, a
// child of a vector).
func (o *sink) metric(d targetDesc, m prometheus.Metric) {
	if o.g != nil {
		o.g.metric(d, m)
		return
	}
	o.ch <- m
}

// gathering builds the families of one Gather. Its metrics, values and
// label pairs come from slabs: a few allocations instead of five a series,
// and neighbours in memory for the sort and the encoder that walk them.
// The label pairs of a target are its seriesLabels'; those of the own
// labels are shared by every series with the same name and value.
type gathering struct {
	fams  map[*prometheus.Desc]*dto.MetricFamily
	pairs map[ownPair]*dto.LabelPair
	errs  prometheus.MultiError

	metrics  exposition.Slab[dto.Metric]
	gauges   exposition.Slab[dto.Gauge]
	counters exposition.Slab[dto.Counter]
	floats   exposition.Slab[float64]
	labels   exposition.Slab[*dto.LabelPair]
}

type ownPair struct {
	name  *string
	value string
}

func newGathering() *gathering {
	return &gathering{fams: map[*prometheus.Desc]*dto.MetricFamily{}, pairs: map[ownPair]*dto.LabelPair{}}
}

func (g *gathering) family(d targetDesc) *dto.MetricFamily {
	mf := g.fams[d.Desc]
	if mf == nil {
		name, help := d.name, d.help // not &d.name: d would escape on every call
		mf = &dto.MetricFamily{Name: &name, Help: &help}
		g.fams[d.Desc] = mf
	}
	return mf
}

// add appends m to the family of d, whose type is that of its first metric.
func (g *gathering) add(d targetDesc, m *dto.Metric) {
	if err := exposition.AppendMetric(g.family(d), m); err != nil {
		g.errs.Append(err)
	}
}

// series is sink.series and sink.counter for a Gather: nothing for a
// wrong label count or a label value that is not valid UTF-8, as
// targetMetric. A counter carries start as its created timestamp.
func (g *gathering) series(d targetDesc, vt prometheus.ValueType, v float64, start *timestamppb.Timestamp, sl *seriesLabels, labels []string) {
	if sl == nil || !sl.valid || len(labels) != len(d.own) {
		return
	}
	pairs := g.labels.Many(2 + len(labels))
	for i, src := range d.order {
		switch src {
		case 0, 1:
			pairs[i] = sl.pairs[src]
		default:
			p := g.pair(&d.own[src-2], labels[src-2])
			if p == nil {
				return
			}
			pairs[i] = p
		}
	}
	m := g.metrics.One()
	m.Label = pairs
	f := g.floats.One()
	*f = v
	switch vt {
	case prometheus.CounterValue:
		c := g.counters.One()
		c.Value = f
		c.CreatedTimestamp = start
		m.Counter = c
	default:
		gg := g.gauges.One()
		gg.Value = f
		m.Gauge = gg
	}
	g.add(d, m)
}

// pair is the shared label pair name=value, nil when value is not valid
// UTF-8.
func (g *gathering) pair(name *string, value string) *dto.LabelPair {
	k := ownPair{name, value}
	if p, ok := g.pairs[k]; ok {
		return p
	}
	var p *dto.LabelPair
	if utf8.ValidString(value) {
		v := value
		p = &dto.LabelPair{Name: name, Value: &v}
	}
	g.pairs[k] = p
	return p
}

func (g *gathering) metric(d targetDesc, m prometheus.Metric) {
	out := g.metrics.One()
	if err := m.Write(out); err != nil {
		g.errs.Append(fmt.Errorf("error collecting metric %s: %w", d.name, err))
		return
	}
	g.add(d, out)
}

// result returns the families sorted by name, each one's metrics sorted
// as the registry sorts them, and a duplicate series dropped with an
// error, as the registry reports one.
func (g *gathering) result() ([]*dto.MetricFamily, error) {
	out := make([]*dto.MetricFamily, 0, len(g.fams))
	for _, mf := range g.fams {
		if len(mf.Metric) > 0 {
			out = append(out, mf)
		}
	}
	exposition.SortFamilies(out)
	for _, mf := range out {
		exposition.Normalize(mf, &g.errs)
	}
	return out, g.errs.MaybeUnwrap()
}
