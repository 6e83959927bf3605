// Package families builds the metric families of a Gather directly: what
// client_golang's registry does with the series of its collectors (write
// each into a dto.Metric, group them by family, sort them, refuse a
// duplicate), without its per-series checks of label names and hashes,
// which the prober's own collectors cannot fail. At 1,000 targets those
// checks and the registry's sort (over label pairs scattered on the heap)
// were the longest part of a scrape.
package families

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Slab hands out elements of chunks allocated SlabSize at a time: a few
// allocations instead of one a series, and neighbours in memory for the
// sort and the encoder that walk them.
type Slab[T any] struct{ free []T }

// SlabSize is how many elements a slab allocates at a time.
const SlabSize = 1024

// One returns a zero element.
func (s *Slab[T]) One() *T {
	if len(s.free) == 0 {
		s.free = make([]T, SlabSize)
	}
	p := &s.free[0]
	s.free = s.free[1:]
	return p
}

// Many returns n zero elements (length n, capacity n).
func (s *Slab[T]) Many(n int) []T {
	if n > SlabSize {
		return make([]T, n)
	}
	if len(s.free) < n {
		s.free = make([]T, SlabSize)
	}
	p := s.free[:n:n]
	s.free = s.free[n:]
	return p
}

// Builder gathers the series of collectors into families of known names.
// It is one Gather's: not safe for concurrent use.
type Builder struct {
	metrics Slab[dto.Metric]
	ch      chan prometheus.Metric
	errs    prometheus.MultiError
	out     []*dto.MetricFamily
}

// Collect gathers c, every series of which belongs to the family name
// (help), of the type of its first series. A family with no series is
// left out, as the registry leaves it out.
func (b *Builder) Collect(name, help string, c prometheus.Collector) {
	if b.ch == nil {
		b.ch = make(chan prometheus.Metric, 256)
	}
	go func() {
		c.Collect(b.ch)
		b.ch <- nil
	}()
	mf := &dto.MetricFamily{Name: &name, Help: &help}
	for m := range b.ch {
		if m == nil {
			break
		}
		out := b.metrics.One()
		if err := m.Write(out); err != nil {
			b.errs.Append(fmt.Errorf("error collecting metric %s: %w", name, err))
			continue
		}
		t := MetricType(out)
		if mf.Type == nil {
			mf.Type = t.Enum()
		} else if mf.GetType() != t {
			b.errs.Append(fmt.Errorf("collected metric %s is a %s, its family a %s", name, t, mf.GetType()))
			continue
		}
		mf.Metric = append(mf.Metric, out)
	}
	if len(mf.Metric) > 0 {
		b.out = append(b.out, mf)
	}
}

// Result returns the families sorted as the registry sorts them (see
// Normalize), with what went wrong.
func (b *Builder) Result() ([]*dto.MetricFamily, error) {
	SortFamilies(b.out)
	for _, mf := range b.out {
		Normalize(mf, &b.errs)
	}
	return b.out, b.errs.MaybeUnwrap()
}

// MetricType is the type of a written metric.
func MetricType(m *dto.Metric) dto.MetricType {
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

// SortFamilies sorts mfs by name.
func SortFamilies(mfs []*dto.MetricFamily) {
	slices.SortFunc(mfs, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
}

// Normalize sorts the metrics of mf by label values and drops a metric
// with the labels of the one before it, with an error, as the registry
// reports a series collected twice.
func Normalize(mf *dto.MetricFamily, errs *prometheus.MultiError) {
	if len(mf.Metric) < 2 {
		return
	}
	sortMetrics(mf.Metric)
	kept := mf.Metric[:1]
	for _, m := range mf.Metric[1:] {
		if Compare(kept[len(kept)-1], m) == 0 {
			errs.Append(fmt.Errorf("collected metric %s %s was collected before with the same name and label values", mf.GetName(), m))
			continue
		}
		kept = append(kept, m)
	}
	mf.Metric = kept
}

// sortMetrics sorts ms as Compare does. The series of a family often come
// target by target, in the order of the target and node labels, sorted
// but for the labels of their own, which sort before those (kind, check,
// collector...): ms is spread into buckets by its first label's value,
// keeping the order within a bucket, which is then most often sorted. A
// bucket that is not is sorted by keys (sortByKeys).
func sortMetrics(ms []*dto.Metric) {
	if slices.IsSortedFunc(ms, Compare) {
		return
	}
	n := len(ms[0].Label)
	index := map[string]int{}
	var firsts []string
	for _, m := range ms {
		if len(m.Label) != n || n == 0 {
			sortByKeys(ms)
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
		if b := ms[start[i]:offset[i]]; !slices.IsSortedFunc(b, Compare) {
			sortByKeys(b)
		}
	}
}

// sortByKeys sorts ms as Compare does, by one key a metric: its label
// count and values in one string. The series of a vector come in the
// order of its map, and a comparison sort reading their label values
// through two pointers each (label pairs made when each child was, all
// over the heap) waited for memory at every step; the keys are read once
// and compared where they lie together. A key orders as Compare only
// while no value holds a NUL byte, so the order is checked, and made by
// Compare where it is not.
func sortByKeys(ms []*dto.Metric) {
	type keyed struct {
		key string
		m   *dto.Metric
	}
	var buf []byte
	ends := make([]int, len(ms))
	for i, m := range ms {
		buf = append(buf, byte(min(len(m.Label), 255)))
		for _, lp := range m.Label {
			buf = append(buf, lp.GetValue()...)
			buf = append(buf, 0)
		}
		ends[i] = len(buf)
	}
	all := string(buf)
	ks := make([]keyed, len(ms))
	from := 0
	for i, m := range ms {
		ks[i] = keyed{all[from:ends[i]], m}
		from = ends[i]
	}
	slices.SortStableFunc(ks, func(a, b keyed) int {
		if c := strings.Compare(a.key, b.key); c != 0 {
			return c
		}
		return compareTimestamps(a.m, b.m)
	})
	for i, k := range ks {
		ms[i] = k.m
	}
	if !slices.IsSortedFunc(ms, Compare) {
		slices.SortStableFunc(ms, Compare)
	}
}

// Compare orders metrics as client_golang's registry does: by label
// count, then label values in order (the pairs are sorted by name), then
// timestamp, none last.
func Compare(a, b *dto.Metric) int {
	if c := cmp.Compare(len(a.Label), len(b.Label)); c != 0 {
		return c
	}
	for i, lp := range a.Label {
		if c := strings.Compare(lp.GetValue(), b.Label[i].GetValue()); c != 0 {
			return c
		}
	}
	return compareTimestamps(a, b)
}

func compareTimestamps(a, b *dto.Metric) int {
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
