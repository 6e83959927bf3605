package collector

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
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
		o.g.series(d, vt, v, sl, labels)
		return
	}
	targetMetric(o.ch, d, vt, v, sl, labels...)
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

	metrics  slab[dto.Metric]
	gauges   slab[dto.Gauge]
	counters slab[dto.Counter]
	floats   slab[float64]
	labels   slab[*dto.LabelPair]
}

type ownPair struct {
	name  *string
	value string
}

func newGathering() *gathering {
	return &gathering{fams: map[*prometheus.Desc]*dto.MetricFamily{}, pairs: map[ownPair]*dto.LabelPair{}}
}

// slab hands out elements of chunks allocated slabSize at a time.
type slab[T any] struct{ free []T }

const slabSize = 1024

func (s *slab[T]) one() *T {
	if len(s.free) == 0 {
		s.free = make([]T, slabSize)
	}
	p := &s.free[0]
	s.free = s.free[1:]
	return p
}

// many returns n elements, full (length n, capacity n).
func (s *slab[T]) many(n int) []T {
	if n > slabSize {
		return make([]T, n)
	}
	if len(s.free) < n {
		s.free = make([]T, slabSize)
	}
	p := s.free[:n:n]
	s.free = s.free[n:]
	return p
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
	mf := g.family(d)
	t := metricType(m)
	if mf.Type == nil {
		mf.Type = t.Enum()
	} else if mf.GetType() != t {
		g.errs.Append(fmt.Errorf("collected metric %s is a %s, its family a %s", d.name, t, mf.GetType()))
		return
	}
	mf.Metric = append(mf.Metric, m)
}

func metricType(m *dto.Metric) dto.MetricType {
	switch {
	case m.Gauge != nil:
		return dto.MetricType_GAUGE
	case m.Counter != nil:
		return dto.MetricType_COUNTER
	case m.Histogram != nil:
		return dto.MetricType_HISTOGRAM
	case m.Summary != nil:
		return dto.MetricType_SUMMARY
	default:
		return dto.MetricType_UNTYPED
	}
}

// series is sink.series for a Gather: nothing for a wrong label count or
// a label value that is not valid UTF-8, as targetMetric.
func (g *gathering) series(d targetDesc, vt prometheus.ValueType, v float64, sl *seriesLabels, labels []string) {
	if sl == nil || !sl.valid || len(labels) != len(d.own) {
		return
	}
	pairs := g.labels.many(2 + len(labels))
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
	m := g.metrics.one()
	m.Label = pairs
	f := g.floats.one()
	*f = v
	switch vt {
	case prometheus.CounterValue:
		c := g.counters.one()
		c.Value = f
		m.Counter = c
	default:
		gg := g.gauges.one()
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
	out := g.metrics.one()
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
	sortFamilies(out)
	for _, mf := range out {
		normalizeMetrics(mf, &g.errs)
	}
	return out, g.errs.MaybeUnwrap()
}

func sortFamilies(mfs []*dto.MetricFamily) {
	slices.SortFunc(mfs, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
}

// normalizeMetrics sorts the metrics of mf by label values and drops a
// metric with the labels of the one before it.
func normalizeMetrics(mf *dto.MetricFamily, errs *prometheus.MultiError) {
	if len(mf.Metric) < 2 {
		return
	}
	sortMetrics(mf.Metric)
	kept := mf.Metric[:1]
	for _, m := range mf.Metric[1:] {
		if compareMetrics(kept[len(kept)-1], m) == 0 {
			errs.Append(fmt.Errorf("collected metric %s %s was collected before with the same name and label values", mf.GetName(), m))
			continue
		}
		kept = append(kept, m)
	}
	mf.Metric = kept
}

// sortMetrics sorts ms as compareMetrics does. A family's series come
// target by target, in the order of the target and node labels, so they
// are sorted but for the labels of their own, which sort before those
// (kind, check, collector...): ms is spread into buckets by its first
// label's value, keeping the order within a bucket, which is then most
// often sorted. A full sort of 60,000 series, whose label values are
// behind two pointers each, cost a third of a Gather.
func sortMetrics(ms []*dto.Metric) {
	if slices.IsSortedFunc(ms, compareMetrics) {
		return
	}
	n := len(ms[0].Label)
	index := map[string]int{}
	var firsts []string
	for _, m := range ms {
		if len(m.Label) != n || n == 0 {
			slices.SortFunc(ms, compareMetrics)
			return
		}
		v := m.Label[0].GetValue()
		if _, ok := index[v]; !ok {
			index[v] = len(firsts)
			firsts = append(firsts, v)
		}
	}
	// Each bucket's offset in the sorted order of the first values.
	sorted := slices.Clone(firsts)
	slices.Sort(sorted)
	offset := make([]int, len(firsts))
	for _, m := range ms {
		offset[index[m.Label[0].GetValue()]]++
	}
	at := 0
	for _, v := range sorted {
		i := index[v]
		offset[i], at = at, at+offset[i]
	}
	start := slices.Clone(offset)
	out := make([]*dto.Metric, len(ms))
	for _, m := range ms {
		i := index[m.Label[0].GetValue()]
		out[offset[i]] = m
		offset[i]++
	}
	copy(ms, out)
	for i := range firsts {
		if b := ms[start[i]:offset[i]]; !slices.IsSortedFunc(b, compareMetrics) {
			slices.SortFunc(b, compareMetrics)
		}
	}
}

// compareMetrics orders metrics as client_golang's registry does: by
// label count, then label values in order (the pairs are sorted by name),
// then timestamp, none last.
func compareMetrics(a, b *dto.Metric) int {
	if c := cmp.Compare(len(a.Label), len(b.Label)); c != 0 {
		return c
	}
	for i, lp := range a.Label {
		if c := strings.Compare(lp.GetValue(), b.Label[i].GetValue()); c != 0 {
			return c
		}
	}
	switch {
	case a.TimestampMs == nil && b.TimestampMs == nil:
		return 0
	case a.TimestampMs == nil:
		return 1
	case b.TimestampMs == nil:
		return -1
	}
	return cmp.Compare(a.GetTimestampMs(), b.GetTimestampMs())
}
