package prober

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis-prober/redis-prober/internal/exposition/expositiontest"
)

// The histogram must say what client_golang's says for the same samples:
// the same schema, native buckets, zero bucket, classic buckets, count and
// sum, so Prometheus cannot tell the two apart.
func TestHistMatchesClientGolang(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	samples := []float64{0, 1e-8, 1e-7, 1.0000001e-7, 1, 0.005, 0.0001, 0.00005, math.Exp2(-10), math.Exp2(-10.125), 3 * 3600}
	for range 20000 {
		samples = append(samples, math.Exp2(rng.Float64()*26-20)) // ~1µs to ~64 s
	}
	// The house options, with room for every bucket: client_golang would
	// otherwise halve its resolution past 160 buckets, which the fixed
	// range here never needs to.
	opts := HistogramOpts("ref", "ref", LatencyBuckets)
	opts.NativeHistogramMaxBucketNumber = 1000
	ref := prometheus.NewHistogram(opts)
	vec := newHistVec("mine", "mine", LatencyBuckets, []string{"a"})
	mine := vec.WithLabelValues("x")
	for _, v := range samples {
		ref.Observe(v)
		mine.Observe(v)
	}
	var want, got dto.Metric
	if err := ref.Write(&want); err != nil {
		t.Fatal(err)
	}
	ch := make(chan prometheus.Metric, 1)
	vec.Collect(ch)
	if err := (<-ch).Write(&got); err != nil {
		t.Fatal(err)
	}
	w, g := want.GetHistogram(), got.GetHistogram()
	if g.GetSchema() != w.GetSchema() || g.GetZeroThreshold() != w.GetZeroThreshold() {
		t.Fatalf("schema %d zero threshold %g, want %d and %g", g.GetSchema(), g.GetZeroThreshold(), w.GetSchema(), w.GetZeroThreshold())
	}
	if g.GetSampleCount() != w.GetSampleCount() || g.GetZeroCount() != w.GetZeroCount() {
		t.Fatalf("count %d zero %d, want %d and %d", g.GetSampleCount(), g.GetZeroCount(), w.GetSampleCount(), w.GetZeroCount())
	}
	if math.Abs(g.GetSampleSum()-w.GetSampleSum()) > 1e-9*w.GetSampleSum() {
		t.Errorf("sum %g, want %g", g.GetSampleSum(), w.GetSampleSum())
	}
	gb, wb := expositiontest.NativeBuckets(t, g), expositiontest.NativeBuckets(t, w)
	if len(gb) != len(wb) {
		t.Errorf("%d native buckets, want %d", len(gb), len(wb))
	}
	for i, n := range wb {
		// 3 h is beyond the fixed range: it lands in the last bucket.
		if i > histMaxIndex {
			continue
		}
		if gb[i] != n {
			t.Errorf("native bucket %d: %d, want %d", i, gb[i], n)
		}
	}
	if gb[histMaxIndex] != 1 {
		t.Errorf("the last bucket holds %d, want the one 3 h sample", gb[histMaxIndex])
	}
	if len(g.GetBucket()) != len(w.GetBucket()) {
		t.Fatalf("%d classic buckets, want %d", len(g.GetBucket()), len(w.GetBucket()))
	}
	for i, b := range w.GetBucket() {
		if g.GetBucket()[i].GetUpperBound() != b.GetUpperBound() || g.GetBucket()[i].GetCumulativeCount() != b.GetCumulativeCount() {
			t.Errorf("classic bucket %d: %v, want %v", i, g.GetBucket()[i], b)
		}
	}
	if g.GetCreatedTimestamp() == nil {
		t.Error("no created timestamp")
	}
}

// Count and buckets read under concurrent writers always agree, and nothing
// is lost once the writers are done.
func TestHistConcurrentObserve(t *testing.T) {
	vec := newHistVec("h", "h", LatencyBuckets, []string{"a"})
	h := vec.WithLabelValues("x")
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 5000 {
				h.Observe(float64(w*5000+i) * 1e-6)
			}
		}()
	}
	read := func() *dto.Histogram {
		ch := make(chan prometheus.Metric, 1)
		vec.Collect(ch)
		var m dto.Metric
		if err := (<-ch).Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetHistogram()
	}
	for range 50 {
		hg := read()
		var sum int64
		for _, n := range expositiontest.NativeBuckets(t, hg) {
			sum += n
		}
		if uint64(sum)+hg.GetZeroCount() != hg.GetSampleCount() {
			t.Fatalf("buckets hold %d, count says %d", uint64(sum)+hg.GetZeroCount(), hg.GetSampleCount())
		}
		for _, b := range hg.GetBucket() {
			if b.GetCumulativeCount() > hg.GetSampleCount() {
				t.Fatalf("classic bucket %v above the count %d", b, hg.GetSampleCount())
			}
		}
	}
	wg.Wait()
	if n := read().GetSampleCount(); n != 20000 {
		t.Fatalf("count %d after the writers, want 20000", n)
	}
}

func TestHistVecDeletePartialMatch(t *testing.T) {
	vec := newHistVec("h", "h", LatencyBuckets, []string{"target", "node"})
	vec.WithLabelValues("a", "n1").Observe(1)
	vec.WithLabelValues("a", "n2").Observe(1)
	vec.WithLabelValues("b", "n1").Observe(1)
	if n := vec.DeletePartialMatch(prometheus.Labels{"target": "a", "node": "n1"}); n != 1 {
		t.Fatalf("deleted %d, want 1", n)
	}
	if n := vec.DeletePartialMatch(prometheus.Labels{"target": "a"}); n != 1 {
		t.Fatalf("deleted %d, want 1", n)
	}
	if n := vec.DeletePartialMatch(prometheus.Labels{"nope": "a"}); n != 0 {
		t.Fatalf("deleted %d on an unknown label, want 0", n)
	}
	ch := make(chan prometheus.Metric, 4)
	vec.Collect(ch)
	close(ch)
	if len(ch) != 1 {
		t.Fatalf("%d children left, want b/n1 only", len(ch))
	}
}

func BenchmarkHistObserve(b *testing.B) {
	h := newHistVec("h", "h", LatencyBuckets, []string{"a"}).WithLabelValues("x")
	for i := range b.N {
		h.Observe(float64(i%5000+20) * 1e-6)
	}
}

func BenchmarkClientGolangHistObserve(b *testing.B) {
	h := prometheus.NewHistogram(HistogramOpts("ref", "ref", LatencyBuckets))
	for i := range b.N {
		h.Observe(float64(i%5000+20) * 1e-6)
	}
}

// BenchmarkHistWrite is one probe histogram written for a scrape (4,000 of
// them at 1,000 targets), with a spread of samples over its buckets.
func BenchmarkHistWrite(b *testing.B) {
	h := newHistVec("h", "h", LatencyBuckets, []string{"a"}).WithLabelValues("x")
	for i := range 2000 {
		h.Observe(float64(50+i%900) * 1e-6 * float64(1+i%7))
	}
	m := histMetric{h: h.(*hist)}
	b.ReportAllocs()
	for b.Loop() {
		var out dto.Metric
		if err := m.Write(&out); err != nil {
			b.Fatal(err)
		}
	}
}
