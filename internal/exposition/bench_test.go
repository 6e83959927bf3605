package exposition_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/redis-prober/redis-prober/internal/exposition"
)

// The A/B of each hand-written part against client_golang's own (issue
// 26, part 2), at 100 and 1,000 targets of a world (see newWorld):
//
//   - BenchmarkGather{Ours,Registry}: exposition.Registry, whose big
//     collectors build their own families, against prometheus.Registry
//     collecting the same collectors;
//   - BenchmarkEncode{Ours,Expfmt}: ProtoEncoder against expfmt's
//     protobuf encoder, over the same gathered families;
//   - BenchmarkHandler{Ours,Promhttp}: a whole protobuf scrape, gzipped,
//     as Prometheus 3 asks for it, through exposition.Handler with the
//     options cmd/redis-prober gives it and through promhttp.HandlerFor
//     with the same options but Timeout (promhttp streams without one),
//     both over exposition.Registry.
//
// Beside ns/op each reports cpu-ns/op, the process's user and system CPU
// a op (a Gather runs on several goroutines; the garbage collector on
// others). make bench-exposition runs them in interleaved rounds.
var benchTargets = []int{100, 1000}

// worlds keeps the world of each size for the benchmarks of one run: at
// 1,000 targets one takes seconds to build.
var worlds = map[int]*world{}

func benchWorld(b *testing.B, targets int) *world {
	b.Helper()
	if w := worlds[targets]; w != nil {
		return w
	}
	w := newWorld(b, targets)
	worlds[targets] = w
	return w
}

// eachSize runs f as a sub-benchmark targets=N for each size.
func eachSize(b *testing.B, f func(b *testing.B, w *world)) {
	for _, n := range benchTargets {
		b.Run(fmt.Sprintf("targets=%d", n), func(b *testing.B) { f(b, benchWorld(b, n)) })
	}
}

// loop runs op as the benchmark's loop and reports its CPU time a op.
func loop(b *testing.B, op func()) {
	b.ReportAllocs()
	start := cpuTime(b)
	for b.Loop() {
		op()
	}
	b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
}

func BenchmarkGatherOurs(b *testing.B) {
	eachSize(b, func(b *testing.B, w *world) { benchGather(b, w.ours) })
}

func BenchmarkGatherRegistry(b *testing.B) {
	eachSize(b, func(b *testing.B, w *world) { benchGather(b, w.theirs) })
}

func benchGather(b *testing.B, g prometheus.Gatherer) {
	var n int
	loop(b, func() {
		mfs, err := g.Gather()
		if err != nil {
			b.Fatal(err)
		}
		n = series(mfs)
	})
	b.ReportMetric(float64(n), "series")
}

type familyEncoder interface{ Encode(*dto.MetricFamily) error }

func BenchmarkEncodeOurs(b *testing.B) {
	eachSize(b, func(b *testing.B, w *world) {
		benchEncode(b, w, func(out io.Writer) familyEncoder { return exposition.NewProtoEncoder(out, model.UnderscoreEscaping) })
	})
}

func BenchmarkEncodeExpfmt(b *testing.B) {
	eachSize(b, func(b *testing.B, w *world) {
		benchEncode(b, w, func(out io.Writer) familyEncoder {
			return expfmt.NewEncoder(out, expfmt.NewFormat(expfmt.TypeProtoDelim).WithEscapingScheme(model.UnderscoreEscaping))
		})
	})
}

// benchEncode encodes the families of one Gather of w, escaped with
// underscores (what Prometheus 2 negotiates: expfmt's costlier case; a
// Prometheus 3 asks for none).
func benchEncode(b *testing.B, w *world, newEnc func(io.Writer) familyEncoder) {
	mfs := w.gather(b)
	var buf bytes.Buffer
	enc := newEnc(&buf)
	loop(b, func() {
		buf.Reset()
		for _, mf := range mfs {
			if err := enc.Encode(mf); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.SetBytes(int64(buf.Len()))
}

// handlerOpts are the options cmd/redis-prober's web.go gives the handler.
func handlerOpts() promhttp.HandlerOpts {
	return promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, MaxRequestsInFlight: 40,
		Timeout: 10 * time.Second, EnableOpenMetrics: true}
}

func BenchmarkHandlerOurs(b *testing.B) {
	eachSize(b, func(b *testing.B, w *world) { benchHandler(b, exposition.Handler(w.ours, handlerOpts())) })
}

func BenchmarkHandlerPromhttp(b *testing.B) {
	eachSize(b, func(b *testing.B, w *world) {
		opts := handlerOpts()
		opts.Timeout = 0
		benchHandler(b, promhttp.HandlerFor(w.ours, opts))
	})
}

// scrapeAccept is what Prometheus 3 sends with its default protocols.
const scrapeAccept = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;escaping=allow-utf-8;q=0.5," +
	"application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.4,application/openmetrics-text;version=0.0.1;q=0.3," +
	"text/plain;version=1.0.0;escaping=allow-utf-8;q=0.2,text/plain;version=0.0.4;q=0.1,*/*;q=0.05"

// benchHandler serves a scrape as Prometheus asks for one (protobuf,
// gzip) into a writer that counts and drops the body.
func benchHandler(b *testing.B, h http.Handler) {
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept", scrapeAccept)
	req.Header.Set("Accept-Encoding", "gzip")
	var w discardWriter
	loop(b, func() {
		w = discardWriter{header: http.Header{}}
		h.ServeHTTP(&w, req)
		if w.code != http.StatusOK || w.header.Get("Content-Encoding") != "gzip" {
			b.Fatalf("status %d, Content-Encoding %q", w.code, w.header.Get("Content-Encoding"))
		}
	})
	b.ReportMetric(float64(w.n), "gzip-B/scrape")
}

// discardWriter is a ResponseWriter that keeps the status and headers and
// counts the body.
type discardWriter struct {
	header http.Header
	code   int
	n      int
}

func (d *discardWriter) Header() http.Header { return d.header }

func (d *discardWriter) WriteHeader(code int) {
	if d.code == 0 {
		d.code = code
	}
}

func (d *discardWriter) Write(p []byte) (int, error) {
	d.WriteHeader(http.StatusOK)
	d.n += len(p)
	return len(p), nil
}
