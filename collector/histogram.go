package collector

import (
	"math"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/redis-prober/redis-prober/internal/nativebucket"
)

// nativeOffset maps a server bucket of upper bound 2^k µs to native schema 0
// bucket index k-20, whose upper bound 2^(k-20) s is 0.954 * 2^k µs: a
// microsecond is not a power of two of a second, so the native buckets sit
// 4.6% below the server's (a sample of exactly 2^k µs would be in bucket
// k-19 of a histogram that counted it; TestNativeOffset). The classic
// buckets keep the exact bounds. The server counts; this only relabels its
// buckets, so it is no histogram form of its own.
const nativeOffset = -20

// classicMaxK is the largest classic bucket, 2^20 µs (about 1 s): every
// series gets the same 21 classic buckets, whatever the server has seen.
const classicMaxK = 20

// serverHistogram is a const histogram with both classic and native
// buckets, built from a LATENCY HISTOGRAM reply. client_golang's const
// histograms carry one kind or the other, not both.
type serverHistogram struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair
	h      *dto.Histogram
}

func (m *serverHistogram) Desc() *prometheus.Desc { return m.desc }

func (m *serverHistogram) Write(out *dto.Metric) error {
	out.Label = m.labels
	out.Histogram = m.h
	return nil
}

// newServerHistogram converts the server's cumulative power-of-two
// buckets; start is since when they count (nil: unknown).
func newServerHistogram(desc *prometheus.Desc, ch CommandHistogram, classic bool, start *timestamppb.Timestamp, labelValues ...string) prometheus.Metric {
	// Per power of two k (bound 2^k µs), the cumulative count of the last
	// server bucket that rounds to k or below.
	cumAt := map[int]uint64{}
	maxK := 0
	for i, b := range ch.Bounds {
		k := log2Round(b)
		cumAt[k] = ch.Cumul[i]
		maxK = max(maxK, k)
	}
	h := &dto.Histogram{
		Schema: proto.Int32(0),
		// The lower bound of the first native bucket: nothing is below it.
		ZeroThreshold: proto.Float64(nativebucket.UpperBound(nativeOffset-1, 0)),
		ZeroCount:     proto.Uint64(0),
		// Shared read-only by the command histograms of a target.
		CreatedTimestamp: start,
	}
	var cum, prev uint64
	var estSum float64
	var deltas []int64
	var prevCount int64
	for k := 0; k <= max(maxK, classicMaxK); k++ {
		if c, ok := cumAt[k]; ok {
			cum = c
		}
		if classic && k <= classicMaxK {
			h.Bucket = append(h.Bucket, &dto.Bucket{
				UpperBound:      proto.Float64(math.Ldexp(1, k) * 1e-6),
				CumulativeCount: proto.Uint64(cum),
			})
		}
		if k > maxK {
			continue
		}
		n := int64(cum - prev)
		deltas = append(deltas, n-prevCount)
		prevCount = n
		// The midpoint of (2^(k-1), 2^k] µs, or half a µs for the first.
		estSum += float64(cum-prev) * math.Ldexp(0.75, k) * 1e-6
		prev = cum
	}
	if len(ch.Bounds) > 0 {
		h.PositiveSpan = []*dto.BucketSpan{{Offset: proto.Int32(int32(nativeOffset)), Length: proto.Uint32(uint32(maxK + 1))}}
		h.PositiveDelta = deltas
	}
	// The count is the last cumulative count, so classic and native
	// buckets always add up to it.
	h.SampleCount = proto.Uint64(cum)
	if ch.SumExact {
		h.SampleSum = proto.Float64(ch.SumSeconds)
	} else {
		h.SampleSum = proto.Float64(estSum)
	}
	return &serverHistogram{desc: desc, labels: prometheus.MakeLabelPairs(desc, labelValues), h: h}
}
