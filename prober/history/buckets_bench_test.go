package history

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"
)

// The A/B of the history's buckets: the log-linear buckets it counted in
// before it counted in native ones (2^subBits per power of two of
// nanoseconds), kept here only to be measured against.
func logLinearBucket(d time.Duration, subBits, minExp, maxExp int) int {
	ns := uint64(max(d, 0))
	if ns < 1<<minExp {
		return 0
	}
	e := bits.Len64(ns) - 1
	if e >= maxExp {
		return (maxExp-minExp)<<subBits - 1
	}
	sub := int(ns>>(e-subBits)) & (1<<subBits - 1)
	return (e-minExp)<<subBits + sub
}

// The two layouts of each history, before and after: the same bucket
// count, so the same dense slot.
var bucketLayouts = []struct {
	name    string
	buckets int
	index   func(time.Duration) int
}{
	{"window/loglinear", 200, func(d time.Duration) int { return logLinearBucket(d, 3, 10, 35) }},
	{"window/native", winBuckets, winIndex},
	{"recent/loglinear", 80, func(d time.Duration) int { return logLinearBucket(d, 2, 12, 32) }},
	{"recent/native", recentBuckets, recentIndex},
}

// probeLatencies are n probe samples as a node's look: a log-normal body
// around 150µs and 1% of them 1-20 ms.
func probeLatencies(n int) []time.Duration {
	rng := rand.New(rand.NewPCG(5, 6))
	out := make([]time.Duration, n)
	for i := range out {
		v := 150e3 * math.Exp(0.35*rng.NormFloat64())
		if rng.IntN(100) == 0 {
			v = 1e6 * math.Exp2(rng.Float64()*4.3)
		}
		out[i] = time.Duration(v)
	}
	return out
}

// BenchmarkBucketRecord is the hot path's cost a sample, old and new
// buckets taking turns (run with -count for an interleaved A/B): the
// bucket's index and the atomic add into the dense slot of 3 commands.
func BenchmarkBucketRecord(b *testing.B) {
	ds := probeLatencies(4096)
	for _, l := range bucketLayouts {
		b.Run(l.name, func(b *testing.B) {
			cur := make([]uint32, 3*l.buckets)
			i := 0
			for b.Loop() {
				d := ds[i&4095]
				atomic.AddUint32(&cur[(i%3)*l.buckets+l.index(d)], 1)
				i++
			}
		})
	}
}

// BenchmarkBucketSlotMemory reports what a closed slot keeps of one
// command's samples (its non-empty buckets, 8 bytes each), for the
// samples of a slot at the default probe rate (10/s over 3 commands): 500
// in a change window's 2.5-minute slot of the default 30-minute window,
// 200 in the recent history's minute.
func BenchmarkBucketSlotMemory(b *testing.B) {
	for _, l := range bucketLayouts {
		n := 500
		if l.buckets == recentBuckets {
			n = 200
		}
		ds := probeLatencies(n * 64)
		b.Run(l.name, func(b *testing.B) {
			var kept, slots int
			for b.Loop() {
				for s := range 64 {
					seen := make(map[int]bool, 64)
					for _, d := range ds[s*n : (s+1)*n] {
						seen[l.index(d)] = true
					}
					kept += len(seen)
					slots++
				}
			}
			b.ReportMetric(float64(kept)/float64(slots), "buckets/slot")
			b.ReportMetric(8*float64(kept)/float64(slots), "B/slot")
		})
	}
}
