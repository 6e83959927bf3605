package burst

import (
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/redistest"
	"github.com/redis-prober/redis-prober/prober"
)

// BenchmarkBurstGet runs memtier's usual shape (50 connections, 128-byte
// values, 1M keys, GETs) at pipeline 16 and 1; b.N is the number of
// requests. make bench-burst compares the same shape with redis-benchmark.
func BenchmarkBurstGet(b *testing.B) {
	srv := redistest.Start(b)
	for _, pipeline := range []int{16, 1} {
		b.Run("pipeline="+map[int]string{16: "16", 1: "1"}[pipeline], func(b *testing.B) {
			plan := Plan{Name: "bench", Clients: 50, Pipeline: pipeline, Mix: []MixEntry{{Op: "get", Weight: 1}},
				Keys: KeySpec{SetPattern: 'R', GetPattern: 'R', Max: 999999}, DataSize: 128,
				Requests: int64(max(b.N, 50)), TestTime: 10 * time.Minute, MaxBytes: 1 << 20,
				Timeout: 5 * time.Second, KeyTTL: time.Hour, Namespace: prober.Namespace{Prefix: "redis-prober:", Tag: "bench"}}
			br := &Runner{Endpoint: prober.Endpoint{Network: "tcp", Addr: srv.Addr()}, Control: srv.Client(),
				Guards: Guards{Window: time.Second, CheckInterval: time.Second, ErrorBudget: 1}}
			b.ResetTimer()
			res := br.Run(b.Context(), plan)
			b.StopTimer()
			if res.Outcome != OutcomeCompleted {
				b.Fatalf("%s (%s: %s)", res.Outcome, res.Reason, res.Detail)
			}
			b.ReportMetric(res.OpsPerSec(), "ops/s")
			b.ReportMetric(float64(res.Total.Quantile(0.99).Microseconds()), "p99-µs")
		})
	}
}

// BenchmarkBurstPaced runs paced loads of 3 s a run, GETs at pipeline 1:
// the step search's shape near its top (50 connections at 50,000 ops/s)
// and issue 24's 10,000 ops/s on 4 connections. It reports the loop's own
// lag and CPU beside the charged latency (-cpuprofile shows where the
// loop's CPU goes).
func BenchmarkBurstPaced(b *testing.B) {
	srv := redistest.Start(b)
	for _, shape := range []struct {
		name    string
		clients int
		rate    float64
	}{{"conns=50/rate=50000", 50, 50000}, {"conns=4/rate=10000", 4, 10000}} {
		b.Run(shape.name, func(b *testing.B) {
			for range b.N {
				plan := Plan{Name: "bench", Clients: shape.clients, Pipeline: 1, Rate: shape.rate, Mix: []MixEntry{{Op: "get", Weight: 1}},
					Keys: KeySpec{SetPattern: 'R', GetPattern: 'R', Max: 999999}, DataSize: 128,
					TestTime: 3 * time.Second, MaxBytes: 1 << 20,
					Timeout: 5 * time.Second, KeyTTL: time.Hour, Namespace: prober.Namespace{Prefix: "redis-prober:", Tag: "bench"}}
				br := &Runner{Endpoint: prober.Endpoint{Network: "tcp", Addr: srv.Addr()}, Control: srv.Client(),
					Guards: Guards{Window: time.Second, CheckInterval: time.Second, ErrorBudget: 1}}
				res := br.Run(b.Context(), plan)
				if res.Outcome != OutcomeCompleted {
					b.Fatalf("%s (%s: %s)", res.Outcome, res.Reason, res.Detail)
				}
				b.ReportMetric(res.OpsPerSec(), "ops/s")
				b.ReportMetric(float64(res.Total.Quantile(0.5).Microseconds()), "p50-µs")
				b.ReportMetric(float64(res.Total.Quantile(0.99).Microseconds()), "p99-µs")
				b.ReportMetric(float64(res.LagQuantile(0.99).Microseconds()), "lag-p99-µs")
				b.ReportMetric(res.ClientCPU, "cpu-cores")
			}
		})
	}
}
