package exposition

import (
	"encoding/binary"
	"io"
	"math"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// ProtoEncoder writes metric families as expfmt's protobuf encoder does
// (model.EscapeMetricFamily, then protodelim.MarshalTo): the same bytes,
// without the reflection of the protobuf runtime, which walks every
// message twice (once for its size, through function tables) and makes a
// buffer a family. This one walks them once: a nested message is written
// after one byte kept for its length, and moved on in the rare case its
// length needs more (a histogram). At 1,000 targets expfmt's encoder was
// a large part of a protobuf scrape, most of it waiting for memory
// (docs/performance.md, "The hand-written parts"). Fields are
// written in field-number order, as the protobuf runtime does; unknown
// fields are not written (gathered families have none).
type ProtoEncoder struct {
	w      io.Writer
	scheme model.EscapingScheme
	buf    []byte
}

// NewProtoEncoder returns an encoder writing to w with the escaping
// scheme of the negotiated format (expfmt.Format.ToEscapingScheme).
func NewProtoEncoder(w io.Writer, scheme model.EscapingScheme) *ProtoEncoder {
	return &ProtoEncoder{w: w, scheme: scheme}
}

// Reset makes e write to w with scheme, keeping its buffer.
func (e *ProtoEncoder) Reset(w io.Writer, scheme model.EscapingScheme) {
	e.w, e.scheme = w, scheme
}

// Encode writes mf, length-delimited.
func (e *ProtoEncoder) Encode(mf *dto.MetricFamily) error {
	// The family is written after room for the longest length varint,
	// and its length in the room's end.
	b := append(e.buf[:0], make([]byte, binary.MaxVarintLen64)...)
	b = e.appendFamily(b, mf)
	e.buf = b
	n := uint64(len(b) - binary.MaxVarintLen64)
	at := binary.MaxVarintLen64 - protowire.SizeVarint(n)
	protowire.AppendVarint(b[at:at], n)
	_, err := e.w.Write(b[at:])
	return err
}

func tag(num protowire.Number, typ protowire.Type) uint64 { return uint64(num)<<3 | uint64(typ) }

func appendString(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendVarint(b, tag(num, protowire.BytesType))
	b = protowire.AppendVarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendVarint(b []byte, num protowire.Number, v uint64) []byte {
	b = protowire.AppendVarint(b, tag(num, protowire.VarintType))
	return protowire.AppendVarint(b, v)
}

func appendDouble(b []byte, num protowire.Number, v float64) []byte {
	b = protowire.AppendVarint(b, tag(num, protowire.Fixed64Type))
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
}

// begin writes the tag of nested message num and one byte for its
// length; the message follows, from the returned offset, and end writes
// its length.
func begin(b []byte, num protowire.Number) ([]byte, int) {
	b = protowire.AppendVarint(b, tag(num, protowire.BytesType))
	b = append(b, 0)
	return b, len(b)
}

func end(b []byte, start int) []byte {
	n := len(b) - start
	if n < 0x80 {
		b[start-1] = byte(n)
		return b
	}
	k := protowire.SizeVarint(uint64(n))
	var room [binary.MaxVarintLen64]byte
	b = append(b, room[:k-1]...)
	copy(b[start+k-1:], b[start:start+n])
	protowire.AppendVarint(b[start-1:start-1], uint64(n))
	return b
}

// familyName and label escape as model.EscapeMetricFamily does.
func (e *ProtoEncoder) familyName(mf *dto.MetricFamily) string {
	n := mf.GetName()
	if e.scheme == model.NoEscaping || mf.Name == nil || model.LegacyValidation.IsValidMetricName(n) {
		return n
	}
	return model.EscapeName(n, e.scheme)
}

func (e *ProtoEncoder) label(lp *dto.LabelPair) (name, value string) {
	name, value = lp.GetName(), lp.GetValue()
	if e.scheme == model.NoEscaping {
		return name, value
	}
	if name == model.MetricNameLabel {
		if lp.Value != nil && !model.LegacyValidation.IsValidMetricName(value) {
			value = model.EscapeName(value, e.scheme)
		}
		return name, value
	}
	if lp.Name != nil && !model.LegacyValidation.IsValidMetricName(name) {
		name = model.EscapeName(name, e.scheme)
	}
	return name, value
}

func (e *ProtoEncoder) appendFamily(b []byte, mf *dto.MetricFamily) []byte {
	if mf.Name != nil {
		b = appendString(b, 1, e.familyName(mf))
	}
	if mf.Help != nil {
		b = appendString(b, 2, *mf.Help)
	}
	if mf.Type != nil {
		b = appendVarint(b, 3, uint64(int64(*mf.Type)))
	}
	for _, m := range mf.Metric {
		var at int
		b, at = begin(b, 4)
		b = e.appendMetric(b, m)
		b = end(b, at)
	}
	if mf.Unit != nil {
		b = appendString(b, 5, *mf.Unit)
	}
	return b
}

func (e *ProtoEncoder) appendMetric(b []byte, m *dto.Metric) []byte {
	var at int
	for _, lp := range m.Label {
		b, at = begin(b, 1)
		name, value := e.label(lp)
		if lp.Name != nil {
			b = appendString(b, 1, name)
		}
		if lp.Value != nil {
			b = appendString(b, 2, value)
		}
		b = end(b, at)
	}
	if m.Gauge != nil {
		b, at = begin(b, 2)
		b = appendValue(b, m.Gauge.Value)
		b = end(b, at)
	}
	if m.Counter != nil {
		b, at = begin(b, 3)
		b = appendCounter(b, m.Counter)
		b = end(b, at)
	}
	if m.Summary != nil {
		b, at = begin(b, 4)
		b = appendSummary(b, m.Summary)
		b = end(b, at)
	}
	if m.Untyped != nil {
		b, at = begin(b, 5)
		b = appendValue(b, m.Untyped.Value)
		b = end(b, at)
	}
	if m.TimestampMs != nil {
		b = appendVarint(b, 6, uint64(*m.TimestampMs))
	}
	if m.Histogram != nil {
		b, at = begin(b, 7)
		b = appendHistogram(b, m.Histogram)
		b = end(b, at)
	}
	return b
}

// appendValue writes a Gauge or Untyped: one double, field 1.
func appendValue(b []byte, v *float64) []byte {
	if v != nil {
		b = appendDouble(b, 1, *v)
	}
	return b
}

func appendCounter(b []byte, c *dto.Counter) []byte {
	var at int
	if c.Value != nil {
		b = appendDouble(b, 1, *c.Value)
	}
	if c.Exemplar != nil {
		b, at = begin(b, 2)
		b = appendExemplar(b, c.Exemplar)
		b = end(b, at)
	}
	if c.CreatedTimestamp != nil {
		b = appendTimestampField(b, 3, c.CreatedTimestamp)
	}
	return b
}

func appendSummary(b []byte, s *dto.Summary) []byte {
	var at int
	if s.SampleCount != nil {
		b = appendVarint(b, 1, *s.SampleCount)
	}
	if s.SampleSum != nil {
		b = appendDouble(b, 2, *s.SampleSum)
	}
	for _, q := range s.Quantile {
		b, at = begin(b, 3)
		if q.Quantile != nil {
			b = appendDouble(b, 1, *q.Quantile)
		}
		if q.Value != nil {
			b = appendDouble(b, 2, *q.Value)
		}
		b = end(b, at)
	}
	if s.CreatedTimestamp != nil {
		b = appendTimestampField(b, 4, s.CreatedTimestamp)
	}
	return b
}

func appendHistogram(b []byte, h *dto.Histogram) []byte {
	var at int
	if h.SampleCount != nil {
		b = appendVarint(b, 1, *h.SampleCount)
	}
	if h.SampleSum != nil {
		b = appendDouble(b, 2, *h.SampleSum)
	}
	for _, bk := range h.Bucket {
		b, at = begin(b, 3)
		if bk.CumulativeCount != nil {
			b = appendVarint(b, 1, *bk.CumulativeCount)
		}
		if bk.UpperBound != nil {
			b = appendDouble(b, 2, *bk.UpperBound)
		}
		if bk.Exemplar != nil {
			var ex int
			b, ex = begin(b, 3)
			b = appendExemplar(b, bk.Exemplar)
			b = end(b, ex)
		}
		if bk.CumulativeCountFloat != nil {
			b = appendDouble(b, 4, *bk.CumulativeCountFloat)
		}
		b = end(b, at)
	}
	if h.SampleCountFloat != nil {
		b = appendDouble(b, 4, *h.SampleCountFloat)
	}
	if h.Schema != nil {
		b = appendVarint(b, 5, protowire.EncodeZigZag(int64(*h.Schema)))
	}
	if h.ZeroThreshold != nil {
		b = appendDouble(b, 6, *h.ZeroThreshold)
	}
	if h.ZeroCount != nil {
		b = appendVarint(b, 7, *h.ZeroCount)
	}
	if h.ZeroCountFloat != nil {
		b = appendDouble(b, 8, *h.ZeroCountFloat)
	}
	b = appendSpans(b, 9, h.NegativeSpan)
	for _, d := range h.NegativeDelta {
		b = appendVarint(b, 10, protowire.EncodeZigZag(d))
	}
	for _, c := range h.NegativeCount {
		b = appendDouble(b, 11, c)
	}
	b = appendSpans(b, 12, h.PositiveSpan)
	for _, d := range h.PositiveDelta {
		b = appendVarint(b, 13, protowire.EncodeZigZag(d))
	}
	for _, c := range h.PositiveCount {
		b = appendDouble(b, 14, c)
	}
	if h.CreatedTimestamp != nil {
		b = appendTimestampField(b, 15, h.CreatedTimestamp)
	}
	for _, x := range h.Exemplars {
		b, at = begin(b, 16)
		b = appendExemplar(b, x)
		b = end(b, at)
	}
	return b
}

func appendSpans(b []byte, num protowire.Number, spans []*dto.BucketSpan) []byte {
	for _, s := range spans {
		var at int
		b, at = begin(b, num)
		if s.Offset != nil {
			b = appendVarint(b, 1, protowire.EncodeZigZag(int64(*s.Offset)))
		}
		if s.Length != nil {
			b = appendVarint(b, 2, uint64(*s.Length))
		}
		b = end(b, at)
	}
	return b
}

// appendExemplar does not escape: model.EscapeMetricFamily leaves
// exemplars as they are.
func appendExemplar(b []byte, x *dto.Exemplar) []byte {
	var at int
	for _, lp := range x.Label {
		b, at = begin(b, 1)
		if lp.Name != nil {
			b = appendString(b, 1, *lp.Name)
		}
		if lp.Value != nil {
			b = appendString(b, 2, *lp.Value)
		}
		b = end(b, at)
	}
	if x.Value != nil {
		b = appendDouble(b, 2, *x.Value)
	}
	if x.Timestamp != nil {
		b = appendTimestampField(b, 3, x.Timestamp)
	}
	return b
}

// appendTimestampField writes a Timestamp as field num.
func appendTimestampField(b []byte, num protowire.Number, t *timestamppb.Timestamp) []byte {
	b, at := begin(b, num)
	return end(appendTimestamp(b, t), at)
}

// appendTimestamp writes a Timestamp, proto3: zero fields are left out.
func appendTimestamp(b []byte, t *timestamppb.Timestamp) []byte {
	if s := t.GetSeconds(); s != 0 {
		b = appendVarint(b, 1, uint64(s))
	}
	if ns := t.GetNanos(); ns != 0 {
		b = appendVarint(b, 2, uint64(int64(ns)))
	}
	return b
}
