package nativebucket

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/redis-prober/redis-prober/internal/exposition/expositiontest"
)

// Every value lands in the bucket client_golang counts it in, for every
// schema here: values on each boundary from about 1 ns to about 1 hour,
// the float just above each, and random values between.
func TestIndexAsClientGolang(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for s := int32(0); s <= MaxSchema; s++ {
		// The smallest factor client_golang turns into schema s.
		ref := prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "ref", Help: "ref",
			NativeHistogramBucketFactor:  math.Exp2(math.Exp2(-float64(s))) * (1 + 1e-9),
			NativeHistogramZeroThreshold: prometheus.NativeHistogramZeroThresholdZero,
		})
		want := map[int]int64{}
		observe := func(v float64) {
			ref.Observe(v)
			want[Index(v, s)]++
		}
		lo, hi := -30<<s, 12<<s // 2^-30 s to 2^12 s
		for i := lo; i <= hi; i++ {
			b := UpperBound(i, s)
			observe(b)
			observe(math.Nextafter(b, math.Inf(1)))
			observe(math.Nextafter(b, 0))
		}
		for range 20000 {
			observe(math.Exp2(rng.Float64()*42 - 30))
		}
		var m dto.Metric
		if err := ref.Write(&m); err != nil {
			t.Fatal(err)
		}
		h := m.GetHistogram()
		if h.GetSchema() != s {
			t.Fatalf("client_golang chose schema %d for %d", h.GetSchema(), s)
		}
		got := expositiontest.NativeBuckets(t, h)
		if len(got) != len(want) {
			t.Errorf("schema %d: client_golang has %d buckets, Index %d", s, len(got), len(want))
		}
		for i, n := range want {
			if got[i] != n {
				t.Errorf("schema %d bucket %d: client_golang counts %d, Index %d", s, i, got[i], n)
			}
		}
	}
}

// The bounds are Prometheus's, to the bit: a histogram of one count in each
// bucket, read back through Prometheus's own bucket iterator.
func TestUpperBoundAsPrometheus(t *testing.T) {
	t.Parallel()
	for s := int32(0); s <= MaxSchema; s++ {
		lo, hi := -40<<s, 20<<s
		h := &histogram.Histogram{
			Schema:          s,
			PositiveSpans:   []histogram.Span{{Offset: int32(lo), Length: uint32(hi - lo + 1)}},
			PositiveBuckets: make([]int64, hi-lo+1),
		}
		h.PositiveBuckets[0] = 1 // deltas: one in each
		h.Count = uint64(hi - lo + 1)
		n := 0
		for it := h.PositiveBucketIterator(); it.Next(); n++ {
			b := it.At()
			i := int(b.Index)
			if got := UpperBound(i, s); got != b.Upper {
				t.Errorf("schema %d: UpperBound(%d) = %v, Prometheus %v", s, i, got, b.Upper)
			}
			if got := UpperBound(i-1, s); got != b.Lower {
				t.Errorf("schema %d: UpperBound(%d-1) = %v, Prometheus's lower bound %v", s, i, got, b.Lower)
			}
		}
		if n != hi-lo+1 {
			t.Fatalf("schema %d: Prometheus iterated %d buckets, want %d", s, n, hi-lo+1)
		}
	}
}

func TestIndexOfBounds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v    float64
		s    int32
		want int
	}{
		{1, 0, 0}, {2, 0, 1}, {3, 0, 2}, {0.5, 0, -1}, {1e-6, 0, -19},
		{1, 3, 0}, {math.Nextafter(1, 2), 3, 1}, {0.5452538663326288, 3, -7}, {1e-7, 3, -186}, {4096, 3, 96},
		{1, 2, 0}, {3.5, 2, 8}, {1, 4, 0}, {2, 4, 16},
	} {
		if got := Index(tc.v, tc.s); got != tc.want {
			t.Errorf("Index(%v, %d) = %d, want %d", tc.v, tc.s, got, tc.want)
		}
	}
}

// The cell table's answer is the binary search's, for any positive finite
// float: each cell holds at most one fraction, and the subnormals (which
// have no cell) go the slow way.
func TestIndexCellsAsSearch(t *testing.T) {
	t.Parallel()
	for s := int32(0); s <= MaxSchema; s++ {
		for c := range cells[s] {
			lo, hi := 0.5+float64(c)/64, 0.5+float64(c+1)/64
			n := 0
			for j := range 1 << s {
				if f := fracs[j<<(MaxSchema-s)]; f >= lo && f < hi {
					n++
				}
			}
			if n > 1 {
				t.Fatalf("schema %d cell %d holds %d fractions", s, c, n)
			}
		}
	}
	rng := rand.New(rand.NewPCG(7, 8))
	vs := []float64{math.SmallestNonzeroFloat64, 1e-310, 2.2250738585072014e-308, math.MaxFloat64, 1, 0.5, 0.75}
	for range 200000 {
		vs = append(vs, math.Float64frombits(rng.Uint64()&^(1<<63)))
	}
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) || v == 0 {
			continue
		}
		for s := int32(0); s <= MaxSchema; s++ {
			if got, want := Index(v, s), indexSearch(v, s); got != want {
				t.Fatalf("Index(%v, %d) = %d, the search says %d", v, s, got, want)
			}
		}
	}
}

func TestBadSchemaPanics(t *testing.T) {
	t.Parallel()
	for _, s := range []int32{-1, MaxSchema + 1} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("schema %d: no panic", s)
				}
			}()
			Index(1, s)
		}()
	}
}

func BenchmarkIndex(b *testing.B) {
	v := 0.000123
	for b.Loop() {
		_ = Index(v, 3)
		v += 1e-9
	}
}
