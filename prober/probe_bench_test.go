package prober

import (
	"context"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/internal/redistest"
	"github.com/redis-prober/redis-prober/internal/resp"
	"github.com/redis-prober/redis-prober/wire"
)

// The hot path of one probe, piece by piece. Recording a sample must not
// allocate: go test -bench 'Record|ChargeFrom|Claim' -benchmem ./prober

func BenchmarkRecord(b *testing.B) {
	rec := NewMetrics(prometheus.NewRegistry()).ForTarget("t", []string{"ping", "get", "set"}, 5*time.Millisecond)
	b.ReportAllocs()
	d := 150 * time.Microsecond
	for i := 0; b.Loop(); i++ {
		rec.Record(i%3, ResultOK, d)
		rec.SetUp(true)
		rec.RecordLag(d)
	}
}

func BenchmarkChargeFrom(b *testing.B) {
	claimed := time.Now()
	due := claimed.Add(time.Millisecond)
	woke := due.Add(80 * time.Microsecond)
	b.ReportAllocs()
	var sink time.Duration
	for b.Loop() {
		_, lag, _ := chargeFrom(claimed, due, woke)
		sink += lag
	}
	_ = sink
}

func BenchmarkScheduleClaim(b *testing.B) {
	s := NewTimetable(time.Now(), IntervalFor(100))
	b.ReportAllocs()
	for b.Loop() {
		s.Claim()
	}
}

// BenchmarkProcessPing is one PING through go-redis over the probe's
// stamped connection, back to back: the per-request CPU cost and
// allocations of the protocol layer, the guard and the stamps (closed loop,
// so no wake-up cost is in it; see BenchmarkProbePaced for that).
func BenchmarkProcessPing(b *testing.B) {
	srv := redistest.Start(b)
	ep := Endpoint{Network: "tcp", Addr: srv.Addr()}
	opts := ep.ClientOptions(time.Second, 1)
	var wc *guardedConn
	opts.Dialer = func(ctx context.Context, _, _ string) (net.Conn, error) {
		c, _, err := ep.dialWire(ctx, time.Second, resp.Probe, wire.NewStamping())
		wc = c
		return c, err
	}
	client := redis.NewClient(opts)
	defer client.Close()
	ctx := context.Background()
	cmd := redis.NewCmd(ctx, "ping")
	if err := client.Process(ctx, cmd); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		cmd.SetErr(nil)
		cmd.SetVal(nil)
		if err := client.Process(ctx, cmd); err != nil {
			b.Fatal(err)
		}
		if wc.stamps != nil {
			_ = wc.stamps.Last()
		}
	}
}

// BenchmarkProbeExchange is one PING the way the probe sends it now
// (probeConn.exchange: one deadline, the encoded request, the codec reading
// the reply through the guard and the stamps), back to back; beside
// BenchmarkProcessPing (the go-redis path the probe used before) and
// BenchmarkRawPing (no codec at all).
func BenchmarkProbeExchange(b *testing.B) {
	srv := redistest.Start(b)
	ep := Endpoint{Network: "tcp", Addr: srv.Addr()}
	pc, _, err := ep.openProbeConn(context.Background(), time.Second, time.Now().Add(time.Second), wire.NewStamping())
	if err != nil {
		b.Fatal(err)
	}
	defer pc.Close()
	ping := encodeArgs([]any{"ping"})
	b.ReportAllocs()
	for b.Loop() {
		if err := pc.exchange(ping, time.Now().Add(time.Second)); err != nil {
			b.Fatal(err)
		}
		if pc.conn.stamps != nil {
			_ = pc.conn.stamps.Last()
		}
	}
}

// BenchmarkRawPing is BenchmarkProcessPing without go-redis: raw RESP written
// and read on the same stamped connection. The difference between the two
// is what the protocol layer costs per request.
func BenchmarkRawPing(b *testing.B) {
	srv := redistest.Start(b)
	ep := Endpoint{Network: "tcp", Addr: srv.Addr()}
	c, _, err := ep.dialWire(context.Background(), time.Second, resp.Probe, wire.NewStamping())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ping := []byte("*1\r\n$4\r\nPING\r\n")
	buf := make([]byte, 64)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Write(ping); err != nil {
			b.Fatal(err)
		}
		for got := 0; got < len("+PONG\r\n"); {
			n, err := c.Read(buf[got:])
			if err != nil {
				b.Fatal(err)
			}
			got += n
		}
	}
}

// sampleRecorder keeps every latency the probe records, exactly, until it
// holds n of them.
type sampleRecorder struct {
	mu      sync.Mutex
	lat     []time.Duration
	lag     time.Duration
	lags    int
	bad     int
	full    chan struct{}
	closeMu sync.Once
}

func newSampleRecorder(n int) *sampleRecorder {
	return &sampleRecorder{lat: make([]time.Duration, 0, n), full: make(chan struct{})}
}

func (r *sampleRecorder) Record(_ int, res Result, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if res != ResultOK {
		r.bad++
	}
	if len(r.lat) < cap(r.lat) {
		r.lat = append(r.lat, d)
		if len(r.lat) == cap(r.lat) {
			r.closeMu.Do(func() { close(r.full) })
		}
	}
}

func (r *sampleRecorder) SetUp(bool)                      {}
func (r *sampleRecorder) RecordClientDelay(time.Duration) {}
func (r *sampleRecorder) SetClock(wire.Clock)             {}
func (r *sampleRecorder) ClockFallback()                  {}
func (r *sampleRecorder) RecordNetwork(NetworkSample)     {}

func (r *sampleRecorder) RecordLag(d time.Duration) {
	r.mu.Lock()
	r.lag += d
	r.lags++
	r.mu.Unlock()
}

// report puts the exact mean, p50, p99 and p99.9 (nearest rank) on the
// benchmark line, in microseconds.
func (r *sampleRecorder) report(b *testing.B) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bad > 0 {
		b.Errorf("%d of %d probes failed", r.bad, len(r.lat))
	}
	lat := slices.Clone(r.lat)
	slices.Sort(lat)
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	q := func(p float64) time.Duration {
		return lat[max(0, min(len(lat)-1, int(p*float64(len(lat))+0.999999)-1))]
	}
	b.ReportMetric(0, "ns/op") // wall time per op is just the pacing
	b.ReportMetric(us(sum/time.Duration(len(lat))), "mean-µs")
	b.ReportMetric(us(q(.5)), "p50-µs")
	b.ReportMetric(us(q(.99)), "p99-µs")
	b.ReportMetric(us(q(.999)), "p999-µs")
	if r.lags > 0 {
		b.ReportMetric(us(r.lag/time.Duration(r.lags)), "late-µs")
	}
}

// BenchmarkProbePaced drives the real probe (worker, schedule, the RESP
// codec over the stamped connection) with PING at 100/s on one connection, and reports
// the exact quantiles of b.N samples: the in-process twin of make bench's
// prober rounds, free of histogram bucketing, with the connection on the
// poller (as the engine runs it on Linux) and on a goroutine of its own.
// Run it long enough to mean something, e.g. -bench ProbePaced -benchtime
// 3000x (30 s a path).
func BenchmarkProbePaced(b *testing.B) {
	b.Run("poller", func(b *testing.B) { benchProbePaced(b, NewPoller()) })
	b.Run("goroutine", func(b *testing.B) { benchProbePaced(b, nil) })
}

func benchProbePaced(b *testing.B, poller *Poller) {
	srv := redistest.Start(b)
	cmds, err := ParseCommands("ping")
	if err != nil {
		b.Fatal(err)
	}
	cfg := ProbeConfig{Rate: 100, Timeout: time.Second, Commands: cmds, Connections: 1,
		DataSize: 32, KeyTTL: time.Minute, Namespace: Namespace{Prefix: "redis-prober:", Tag: "bench"}, Poller: poller}
	const warmup = 100
	rec := newSampleRecorder(b.N + warmup)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	b.ResetTimer()
	go func() {
		defer close(done)
		NewProbe(cfg, Endpoint{Network: "tcp", Addr: srv.Addr()}, rec,
			NewFaultLog(slog.New(slog.NewTextHandler(io.Discard, nil)))).Run(ctx)
	}()
	select {
	case <-rec.full:
	case <-time.After(time.Duration(b.N+warmup)*20*time.Millisecond + 5*time.Second):
		b.Error("probe too slow")
	}
	cancel()
	<-done
	b.StopTimer()
	rec.mu.Lock()
	rec.lat = rec.lat[min(warmup, len(rec.lat)):]
	rec.mu.Unlock()
	if len(rec.lat) > 0 {
		rec.report(b)
	}
}
