//go:build linux

package prober

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/internal/faulttest"
	"github.com/redis-prober/redis-prober/internal/redistest"
	"github.com/redis-prober/redis-prober/internal/resp"
	"github.com/redis-prober/redis-prober/wire"
)

// stampedPings sends n PINGs through go-redis over a stamped connection and
// checks each one's wire timing against the user-space clock around it: a
// stamped latency is never below zero, never above what user space read,
// and missing or untrusted stamps are rare.
func stampedPings(t *testing.T, ep Endpoint, n int) {
	t.Helper()
	opts := ep.ClientOptions(time.Second, 1)
	var wc *guardedConn
	opts.Dialer = func(ctx context.Context, _, _ string) (net.Conn, error) {
		c, stampErr, err := ep.dialWire(ctx, time.Second, resp.Probe, wire.NewStamping())
		if stampErr != nil {
			t.Errorf("no stamps on %s: %v", ep, stampErr)
		}
		wc = c
		return c, err
	}
	client := redis.NewClient(opts)
	defer client.Close()
	ctx := context.Background()
	if err := client.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if wc.Clock() != wire.ClockKernel {
		t.Fatalf("clock %q, want kernel", wc.Clock())
	}
	cmd := redis.NewCmd(ctx, "ping")
	var fallbacks int
	var onWire, user time.Duration
	// The first replies may fall back, as they should; they are not what
	// is tested here.
	awaitRXStamp(t, wc, func() error {
		cmd.SetErr(nil)
		return client.Process(ctx, cmd)
	})
	for i := range n {
		cmd.SetErr(nil)
		start := time.Now()
		if err := client.Process(ctx, cmd); err != nil {
			t.Fatal(err)
		}
		end := time.Now()
		ex := wc.stamps.Last()
		d, delay, ok := wire.Timing(ex, time.Time{}, start, end)
		if !ok {
			fallbacks++
			if fallbacks <= 3 {
				t.Logf("request %d fell back: %s", i, whyNoStamps(ex, start, end))
			}
			continue
		}
		if d <= 0 || d > end.Sub(start) || delay < 0 {
			t.Fatalf("request %d: wire %v, client delay %v, user space %v", i, d, delay, end.Sub(start))
		}
		onWire += d
		user += end.Sub(start)
	}
	t.Logf("%s: %d requests, mean wire %v, mean user space %v, %d fallbacks", ep, n,
		onWire/time.Duration(max(1, n-fallbacks)), user/time.Duration(max(1, n-fallbacks)), fallbacks)
	if fallbacks > n/100 {
		t.Errorf("%d of %d requests without trustworthy stamps", fallbacks, n)
	}
}

// awaitRXStamp repeats exchange on c until a reply carries an RX stamp.
// The kernel turns receive stamping on for the whole host in a deferred
// work item when the first socket asks (netstamp_needed), and off again the
// same way when the last one closes, so the first replies on a new socket
// may carry none. A busy host runs that work item late, so the wait is
// bounded by time (and a count), not by a few replies.
func awaitRXStamp(t *testing.T, c *guardedConn, exchange func() error) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for i := 0; !c.stamps.Last().RX; i++ {
		if i >= 100_000 || time.Now().After(deadline) {
			t.Fatalf("no RX stamp on %d replies in 15 s", i)
		}
		if err := exchange(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestStampedLatencyWithinUserSpace(t *testing.T) {
	srv := redistest.Start(t)
	stampedPings(t, Endpoint{Network: "tcp", Addr: srv.Addr()}, 500)
}

func TestStampedLatencyUnderTLS(t *testing.T) {
	certs := redistest.NewCerts(t)
	srv := redistest.StartTLS(t, certs)
	stampedPings(t, Endpoint{Network: "tcp", Addr: srv.Addr(), TLS: certs.ClientConfig(t)}, 300)
}

// A unix-socket target has no kernel stamps: the probe says so (clock
// user, one log line) and times requests in user space.
// pingProbe runs a PING probe at rate against ep as target until n of its
// requests have ended with res, then stops it; it returns the metrics and
// the probe's log.
func pingProbe(t *testing.T, target string, ep Endpoint, rate float64, res Result, n float64) (*Metrics, *prometheus.Registry, string) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	rec := m.ForTarget(target, []string{"ping"}, 5*time.Millisecond)
	var logs syncBuf
	cmds, err := ParseCommands("ping")
	if err != nil {
		t.Fatal(err)
	}
	p := NewProbe(ProbeConfig{Rate: rate, Timeout: time.Second, Commands: cmds, Namespace: Namespace{Prefix: "redis-prober:", Tag: target}},
		ep, rec, NewFaultLog(slog.New(slog.NewTextHandler(&logs, nil))))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for testutil.ToFloat64(m.requests.WithLabelValues(target, "", "ping", "probe", res.String())) < n {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than %v probes %v within 10s; log:\n%s", n, res, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
	return m, reg, logs.String()
}

func TestUnixSocketFallsBackToUserClock(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "redis.sock")
	redistest.Start(t, "unixsocket "+sock, "unixsocketperm 700")
	m, reg, logs := pingProbe(t, "unix", Endpoint{Network: "unix", Addr: sock}, 100, ResultOK, 20)
	if v := testutil.ToFloat64(m.clock.WithLabelValues("unix", "", "user")); v != 1 {
		t.Errorf("clock user = %v, want 1", v)
	}
	if n := testutil.CollectAndCount(m.clock); n != 1 {
		t.Errorf("%d clock series, want only the user one", n)
	}
	if n := strings.Count(logs, "kernel timestamps unavailable"); n != 1 {
		t.Errorf("%d log lines saying the stamps are unavailable, want 1:\n%s", n, logs)
	}
	if n := histCount(t, reg, "redis_prober_client_delay_seconds"); n != 0 {
		t.Errorf("client delay recorded on a connection without stamps")
	}
}

// A TCP probe is timed by the kernel and records the client delay of
// every request.
func TestProbeRecordsClientDelay(t *testing.T) {
	srv := redistest.Start(t)
	m, reg, _ := pingProbe(t, "tcp", Endpoint{Network: "tcp", Addr: srv.Addr()}, 200, ResultOK, 200)
	if v := testutil.ToFloat64(m.clock.WithLabelValues("tcp", "", "kernel")); v != 1 {
		t.Errorf("clock kernel = %v, want 1", v)
	}
	reqs := testutil.ToFloat64(m.requests.WithLabelValues("tcp", "", "ping", "probe", "ok"))
	fall := testutil.ToFloat64(m.fallbacks.WithLabelValues("tcp", ""))
	delays := histCount(t, reg, "redis_prober_client_delay_seconds")
	t.Logf("%v requests, %v client-delay samples, %v fallbacks", reqs, delays, fall)
	// Every request but the first (which opened the connection) has a
	// client delay or is counted as a fallback; fallbacks are few (the
	// first replies on a quiet host may come before the kernel has turned
	// receive stamping on, see stampedPings).
	if delays+fall < reqs-2 || delays < reqs/2 {
		t.Errorf("%v requests, %v client-delay samples, %v fallbacks", reqs, delays, fall)
	}
}

func histCount(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			var n float64
			for _, m := range mf.GetMetric() {
				n += float64(m.GetHistogram().GetSampleCount())
			}
			return n
		}
	}
	return 0
}

type syncBuf struct {
	mu  chan struct{}
	buf bytes.Buffer
}

func (b *syncBuf) lock() {
	if b.mu == nil {
		b.mu = make(chan struct{}, 1)
	}
	b.mu <- struct{}{}
}
func (b *syncBuf) Write(p []byte) (int, error) {
	b.lock()
	defer func() { <-b.mu }()
	return b.buf.Write(p)
}
func (b *syncBuf) String() string { b.lock(); defer func() { <-b.mu }(); return b.buf.String() }

// A server that refuses the client with an error reply and hangs up (as
// protected mode does) is reported in its own words, not as the broken
// pipe the next write meets, and up is 0.
func TestRefusalReasonReachesTheLog(t *testing.T) {
	const denied = "DENIED Redis is running in protected mode because protected mode is enabled"
	srv := faulttest.Refusing(t, "-"+denied+"\r\n")
	m, _, logs := pingProbe(t, "refusing", Endpoint{Network: "tcp", Addr: srv.Addr()}, 50, ResultError, 20)
	if !strings.Contains(logs, denied) {
		t.Errorf("Redis's reason is not in the log:\n%s", logs)
	}
	if strings.Count(logs, "probe failing") > 2 {
		t.Errorf("more than two failure lines for one refusal:\n%s", logs)
	}
	if v := testutil.ToFloat64(m.up.WithLabelValues("refusing", "")); v != 0 {
		t.Errorf("up %v for a server refusing every client", v)
	}
}

// whyNoStamps says which of wireTiming's conditions refused an exchange.
func whyNoStamps(ex wire.Exchange, start, end time.Time) string {
	switch {
	case !ex.RX:
		return "no RX stamp"
	case !ex.TX:
		return "no TX stamp"
	case ex.ReadAt.Before(start) || ex.ReadAt.After(end):
		return "read outside the request"
	}
	skew := ex.ReadAt.Round(0).Sub(start.Round(0)) - ex.ReadAt.Sub(start)
	return fmt.Sprintf("skew %v, tx-write %v, read-rx %v", skew, ex.TXWall.Sub(ex.WriteAt.Round(0)), ex.ReadAt.Round(0).Sub(ex.RXWall))
}
