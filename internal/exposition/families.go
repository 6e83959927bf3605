package exposition

// The family building: what client_golang's registry does with the
// series of its collectors (write each into a dto.Metric, group them by
// family, sort them, refuse a duplicate), without its per-series checks
// of label names and hashes, which the prober's own collectors cannot
// fail. At 1,000 targets those checks and the registry's sort (over label
// pairs scattered on the heap) were the longest part of a scrape.

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

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
	sorted  map[*dto.MetricFamily]bool // sorted by Collect already
	src     []prometheus.Metric
}

// Collect gathers c, every series of which belongs to the family name
// (help), of the type of its first series. A family with no series is
// left out, as the registry leaves it out. With an Order, the family is
// sorted at once, from the order its series had at the last Gather when
// they are the same (see Order).
func (b *Builder) Collect(name, help string, c prometheus.Collector, o *Order) {
	if b.ch == nil {
		b.ch = make(chan prometheus.Metric, 256)
	}
	go func() {
		c.Collect(b.ch)
		b.ch <- nil
	}()
	mf := &dto.MetricFamily{Name: &name, Help: &help}
	b.src = b.src[:0]
	for m := range b.ch {
		if m == nil {
			break
		}
		out := b.metrics.One()
		if err := m.Write(out); err != nil {
			b.errs.Append(fmt.Errorf("error collecting metric %s: %w", name, err))
			continue
		}
		if err := AppendMetric(mf, out); err != nil {
			b.errs.Append(err)
			continue
		}
		b.src = append(b.src, m)
	}
	if len(mf.Metric) == 0 {
		return
	}
	b.out = append(b.out, mf)
	if o != nil && o.sort(b.src, mf) {
		if b.sorted == nil {
			b.sorted = map[*dto.MetricFamily]bool{}
		}
		b.sorted[mf] = true
	}
}

// Result returns the families sorted as the registry sorts them (see
// Normalize), with what went wrong.
func (b *Builder) Result() ([]*dto.MetricFamily, error) {
	SortFamilies(b.out)
	for _, mf := range b.out {
		if !b.sorted[mf] {
			Normalize(mf, &b.errs)
		}
	}
	return b.out, b.errs.MaybeUnwrap()
}

// Order keeps the order of one family's series from one Gather to the
// next, by the identity of the metrics its collector hands out (a vector
// hands out the same child every time). While the set of series is the
// same, the next Gather places each where it was instead of sorting: at
// 1,000 targets the sort of the probe's 35,000 series, though by keys,
// was much of their gathering (docs/performance.md, "The hand-written parts"). It is safe for
// concurrent use.
//
// The ranks hold the metrics of the last Gather, so a child deleted since
// cannot be freed and its address cannot come back as another child's
// while its old rank is kept: a set that lost a child no longer matches
// (fewer series, or one unknown), and is sorted afresh.
type Order struct {
	mu   sync.Mutex
	rank map[prometheus.Metric]int
}

// sort sorts mf, whose metrics were written from src, and tells whether
// it did; false leaves mf to Normalize (a metric that cannot key a map,
// a duplicate series).
func (o *Order) sort(src []prometheus.Metric, mf *dto.MetricFamily) bool {
	for _, m := range src {
		if !reflect.TypeOf(m).Comparable() {
			return false
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	ms := mf.Metric
	if len(src) == len(o.rank) {
		placed := make([]*dto.Metric, len(ms))
		same := true
		for i, m := range src {
			r, ok := o.rank[m]
			if !ok || placed[r] != nil {
				same = false
				break
			}
			placed[r] = ms[i]
		}
		if same {
			copy(ms, placed)
			return true
		}
	}
	perm := keyOrder(ms)
	byPerm := func(a, b int) int { return CompareMetrics(ms[a], ms[b]) }
	if !slices.IsSortedFunc(perm, byPerm) {
		slices.SortStableFunc(perm, byPerm) // a NUL byte in a value
	}
	o.rank = nil
	for r := 1; r < len(perm); r++ {
		if byPerm(perm[r-1], perm[r]) == 0 {
			return false // a duplicate: Normalize drops it with an error
		}
	}
	sorted := make([]*dto.Metric, len(ms))
	rank := make(map[prometheus.Metric]int, len(ms))
	for r, i := range perm {
		sorted[r] = ms[i]
		rank[src[i]] = r
	}
	copy(ms, sorted)
	o.rank = rank
	return true
}

// AppendMetric appends m to mf, whose type is that of its first metric; a
// metric of another type is refused.
func AppendMetric(mf *dto.MetricFamily, m *dto.Metric) error {
	t := metricType(m)
	if mf.Type == nil {
		mf.Type = t.Enum()
	} else if mf.GetType() != t {
		return fmt.Errorf("collected metric %s is a %s, its family a %s", mf.GetName(), t, mf.GetType())
	}
	mf.Metric = append(mf.Metric, m)
	return nil
}

// metricType is the type of a written metric.
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
		if CompareMetrics(kept[len(kept)-1], m) == 0 {
			errs.Append(fmt.Errorf("collected metric %s %s "+duplicateMessage, mf.GetName(), m))
			continue
		}
		kept = append(kept, m)
	}
	mf.Metric = kept
}

// sortMetrics sorts ms as CompareMetrics does. The series of a family
// often come target by target, in the order of the target and node labels, sorted
// but for the labels of their own, which sort before those (kind, check,
// collector...): ms is spread into buckets by its first label's value,
// keeping the order within a bucket, which is then most often sorted. A
// bucket that is not is sorted by keys (sortByKeys).
func sortMetrics(ms []*dto.Metric) {
	if slices.IsSortedFunc(ms, CompareMetrics) {
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
		if b := ms[start[i]:offset[i]]; !slices.IsSortedFunc(b, CompareMetrics) {
			sortByKeys(b)
		}
	}
}

// sortByKeys sorts ms as CompareMetrics does, by keys (keyOrder).
func sortByKeys(ms []*dto.Metric) {
	perm := keyOrder(ms)
	sorted := make([]*dto.Metric, len(ms))
	for r, i := range perm {
		sorted[r] = ms[i]
	}
	copy(ms, sorted)
	if !slices.IsSortedFunc(ms, CompareMetrics) {
		slices.SortStableFunc(ms, CompareMetrics)
	}
}

// keyOrder returns the indices of ms in the order of one key a metric:
// its label count and values in one string, then its timestamp. The
// series of a vector come in the order of its map, and a comparison sort
// reading their label values through two pointers each (label pairs made
// when each child was, all over the heap) waited for memory at every
// step; the keys are read once and compared where they lie together. A
// key orders as CompareMetrics only while no value holds a NUL byte: callers
// check the order.
func keyOrder(ms []*dto.Metric) []int {
	type keyed struct {
		key string
		i   int
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
	for i := range ms {
		ks[i] = keyed{all[from:ends[i]], i}
		from = ends[i]
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		if c := strings.Compare(a.key, b.key); c != 0 {
			return c
		}
		if c := compareTimestamps(ms[a.i], ms[b.i]); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	})
	perm := make([]int, len(ks))
	for r, k := range ks {
		perm[r] = k.i
	}
	return perm
}

// CompareMetrics orders metrics as client_golang's registry does: by label
// count, then label values in order (the pairs are sorted by name), then
// timestamp, none last.
func CompareMetrics(a, b *dto.Metric) int {
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
