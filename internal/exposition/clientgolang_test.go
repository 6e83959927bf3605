package exposition

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// TestClientGolang checks the behaviours of client_golang, client_model
// and expfmt listed in clientgolang.go that no other test of the package
// checks; a subtest that fails names what an upgrade changed.
func TestClientGolang(t *testing.T) {
	t.Parallel()
	t.Run("client_model_fields", testClientModelFields)
	t.Run("created", testCreated)
	t.Run("vector_children", testVectorChildren)
	t.Run("fresh_families", testFreshFamilies)
	t.Run("negotiation", testNegotiation)
	t.Run("compressions", testCompressions)
	t.Run("streaming", testStreaming)
	t.Run("handler_options", testHandlerOptions)
}

// encodedFields are the fields of each message ProtoEncoder writes, as
// "number name cardinality kind[ packed]".
var encodedFields = map[string][]string{
	"io.prometheus.client.MetricFamily": {"1 name optional string", "2 help optional string", "3 type optional enum",
		"4 metric repeated message", "5 unit optional string"},
	"io.prometheus.client.Metric": {"1 label repeated message", "2 gauge optional message", "3 counter optional message",
		"4 summary optional message", "5 untyped optional message", "6 timestamp_ms optional int64", "7 histogram optional message"},
	"io.prometheus.client.LabelPair": {"1 name optional string", "2 value optional string"},
	"io.prometheus.client.Gauge":     {"1 value optional double"},
	"io.prometheus.client.Untyped":   {"1 value optional double"},
	"io.prometheus.client.Counter": {"1 value optional double", "2 exemplar optional message",
		"3 created_timestamp optional message"},
	"io.prometheus.client.Summary": {"1 sample_count optional uint64", "2 sample_sum optional double",
		"3 quantile repeated message", "4 created_timestamp optional message"},
	"io.prometheus.client.Quantile": {"1 quantile optional double", "2 value optional double"},
	"io.prometheus.client.Histogram": {"1 sample_count optional uint64", "2 sample_sum optional double",
		"3 bucket repeated message", "4 sample_count_float optional double", "5 schema optional sint32",
		"6 zero_threshold optional double", "7 zero_count optional uint64", "8 zero_count_float optional double",
		"9 negative_span repeated message", "10 negative_delta repeated sint64", "11 negative_count repeated double",
		"12 positive_span repeated message", "13 positive_delta repeated sint64", "14 positive_count repeated double",
		"15 created_timestamp optional message", "16 exemplars repeated message"},
	"io.prometheus.client.Bucket": {"1 cumulative_count optional uint64", "2 upper_bound optional double",
		"3 exemplar optional message", "4 cumulative_count_float optional double"},
	"io.prometheus.client.BucketSpan": {"1 offset optional sint32", "2 length optional uint32"},
	"io.prometheus.client.Exemplar": {"1 label repeated message", "2 value optional double",
		"3 timestamp optional message"},
	"google.protobuf.Timestamp": {"1 seconds optional int64", "2 nanos optional int32"},
}

// testClientModelFields: every message the encoder writes has the fields
// it writes, of the kinds it writes them as, and no other (9).
func testClientModelFields(t *testing.T) {
	seen := map[string]bool{}
	var walk func(md protoreflect.MessageDescriptor)
	walk = func(md protoreflect.MessageDescriptor) {
		name := string(md.FullName())
		if seen[name] {
			return
		}
		seen[name] = true
		// In field-number order, the order the encoder writes them in
		// (declarations may come in another).
		fields := md.Fields()
		byNumber := make([]protoreflect.FieldDescriptor, fields.Len())
		for i := range fields.Len() {
			byNumber[i] = fields.Get(i)
		}
		slices.SortFunc(byNumber, func(a, b protoreflect.FieldDescriptor) int { return int(a.Number() - b.Number()) })
		var got []string
		for _, f := range byNumber {
			s := fmt.Sprintf("%d %s %s %s", f.Number(), f.Name(), f.Cardinality(), f.Kind())
			if f.IsPacked() {
				s += " packed"
			}
			got = append(got, s)
			if f.Message() != nil {
				walk(f.Message())
			}
		}
		want, ok := encodedFields[name]
		if !ok {
			t.Errorf("message %s is new to the encoder: its fields %q", name, got)
			return
		}
		if !slices.Equal(got, want) {
			t.Errorf("message %s has the fields %q; the encoder writes %q", name, got, want)
		}
	}
	walk((&dto.MetricFamily{}).ProtoReflect().Descriptor())
	for name := range encodedFields {
		if !seen[name] {
			t.Errorf("message %s is no longer in a MetricFamily", name)
		}
	}
}

// testCreated: counters, histograms and summaries, const ones too, write
// their start as CreatedTimestamp (4).
func testCreated(t *testing.T) {
	start := time.Unix(1795985000, 5)
	counterDesc := prometheus.NewDesc("c_total", "c", nil, nil)
	for _, tc := range []struct {
		name string
		m    prometheus.Metric
		get  func(*dto.Metric) *timestamppb.Timestamp
	}{
		{"counter", prometheus.NewCounter(prometheus.CounterOpts{Name: "c_total", Help: "c"}),
			func(m *dto.Metric) *timestamppb.Timestamp { return m.GetCounter().GetCreatedTimestamp() }},
		{"histogram", prometheus.NewHistogram(prometheus.HistogramOpts{Name: "h", Help: "h", NativeHistogramBucketFactor: 1.1}),
			func(m *dto.Metric) *timestamppb.Timestamp { return m.GetHistogram().GetCreatedTimestamp() }},
		{"summary", prometheus.NewSummary(prometheus.SummaryOpts{Name: "s", Help: "s"}),
			func(m *dto.Metric) *timestamppb.Timestamp { return m.GetSummary().GetCreatedTimestamp() }},
		{"const counter", prometheus.MustNewConstMetricWithCreatedTimestamp(counterDesc, prometheus.CounterValue, 1, start),
			func(m *dto.Metric) *timestamppb.Timestamp { return m.GetCounter().GetCreatedTimestamp() }},
	} {
		var m dto.Metric
		if err := tc.m.Write(&m); err != nil {
			t.Fatal(err)
		}
		if ts := tc.get(&m); ts == nil || ts.AsTime().IsZero() {
			t.Errorf("a %s writes no created timestamp: %v", tc.name, &m)
		}
	}
}

// testVectorChildren: a vector hands out the same children at every
// Collect (5).
func testVectorChildren(t *testing.T) {
	vec := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "g", Help: "g"}, []string{"l"})
	for _, v := range []string{"a", "b", "c"} {
		vec.WithLabelValues(v).Set(1)
	}
	collect := func() map[prometheus.Metric]bool {
		ch := make(chan prometheus.Metric, 10)
		vec.Collect(ch)
		close(ch)
		out := map[prometheus.Metric]bool{}
		for m := range ch {
			out[m] = true
		}
		return out
	}
	first, second := collect(), collect()
	if len(first) != 3 || !reflect.DeepEqual(first, second) {
		t.Errorf("two Collects of a vector handed out other metrics: %d, then %d, not the same", len(first), len(second))
	}
	for m := range first {
		if !reflect.TypeOf(m).Comparable() {
			t.Errorf("a vector's child of type %T cannot key a map", m)
		}
	}
}

// testFreshFamilies: two Gathers of a registry share no family, no slice
// of metrics (7).
func testFreshFamilies(t *testing.T) {
	reg := prometheus.NewRegistry()
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "g", Help: "g"}, []string{"l"})
	g.WithLabelValues("a").Set(1)
	g.WithLabelValues("b").Set(2)
	reg.MustRegister(g)
	a, errA := reg.Gather()
	b, errB := reg.Gather()
	if errA != nil || errB != nil || len(a) != 1 || len(b) != 1 {
		t.Fatalf("Gather: %v %v, %v %v", a, errA, b, errB)
	}
	if a[0] == b[0] || &a[0].Metric[0] == &b[0].Metric[0] {
		t.Error("two Gathers returned the same family: Registry's merge would change a family someone else holds")
	}
}

// prometheus3Accept and prometheus2Accept are the Accept headers of a
// scrape with the default scrape protocols.
const (
	prometheus3Accept = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;escaping=allow-utf-8;q=0.5," +
		"application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.4,application/openmetrics-text;version=0.0.1;q=0.3," +
		"text/plain;version=1.0.0;escaping=allow-utf-8;q=0.2,text/plain;version=0.0.4;q=0.1,*/*;q=0.05"
	prometheus2Accept = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.5," +
		"application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.1"
)

// testNegotiation: what Prometheus sends picks the delimited protobuf
// format and the escaping the encoder is given, in expfmt and in
// promhttp's answer (11).
func testNegotiation(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "g", Help: "g"}))
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
	for _, tc := range []struct {
		name, accept string
		typ          expfmt.FormatType
		scheme       model.EscapingScheme
	}{
		{"prometheus 3", prometheus3Accept, expfmt.TypeProtoDelim, model.NoEscaping},
		{"prometheus 2", prometheus2Accept, expfmt.TypeProtoDelim, model.UnderscoreEscaping},
		{"plain protobuf", protoAccept, expfmt.TypeProtoDelim, model.UnderscoreEscaping},
		{"no Accept", "", expfmt.TypeTextPlain, model.UnderscoreEscaping},
	} {
		header := http.Header{}
		if tc.accept != "" {
			header.Set("Accept", tc.accept)
		}
		f := expfmt.NegotiateAccept(header, expfmt.DefaultOpenMetricsAcceptedFormats()...)
		if f.FormatType() != tc.typ || f.ToEscapingScheme() != tc.scheme {
			t.Errorf("%s: negotiated %q (%v, %v), want %v escaped %v", tc.name, f, f.FormatType(), f.ToEscapingScheme(), tc.typ, tc.scheme)
		}
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header = header
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if got := rec.Header().Get("Content-Type"); got != string(f) {
			t.Errorf("%s: promhttp answers %q, expfmt negotiated %q", tc.name, got, f)
		}
	}
}

// testCompressions: promhttp offers identity and gzip only, and picks as
// negotiateEncoding does (12).
func testCompressions(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "g", Help: "g"}))
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	for _, accept := range []string{"zstd", "zstd, gzip", "gzip;q=0.5, zstd", "br, identity;q=0.5", "gzip, deflate, br, zstd"} {
		want, ok := negotiateEncoding([]string{accept})
		if !ok {
			t.Fatalf("%q: negotiateEncoding leaves it to promhttp", accept)
		}
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept-Encoding", accept)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		got := rec.Header().Get("Content-Encoding")
		if got == "" {
			got = "identity"
		}
		if got != want {
			t.Errorf("Accept-Encoding %q: promhttp answers %s, the handler %s", accept, got, want)
		}
	}
}

// testStreaming: promhttp writes family by family without a timeout and
// the whole body once with one (13). The handler's second reason
// (streaming) holds only in the second case.
func testStreaming(t *testing.T) {
	reg := prometheus.NewRegistry()
	for _, name := range []string{"a", "b", "c"} {
		reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: name}))
	}
	for _, tc := range []struct {
		timeout time.Duration
		streams bool
	}{{0, true}, {time.Minute, false}} {
		h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{Timeout: tc.timeout})
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept", protoAccept)
		w := &countingWriter{ResponseRecorder: httptest.NewRecorder()}
		h.ServeHTTP(w, req)
		if streams := w.writes >= 3; streams != tc.streams || w.Code != http.StatusOK {
			t.Errorf("timeout %v: status %d, %d writes for 3 families; streamed: %v, want %v", tc.timeout, w.Code, w.writes, streams, tc.streams)
		}
	}
}

// handlerOptions are the fields of promhttp.HandlerOpts that Handler
// knows: those it follows on its own path, and those it leaves to
// promhttp (see takeOver).
var handlerOptions = []string{
	"ErrorLog", "ErrorHandling", "Registry", "DisableCompression", "OfferedCompressions",
	"MaxRequestsInFlight", "CoalesceGather", "Timeout", "EnableOpenMetrics",
	"EnableOpenMetricsTextCreatedSamples", "ProcessStartTime", "AcceptedFormats",
}

// testHandlerOptions: HandlerOpts has no field Handler does not know (15).
func testHandlerOptions(t *testing.T) {
	typ := reflect.TypeFor[promhttp.HandlerOpts]()
	var got []string
	for i := range typ.NumField() {
		got = append(got, typ.Field(i).Name)
	}
	if !slices.Equal(got, handlerOptions) {
		t.Errorf("promhttp.HandlerOpts has the fields %s; Handler knows %s", strings.Join(got, " "), strings.Join(handlerOptions, " "))
	}
}
