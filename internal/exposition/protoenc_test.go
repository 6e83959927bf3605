package exposition_test

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/redis-prober/redis-prober/internal/exposition"
)

// encodeFamilies are families of every kind of series: a small world's
// (its targets', host's, probe's, Go and process collectors'), a native
// histogram with exemplars and negative
// buckets, a summary, a counter with an exemplar, names that need
// escaping, empty and absent fields.
func encodeFamilies(t *testing.T) []*dto.MetricFamily {
	t.Helper()
	w := newWorld(t, 4)
	reg := w.ours
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "h_seconds", Help: "h", Buckets: []float64{-1, 0.5, 1},
		NativeHistogramBucketFactor: 1.1, NativeHistogramMaxBucketNumber: 160, NativeHistogramMinResetDuration: time.Hour,
	}, []string{"l"})
	for _, v := range []float64{-3, -0.2, 0, 1e-9, 0.3, 0.7, 2, 1e6} {
		h.WithLabelValues("a").(prometheus.ExemplarObserver).ObserveWithExemplar(v, prometheus.Labels{"trace": "x"})
	}
	s := prometheus.NewSummary(prometheus.SummaryOpts{Name: "s", Help: "s", Objectives: map[float64]float64{0.5: 0.05, 0.99: 0.001}})
	s.Observe(1)
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "c_total", Help: "c"})
	c.(prometheus.ExemplarAdder).AddWithExemplar(2, prometheus.Labels{"id": "1"})
	reg.MustRegister(h, s, c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	ts := timestamppb.New(time.Unix(-5, -3))
	return append(mfs,
		&dto.MetricFamily{Name: proto.String("utf8.name"), Help: proto.String(""), Type: dto.MetricType_UNTYPED.Enum(), Unit: proto.String("u"),
			Metric: []*dto.Metric{
				{Label: []*dto.LabelPair{{Name: proto.String("a.b"), Value: proto.String("ü")}, {Name: proto.String("__name__"), Value: proto.String("x.y")}},
					Untyped: &dto.Untyped{Value: proto.Float64(math.Copysign(0, -1))}, TimestampMs: proto.Int64(-7)},
				{Label: []*dto.LabelPair{{Name: proto.String("ok")}, {Value: proto.String("v")}}, Untyped: &dto.Untyped{}},
			}},
		&dto.MetricFamily{Name: proto.String("g"), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{
			{Gauge: &dto.Gauge{}},
			{Counter: &dto.Counter{Value: proto.Float64(1), CreatedTimestamp: ts, Exemplar: &dto.Exemplar{Timestamp: &timestamppb.Timestamp{}}}},
			{Histogram: &dto.Histogram{SampleCountFloat: proto.Float64(2.5), ZeroCountFloat: proto.Float64(0.5), Schema: proto.Int32(-4),
				NegativeSpan: []*dto.BucketSpan{{Offset: proto.Int32(-2), Length: proto.Uint32(2)}}, NegativeCount: []float64{1, 1},
				PositiveSpan: []*dto.BucketSpan{{}}, PositiveCount: []float64{0.5},
				Bucket:    []*dto.Bucket{{CumulativeCountFloat: proto.Float64(1), UpperBound: proto.Float64(1)}},
				Exemplars: []*dto.Exemplar{{Label: []*dto.LabelPair{{Name: proto.String("n.x"), Value: proto.String("v")}}, Value: proto.Float64(1), Timestamp: ts}},
			}},
			{Summary: &dto.Summary{Quantile: []*dto.Quantile{{}}}},
		}},
		&dto.MetricFamily{},
	)
}

// TestProtoEncoderAsExpfmt: for every escaping scheme the encoder writes
// exactly the bytes of expfmt's protobuf encoder.
func TestProtoEncoderAsExpfmt(t *testing.T) {
	t.Parallel()
	mfs := encodeFamilies(t)
	for _, scheme := range []model.EscapingScheme{model.NoEscaping, model.UnderscoreEscaping, model.DotsEscaping, model.ValueEncodingEscaping} {
		t.Run(scheme.String(), func(t *testing.T) {
			var want, got bytes.Buffer
			enc := expfmt.NewEncoder(&want, expfmt.NewFormat(expfmt.TypeProtoDelim).WithEscapingScheme(scheme))
			ours := exposition.NewProtoEncoder(&got, scheme)
			for i, mf := range mfs {
				w0, g0 := want.Len(), got.Len()
				if err := enc.Encode(mf); err != nil {
					t.Fatal(err)
				}
				if err := ours.Encode(mf); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Bytes()[g0:], want.Bytes()[w0:]) {
					t.Fatalf("family %d (%s): %d bytes, want %d:\ngot  %x\nwant %x", i, mf.GetName(),
						got.Len()-g0, want.Len()-w0, got.Bytes()[g0:], want.Bytes()[w0:])
				}
			}
			if got.Len() < 10_000 {
				t.Errorf("only %d bytes encoded: the families are not those of the set", got.Len())
			}
		})
	}
}
