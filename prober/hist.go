package prober

import (
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/redis-prober/redis-prober/internal/nativebucket"
)

// histVec is the probe's latency histogram family: native buckets of schema
// 3 (a factor of 2^(1/8) ≈ 1.09, what client_golang picks for the house
// factor of 1.1) beside the classic buckets, as client_golang's histogram,
// but each child keeps its native buckets in pages of flat atomic counters
// instead of sync.Maps. At 1,000 targets client_golang's native buckets
// were the largest live memory of the prober and grew for hours (each
// bucket a map entry of about 100 bytes, twice for its hot and cold
// halves); here a child is about 600 bytes plus 256 a page of 32 buckets
// in use (two or three for a node's latency), and never grows past
// histPages pages. The range is fixed, so there is no reset: values at or
// below histZero count in the zero bucket, values above 2^(histMaxIndex/8)
// seconds (about 68 minutes) in the last bucket.
type histVec struct {
	desc    *prometheus.Desc
	labels  []string
	classic []float64

	mu       sync.RWMutex
	children map[string]*hist
}

const (
	histSchema = 3
	histZero   = 1e-7 // the zero bucket's threshold, as HistogramOpts' NativeHistogramZeroThreshold
	// Bucket i holds (2^((i-1)/8), 2^(i/8)] (internal/nativebucket): from
	// just above histZero (index -186) to 2^12 s.
	histMinIndex = -186
	histMaxIndex = 96
	histPageLen  = 32
	histPages    = (histMaxIndex - histMinIndex + histPageLen) / histPageLen
)

// histIndex is the native bucket of v > histZero: the smallest i with
// v <= 2^(i/8), clamped to the fixed range.
func histIndex(v float64) int {
	return min(max(nativebucket.Index(v, histSchema), histMinIndex), histMaxIndex)
}

func newHistVec(name, help string, classic []float64, labels []string) *histVec {
	return &histVec{
		desc:     prometheus.NewDesc(name, help, labels, nil),
		labels:   labels,
		classic:  classic,
		children: map[string]*hist{},
	}
}

// WithLabelValues returns the child of the label values, created on first
// use. Callers resolve children once, off the hot path.
func (v *histVec) WithLabelValues(lvs ...string) prometheus.Observer {
	return v.withClassic(v.classic, lvs)
}

// withClassic is WithLabelValues for a child whose classic buckets are
// classic instead of the family's (nil: native buckets only, and the
// +Inf bucket, sum and count every histogram has). A child keeps the
// buckets it was created with.
func (v *histVec) withClassic(classic []float64, lvs []string) *hist {
	key := histKey(lvs)
	v.mu.RLock()
	h := v.children[key]
	v.mu.RUnlock()
	if h != nil {
		return h
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if h = v.children[key]; h == nil {
		h = &hist{
			labelPairs: prometheus.MakeLabelPairs(v.desc, lvs),
			values:     slices.Clone(lvs),
			// Its own copy: the written buckets point at these bounds.
			classic: slices.Clone(classic),
			counts:  make([]atomic.Uint64, len(classic)+1),
			created: timestamppb.New(time.Now()),
		}
		v.children[key] = h
	}
	return h
}

// histKey joins label values with a byte no valid label value holds alone
// unescaped (label values are UTF-8; 0xff is never a UTF-8 byte).
func histKey(lvs []string) string {
	n := 0
	for _, s := range lvs {
		n += len(s) + 1
	}
	b := make([]byte, 0, n)
	for _, s := range lvs {
		b = append(b, s...)
		b = append(b, 0xff)
	}
	return string(b)
}

// DeletePartialMatch drops every child whose labels include all of l, and
// says how many went.
func (v *histVec) DeletePartialMatch(l prometheus.Labels) int {
	idx := map[int]string{}
	for name, val := range l {
		i := slices.Index(v.labels, name)
		if i < 0 {
			return 0
		}
		idx[i] = val
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	n := 0
	for k, h := range v.children {
		match := true
		for i, val := range idx {
			if h.values[i] != val {
				match = false
				break
			}
		}
		if match {
			delete(v.children, k)
			n++
		}
	}
	return n
}

func (v *histVec) Describe(ch chan<- *prometheus.Desc) { ch <- v.desc }

func (v *histVec) Collect(ch chan<- prometheus.Metric) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	for _, h := range v.children {
		ch <- histMetric{desc: v.desc, h: h}
	}
}

// hist is one child: the sum, the classic bucket counts (not cumulative;
// the last is above every bound), the zero bucket and the native pages.
type hist struct {
	labelPairs []*dto.LabelPair
	values     []string
	classic    []float64
	created    *timestamppb.Timestamp // read-only: every Write points at it

	lastSpans, lastDeltas atomic.Int32 // the sizes of the last Write's

	sumBits atomic.Uint64
	counts  []atomic.Uint64
	zero    atomic.Uint64
	pages   [histPages]atomic.Pointer[[histPageLen]atomic.Uint64]
}

// Observe counts v (seconds): a few atomic operations, no lock, no
// allocation once its page exists.
func (h *hist) Observe(v float64) {
	if math.IsNaN(v) {
		return
	}
	h.counts[sort.SearchFloat64s(h.classic, v)].Add(1)
	if v <= histZero {
		h.zero.Add(1)
	} else {
		i := histIndex(v) - histMinIndex
		p := h.pages[i/histPageLen].Load()
		if p == nil {
			fresh := new([histPageLen]atomic.Uint64)
			if h.pages[i/histPageLen].CompareAndSwap(nil, fresh) {
				p = fresh
			} else {
				p = h.pages[i/histPageLen].Load()
			}
		}
		p[i%histPageLen].Add(1)
	}
	for {
		old := h.sumBits.Load()
		if h.sumBits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

type histMetric struct {
	desc *prometheus.Desc
	h    *hist
}

func (m histMetric) Desc() *prometheus.Desc { return m.desc }

// Write reads the child. The sample count is the sum of the native buckets
// read here, so count and buckets always agree; a sample that lands while
// they are read may be in the classic buckets and not yet in the count, so
// the classic counts are capped at it.
//
// The written fields point into a few arrays made for the whole metric, at
// the child's own bounds and creation time, and at shared constants (the
// schema, the zero threshold): a scrape at 1,000 targets writes 4,000
// histograms, and a pointer of their own for every field was most of what
// a scrape allocated, and of the GC's work (docs/performance.md, "The hand-written parts").
// Nothing writes to a written metric.
func (m histMetric) Write(out *dto.Metric) error {
	h := m.h
	// Sized as the last Write's: appending from nothing doubled the
	// deltas' array up to five times, a copy of garbage each time.
	spans := make([]histSpan, 0, h.lastSpans.Load())
	deltas := make([]int64, 0, h.lastDeltas.Load())
	var prev int64
	next := 0 // the index after the last bucket written
	zero := h.zero.Load()
	count := zero
	for p := range h.pages {
		page := h.pages[p].Load()
		if page == nil {
			continue
		}
		for j := range page {
			c := page[j].Load()
			if c == 0 {
				continue
			}
			count += c
			i := histMinIndex + p*histPageLen + j
			// A gap of one or two empty buckets is cheaper as zeros
			// than as a new span (client_golang's rule).
			if gap := i - next; len(spans) == 0 || gap > 2 {
				off := int32(gap)
				if len(spans) == 0 {
					off = int32(i)
				}
				spans = append(spans, histSpan{offset: off})
			} else {
				for range gap {
					deltas = append(deltas, -prev)
					prev = 0
					spans[len(spans)-1].length++
				}
			}
			deltas = append(deltas, int64(c)-prev)
			prev = int64(c)
			spans[len(spans)-1].length++
			next = i + 1
		}
	}
	if len(spans) == 0 {
		// A native histogram with no populated bucket still says it is
		// native (client_golang's convention).
		spans = []histSpan{{}}
	}
	h.lastSpans.Store(int32(len(spans)))
	h.lastDeltas.Store(int32(len(deltas)))
	spanPtrs := make([]*dto.BucketSpan, len(spans))
	spanVals := make([]dto.BucketSpan, len(spans))
	for i := range spans {
		spanVals[i] = dto.BucketSpan{Offset: &spans[i].offset, Length: &spans[i].length}
		spanPtrs[i] = &spanVals[i]
	}
	n := len(h.classic)
	nums := make([]uint64, n+2) // the cumulative counts, then the count and the zero bucket
	bucketPtrs := make([]*dto.Bucket, n)
	bucketVals := make([]dto.Bucket, n)
	var cum uint64
	for i := range h.classic {
		cum = min(cum+h.counts[i].Load(), count)
		nums[i] = cum
		bucketVals[i] = dto.Bucket{CumulativeCount: &nums[i], UpperBound: &h.classic[i]}
		bucketPtrs[i] = &bucketVals[i]
	}
	nums[n], nums[n+1] = count, zero
	w := &histWritten{sum: math.Float64frombits(h.sumBits.Load())}
	w.h = dto.Histogram{
		SampleCount:      &nums[n],
		SampleSum:        &w.sum,
		Bucket:           bucketPtrs,
		CreatedTimestamp: h.created,
		Schema:           &histSchemaValue,
		ZeroThreshold:    &histZeroValue,
		ZeroCount:        &nums[n+1],
		PositiveSpan:     spanPtrs,
		PositiveDelta:    deltas,
	}
	out.Label = h.labelPairs
	out.Histogram = &w.h
	return nil
}

// histSpan holds a written span's fields.
type histSpan struct {
	offset int32
	length uint32
}

// histWritten is a written histogram and its sum, in one allocation.
type histWritten struct {
	h   dto.Histogram
	sum float64
}

// The schema and zero threshold every written histogram points at; never
// written to.
var (
	histSchemaValue int32   = histSchema
	histZeroValue   float64 = histZero
)
