package explain

import (
	"sync/atomic"
	"time"

	"github.com/redis-prober/redis-prober/internal/nativebucket"
)

// The threshold in force: a request is slow when its latency is at or
// above min(objective, max(BaselineFactor × the node's own p99 over the
// last BaselineMinutes, MinThreshold)). So a request over the objective is
// always slow, and on a node far below its objective a request is slow
// when it is well out of that node's ordinary tail. Until the window holds
// BaselineMinSamples the threshold is the objective.
const (
	BaselineFactor     = 4
	BaselineMinutes    = 5
	BaselineMinSamples = 100
	// MinThreshold is the floor: below a millisecond a VM's own scheduling
	// is in every figure, and most sources resolve no finer.
	MinThreshold = time.Millisecond
	// DefaultObjective stands in for a node without one.
	DefaultObjective = 5 * time.Millisecond
)

// The baseline's buckets: native buckets of schema 2 (4 per power of two,
// ±9 %, enough for a threshold four times the p99), the form every latency
// the prober keeps in memory is counted in (internal/nativebucket), from
// 2^-16 s (about 15 µs: faster samples count in the first bucket) to
// 2^(21/4) s (about 38 s: slower ones in the last).
const (
	baseSchema   = 2
	baseMinIndex = -64
	baseMaxIndex = 21
	baseBuckets  = baseMaxIndex - baseMinIndex + 1
)

func baseIndex(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return min(max(nativebucket.Index(d.Seconds(), baseSchema), baseMinIndex), baseMaxIndex) - baseMinIndex
}

// baseUpper is the upper bound of bucket i.
func baseUpper(i int) time.Duration {
	return time.Duration(nativebucket.UpperBound(i+baseMinIndex, baseSchema) * float64(time.Second))
}

// baseline is the node's latency over the last BaselineMinutes: the
// current minute is counted with one atomic add a sample, the finished
// ones are kept as they were.
type baseline struct {
	cur   [baseBuckets]atomic.Uint32
	past  [BaselineMinutes][baseBuckets]uint32 // guarded by the Node's mutex
	head  int                                  // next slot of past to fill
	since int64                                // Unix ns the current minute began
}

func (b *baseline) add(d time.Duration) { b.cur[baseIndex(d)].Add(1) }

// rotate closes the current minute into past when a minute has gone by.
func (b *baseline) rotate(now int64) {
	if b.since == 0 {
		b.since = now
		return
	}
	if now-b.since < int64(time.Minute) {
		return
	}
	b.since = now
	slot := &b.past[b.head]
	for i := range b.cur {
		slot[i] = b.cur[i].Swap(0)
	}
	b.head = (b.head + 1) % BaselineMinutes
}

// p99 is the 99th percentile of the finished minutes, false with fewer
// than BaselineMinSamples.
func (b *baseline) p99() (time.Duration, bool) {
	var sum [baseBuckets]uint64
	var n uint64
	for s := range b.past {
		for i, c := range b.past[s] {
			sum[i] += uint64(c)
			n += uint64(c)
		}
	}
	if n < BaselineMinSamples {
		return 0, false
	}
	rank := n - n/100 // the sample at 99 %
	var acc uint64
	for i, c := range sum {
		if acc += c; acc >= rank {
			return baseUpper(i), true
		}
	}
	return baseUpper(baseBuckets - 1), true
}

// thresholdFor is the rule above.
func thresholdFor(objective time.Duration, p99 time.Duration, ok bool) time.Duration {
	if objective <= 0 {
		objective = DefaultObjective
	}
	if !ok {
		return objective
	}
	return min(objective, max(BaselineFactor*p99, MinThreshold))
}
