package history

import (
	"math"
	"time"

	"github.com/redis-prober/redis-prober/internal/nativebucket"
)

// The change windows and the status page's recent history count latencies
// in Prometheus native buckets (internal/nativebucket), as the probe's
// histograms do: a fixed run of n buckets of one schema from index first,
// faster samples in the first and slower ones in the last. At schema 3 a
// window's bucket is the probe histogram's own bucket for the same
// sample. A quantile read from them is the bucket's geometric middle,
// within half a bucket (a factor 2^(2^-s/2)) of the truth.
type bucketRun struct {
	schema int32
	first  int // the native index of bucket 0
	n      int
}

// index is the bucket of d, in [0, n).
func (r bucketRun) index(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	// Seconds, as the probe's histograms take it, so a sample on a
	// boundary lands where it lands there.
	i := nativebucket.Index(d.Seconds(), r.schema) - r.first
	return min(max(i, 0), r.n-1)
}

// value is the geometric middle of bucket b.
func (r bucketRun) value(b int) time.Duration {
	i := b + r.first
	lo, hi := nativebucket.UpperBound(i-1, r.schema), nativebucket.UpperBound(i, r.schema)
	return time.Duration(math.Round(math.Sqrt(lo*hi) * 1e9))
}
