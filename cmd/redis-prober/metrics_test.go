package main

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

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
	ours, theirs := metricsHandler(reg, opts), promhttp.HandlerFor(reg, opts)

	proto := "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"
	for _, tc := range []struct{ name, accept, encoding, query string }{
		{"proto", proto, "", ""},
		{"proto gzip", proto, "gzip", ""},
		{"prometheus 3", proto + ";q=0.6,application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,text/plain;version=0.0.4;q=0.3,*/*;q=0.1", "gzip", ""},
		{"prometheus 2", proto + ";q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.1", "gzip", ""},
		{"proto utf-8", proto + ";escaping=allow-utf-8", "gzip, deflate", ""},
		{"proto identity preferred", proto, "gzip;q=0.5, identity", ""},
		{"proto star", proto, "*", ""},
		{"proto odd coding", proto, "GZIP", ""},
		{"proto nothing acceptable", proto, "identity;q=0", ""},
		{"proto odd q", proto, "gzip;q=.5", ""},
		{"proto names", proto, "gzip", "name[]=h_seconds"},
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
	h := metricsHandler(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, MaxRequestsInFlight: 1, ErrorLog: log.New(&logged, "", 0)})
	proto := "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"
	first := make(chan int)
	go func() {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept", proto)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		first <- rec.Code
	}()
	<-entered
	for _, accept := range []string{proto, "text/plain"} {
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
