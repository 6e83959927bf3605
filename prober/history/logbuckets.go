package history

import (
	"math"
	"math/bits"
	"time"
)

// Log-linear buckets, as the change windows and the status page's recent
// history count latencies: 2^subBits buckets per power of two from 2^minExp
// to 2^maxExp nanoseconds; faster samples land in the first bucket, slower
// ones in the last. A quantile read from them is within half a bucket.

// logBucket is the bucket of d.
func logBucket(d time.Duration, subBits, minExp, maxExp int) int {
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

// logBucketValue is the geometric middle of bucket i.
func logBucketValue(i, subBits, minExp int) time.Duration {
	n := 1 << subBits
	e := i/n + minExp
	sub := uint64(i % n)
	lo := float64((uint64(n) + sub) << (e - subBits))
	hi := float64((uint64(n) + sub + 1) << (e - subBits))
	return time.Duration(math.Sqrt(lo * hi))
}
