package collector

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// encodeFamilies are families of every kind of series: the set's, the Go
// and process collectors', a native histogram with exemplars and negative
// buckets, a summary, a counter with an exemplar, names that need
// escaping, empty and absent fields.
func encodeFamilies(t *testing.T) []*dto.MetricFamily {
	t.Helper()
	set := gatherSet(t)
	reg := NewRegistry()
	reg.MustRegister(set, set.Health(), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
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
					Untyped: &dto.Untyped{Value: proto.Float64(-0.0)}, TimestampMs: proto.Int64(-7)},
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
	mfs := encodeFamilies(t)
	for _, scheme := range []model.EscapingScheme{model.NoEscaping, model.UnderscoreEscaping, model.DotsEscaping, model.ValueEncodingEscaping} {
		t.Run(scheme.String(), func(t *testing.T) {
			var want, got bytes.Buffer
			enc := expfmt.NewEncoder(&want, expfmt.NewFormat(expfmt.TypeProtoDelim).WithEscapingScheme(scheme))
			ours := NewProtoEncoder(&got, scheme)
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

// BenchmarkProtoEncoder1000 and BenchmarkExpfmtProto1000: the protobuf
// encoding of the families of 1,000 targets, ours and expfmt's.
func BenchmarkProtoEncoder1000(b *testing.B) {
	benchEncode1000(b, func(w io.Writer) familyEncoder { return NewProtoEncoder(w, model.UnderscoreEscaping) })
}

func BenchmarkExpfmtProto1000(b *testing.B) {
	benchEncode1000(b, func(w io.Writer) familyEncoder {
		return expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeProtoDelim).WithEscapingScheme(model.UnderscoreEscaping))
	})
}

type familyEncoder interface{ Encode(*dto.MetricFamily) error }

// benchEncode1000 encodes the families of 1,000 targets with the encoder
// newEnc makes.
func benchEncode1000(b *testing.B, newEnc func(io.Writer) familyEncoder) {
	mfs := benchFamilies(b)
	var buf bytes.Buffer
	enc := newEnc(&buf)
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		for _, mf := range mfs {
			if err := enc.Encode(mf); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.SetBytes(int64(buf.Len()))
}

func benchFamilies(b *testing.B) []*dto.MetricFamily {
	reg := NewRegistry()
	set := NewTargets()
	reg.MustRegister(set, set.Health())
	for _, t := range benchTargets(b, set, benchDoer(b), 1000) {
		t.Refresh(b.Context())
	}
	mfs, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	return mfs
}
