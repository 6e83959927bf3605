package exposition

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// TestClientGolang checks the behaviours of client_golang, client_model
// and expfmt listed in clientgolang.go that no other test of the package
// checks; a subtest that fails names what an upgrade changed.
func TestClientGolang(t *testing.T) {
	t.Run("created", testCreated)
	t.Run("vector_children", testVectorChildren)
	t.Run("fresh_families", testFreshFamilies)
	t.Run("streaming", testStreaming)
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

// protoAccept asks for the delimited protobuf format.
const protoAccept = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"

// countingWriter counts the writes of a response.
type countingWriter struct {
	*httptest.ResponseRecorder
	writes int
}

func (c *countingWriter) Write(b []byte) (int, error) {
	c.writes++
	return c.ResponseRecorder.Write(b)
}

// testStreaming: promhttp writes family by family without a timeout and
// the whole body once with one (8): without one, /metrics holds no
// whole body in memory.
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
