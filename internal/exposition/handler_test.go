package exposition

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

const protoAccept = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"

// TestMetricsHandlerAsPromhttp: for every format and coding a client may
// ask, the handler answers what promhttp.HandlerFor answers: status,
// Content-Type, Content-Encoding, Vary and the body (decompressed).
func TestMetricsHandlerAsPromhttp(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewBuildInfoCollector())
	v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "h_seconds", Help: "h.", NativeHistogramBucketFactor: 1.1}, []string{"target"})
	for i, tgt := range []string{"b", "a", "c"} {
		v.WithLabelValues(tgt).Observe(float64(i) / 10)
	}
	reg.MustRegister(v)
	opts := promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, EnableOpenMetrics: true, Timeout: 5 * time.Second}
	ours, theirs := Handler(reg, opts), promhttp.HandlerFor(reg, opts)

	for _, tc := range []struct{ name, accept, encoding, query string }{
		{"proto", protoAccept, "", ""},
		{"proto gzip", protoAccept, "gzip", ""},
		{"prometheus 3", protoAccept + ";q=0.6,application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,text/plain;version=0.0.4;q=0.3,*/*;q=0.1", "gzip", ""},
		{"prometheus 2", protoAccept + ";q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.1", "gzip", ""},
		{"proto utf-8", protoAccept + ";escaping=allow-utf-8", "gzip, deflate", ""},
		{"proto identity preferred", protoAccept, "gzip;q=0.5, identity", ""},
		{"proto star", protoAccept, "*", ""},
		{"proto odd coding", protoAccept, "GZIP", ""},
		{"proto nothing acceptable", protoAccept, "identity;q=0", ""},
		{"proto odd q", protoAccept, "gzip;q=.5", ""},
		{"proto names", protoAccept, "gzip", "name[]=h_seconds"},
		{"text", "text/plain", "gzip", ""},
		{"openmetrics", "application/openmetrics-text;version=1.0.0", "", ""},
		{"none", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			get := func(h http.Handler) (*http.Response, []byte) {
				req := httptest.NewRequest(http.MethodGet, "/metrics?"+tc.query, nil)
				if tc.accept != "" {
					req.Header.Set("Accept", tc.accept)
				}
				if tc.encoding != "" {
					req.Header.Set("Accept-Encoding", tc.encoding)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				rsp := rec.Result()
				body := rec.Body.Bytes()
				if rsp.Header.Get("Content-Encoding") == "gzip" {
					zr, err := gzip.NewReader(bytes.NewReader(body))
					if err != nil {
						t.Fatal(err)
					}
					if body, err = io.ReadAll(zr); err != nil {
						t.Fatal(err)
					}
				}
				return rsp, body
			}
			got, gotBody := get(ours)
			want, wantBody := get(theirs)
			if got.StatusCode != want.StatusCode {
				t.Errorf("status %d, want %d", got.StatusCode, want.StatusCode)
			}
			for _, k := range []string{"Content-Type", "Content-Encoding"} {
				if got.Header.Get(k) != want.Header.Get(k) {
					t.Errorf("%s %q, want %q", k, got.Header.Get(k), want.Header.Get(k))
				}
			}
			if g, w := got.Header.Values("Vary"), want.Header.Values("Vary"); len(g) != len(w) {
				t.Errorf("Vary %q, want %q", g, w)
			}
			if !bytes.Equal(gotBody, wantBody) {
				t.Errorf("body of %d bytes, want %d", len(gotBody), len(wantBody))
			}
			if len(wantBody) == 0 && want.StatusCode == http.StatusOK {
				t.Error("empty body")
			}
		})
	}
}

// TestMetricsHandlerLimit: the limit of requests in flight holds for
// both paths, and a gather error with nothing gathered is a 500.
func TestMetricsHandlerLimit(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		entered <- struct{}{}
		<-release
		return nil, errors.New("no")
	})
	var logged bytes.Buffer
	h := Handler(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, MaxRequestsInFlight: 1, ErrorLog: log.New(&logged, "", 0)})
	first := make(chan int)
	go func() {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept", protoAccept)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		first <- rec.Code
	}()
	<-entered
	for _, accept := range []string{protoAccept, "text/plain"} {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept", accept)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusServiceUnavailable {
			t.Errorf("%s beside a scrape in flight: status %d, want 503", accept, rec.Code)
		}
	}
	close(release)
	if code := <-first; code != http.StatusInternalServerError {
		t.Errorf("a gather that failed with nothing: status %d, want 500", code)
	}
	if !bytes.Contains(logged.Bytes(), []byte("error gathering metrics: no")) {
		t.Errorf("the gather error was not logged: %q", logged.String())
	}
}

// TestMetricsHandlerTimeout: a gathering over the timeout is answered as
// promhttp answers it, and its place in flight is given back when it ends.
func TestMetricsHandlerTimeout(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    func(prometheus.Gatherer, promhttp.HandlerOpts) http.Handler
	}{{"ours", Handler}, {"promhttp", promhttp.HandlerFor}} {
		t.Run(tc.name, func(t *testing.T) {
			var slow atomic.Bool
			slow.Store(true)
			ended := make(chan struct{}, 2)
			g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
				defer func() { ended <- struct{}{} }()
				if slow.Load() {
					time.Sleep(300 * time.Millisecond)
				}
				return []*dto.MetricFamily{{Name: proto.String("x"), Type: dto.MetricType_GAUGE.Enum(),
					Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(1)}}}}}, nil
			})
			h := tc.h(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, MaxRequestsInFlight: 1, Timeout: 50 * time.Millisecond})
			get := func() *httptest.ResponseRecorder {
				req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
				req.Header.Set("Accept", protoAccept)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				return rec
			}
			rec := get()
			if rec.Code != http.StatusServiceUnavailable || rec.Body.String() != "Exceeded configured timeout of 50ms.\n" {
				t.Errorf("a slow gathering: status %d, body %q", rec.Code, rec.Body.String())
			}
			if rec := get(); rec.Code != http.StatusServiceUnavailable {
				t.Errorf("beside a gathering still in flight: status %d, want 503", rec.Code)
			}
			<-ended
			slow.Store(false)
			// The place is given back on another goroutine after the
			// gathering ends, so the next scrape may still find it taken
			// for a moment; one never given back fails the deadline.
			deadline := time.Now().Add(5 * time.Second)
			for {
				rec := get()
				if rec.Code == http.StatusOK && rec.Body.Len() > 0 {
					break
				}
				if rec.Code != http.StatusServiceUnavailable || time.Now().After(deadline) {
					t.Fatalf("after the slow gathering ended: status %d, %d bytes", rec.Code, rec.Body.Len())
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
}

// countingWriter counts the writes that reach the client.
type countingWriter struct {
	*httptest.ResponseRecorder
	writes int
}

func (c *countingWriter) Write(b []byte) (int, error) {
	c.writes++
	return c.ResponseRecorder.Write(b)
}

// TestMetricsHandlerStreams: in every format the body goes out family by
// family as it is encoded, never held whole in memory first as promhttp's
// timeout does (one write of the whole buffer at the end: at 1,000 targets
// 5-7 MB and twice that in garbage, the prober's highest memory peak). The
// OpenMetrics _created lines follow promhttp's option.
func TestMetricsHandlerStreams(t *testing.T) {
	reg := prometheus.NewRegistry()
	for _, name := range []string{"a_total", "b_total", "c_total"} {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: "c."})
		c.Inc()
		reg.MustRegister(c)
	}
	opts := promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, EnableOpenMetrics: true,
		EnableOpenMetricsTextCreatedSamples: true, Timeout: 5 * time.Second}
	for _, accept := range []string{protoAccept, "text/plain", "application/openmetrics-text;version=1.0.0", ""} {
		t.Run(accept, func(t *testing.T) {
			serve := func(h http.Handler) *countingWriter {
				req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
				if accept != "" {
					req.Header.Set("Accept", accept)
				}
				w := &countingWriter{ResponseRecorder: httptest.NewRecorder()}
				h.ServeHTTP(w, req)
				return w
			}
			ours, theirs := serve(Handler(reg, opts)), serve(promhttp.HandlerFor(reg, opts))
			if ours.Code != http.StatusOK || !bytes.Equal(ours.Body.Bytes(), theirs.Body.Bytes()) {
				t.Fatalf("status %d, body %q; want promhttp's %q", ours.Code, ours.Body.String(), theirs.Body.String())
			}
			if theirs.writes != 1 {
				t.Fatalf("promhttp's timeout handler wrote %d times; this test expects it to buffer", theirs.writes)
			}
			if ours.writes < 3 {
				t.Errorf("%d writes for 3 families: the body was buffered, not streamed", ours.writes)
			}
		})
	}
}
