//go:build linux

package prober

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"golang.org/x/sys/unix"

	"github.com/redis-prober/redis-prober/internal/faulttest"
	"github.com/redis-prober/redis-prober/internal/redistest"
	"github.com/redis-prober/redis-prober/internal/resp"
	"github.com/redis-prober/redis-prober/wire"
)

// workerGoroutines counts the goroutines running a probe worker's own loop.
func workerGoroutines() int {
	buf := make([]byte, 1<<20)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), "prober.(*worker).run(")
}

// Once their connections are open, a probe's workers are the poller's: no
// goroutine of theirs is left, every request is still kernel-stamped, and
// stopping the probe hands every connection back closed.
func TestPollerServesProbeConnections(t *testing.T) {
	srv := redistest.Start(t)
	cfg := testProbeConfig(t, 200, time.Second, "ping,get,set")
	cfg.Poller = newPoller(2) // the two connections on two loops, as on a larger host
	pl := cfg.Poller
	h := startProbe(t, srv.Addr(), cfg)
	eventually(t, 10*time.Second, "both connections on the poller", func() bool { return pl.Connections() == 2 })
	for i, sh := range pl.shards {
		if n := sh.served.Load(); n != 1 {
			t.Errorf("loop %d serves %d connections, want 1 each", i, n)
		}
	}
	before := h.requests("ok")
	eventually(t, 10*time.Second, "200 more requests", func() bool { return h.requests("ok") >= before+200 })
	if n := workerGoroutines(); n != 0 {
		t.Errorf("%d worker goroutines with both connections on the poller, want 0", n)
	}
	if errs := h.requests("error") + h.requests("timeout"); errs != 0 {
		t.Errorf("%v failed requests against a healthy server", errs)
	}
	h.stop()
	if n := pl.Connections(); n != 0 {
		t.Errorf("the poller still serves %d connections of a stopped probe", n)
	}
	fams := h.families()
	var delays, fallbacks uint64
	for _, m := range fams["redis_prober_client_delay_seconds"].GetMetric() {
		delays += m.GetHistogram().GetSampleCount()
	}
	for _, m := range fams["redis_prober_clock_fallbacks_total"].GetMetric() {
		fallbacks += uint64(m.GetCounter().GetValue())
	}
	reqs := uint64(h.requests(""))
	t.Logf("%d requests, %d client-delay samples, %d clock fallbacks", reqs, delays, fallbacks)
	// Every request but the two that opened a connection is timed by the
	// kernel's stamps, or counted as a fallback (the host turns receive
	// stamping on late, see stampedPings); fallbacks are few.
	if delays+fallbacks < reqs-2 || delays < reqs/2 {
		t.Errorf("%d requests, %d stamped, %d fallbacks", reqs, delays, fallbacks)
	}
}

// A polled connection the server closes while no request is out (CLIENT
// KILL, a restart, the timeout directive) fails the next request, as it
// would for a client reusing it, and the worker opens a new one.
func TestPolledConnectionKilledWhileIdle(t *testing.T) {
	srv := redistest.Start(t)
	cfg := testProbeConfig(t, 20, time.Second, "ping")
	pl := cfg.Poller
	h := startProbe(t, srv.Addr(), cfg)
	eventually(t, 10*time.Second, "both connections on the poller", func() bool { return pl.Connections() == 2 })
	c := srv.Client()
	defer c.Close()
	if err := c.Do(context.Background(), "CLIENT", "KILL", "TYPE", "normal").Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the killed connections' next requests to fail", func() bool { return h.requests("error") >= 2 })
	ok := h.requests("ok")
	eventually(t, 10*time.Second, "new connections on the poller", func() bool {
		return pl.Connections() == 2 && h.requests("ok") >= ok+10
	})
	if e := h.requests("error"); e > 2 {
		t.Errorf("%v errors for two killed connections, want 2", e)
	}
	if h.up() != 1 {
		t.Errorf("up = %v after reconnecting", h.up())
	}
}

// A server that sends a reply nobody asked for, after the one that was
// asked for, puts the stream out of step: the loop does not take it for the
// next request's reply. The next request fails, says why, and the worker
// reconnects; nothing hangs or crashes.
func TestPolledUnaskedReplyIsAnError(t *testing.T) {
	srv := faulttest.RESP(t, faulttest.Handshake(func(args []string) faulttest.Reply {
		return faulttest.Reply{Bytes: []byte("+PONG\r\n"), Stream: func(w io.Writer) error {
			// The extra reply comes once the connection has gone to the
			// poller, as a separate segment.
			if f, ok := w.(interface{ Flush() error }); ok {
				if err := f.Flush(); err != nil {
					return err
				}
			}
			time.Sleep(20 * time.Millisecond)
			_, err := w.Write([]byte("+EXTRA\r\n"))
			return err
		}}
	}))
	cfg := testProbeConfig(t, 10, time.Second, "ping")
	cfg.Connections = 1
	var logs syncBuf
	m := NewMetrics(prometheus.NewRegistry())
	rec := m.ForTarget("t", []string{"ping"}, 5*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		NewProbe(cfg, Endpoint{Network: "tcp", Addr: srv.Addr()}, rec, NewFaultLog(slog.New(slog.NewTextHandler(&logs, nil)))).Run(ctx)
	}()
	errs := func() float64 {
		return testutil.ToFloat64(m.requests.WithLabelValues("t", "", "ping", "probe", "error"))
	}
	deadline := time.Now().Add(10 * time.Second)
	for errs() < 2 {
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("no request failed on a stream out of step within 10 s; log:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
	if !strings.Contains(logs.String(), errUnasked.Error()) {
		t.Errorf("the log does not say why the request failed:\n%s", logs.String())
	}
	if oks := testutil.ToFloat64(m.requests.WithLabelValues("t", "", "ping", "probe", "ok")); oks < 2 {
		t.Errorf("%v requests ok: the asked-for replies must still count", oks)
	}
}

// A reply longer than one read (here 40 KiB, sent in pieces) is gathered
// and counts as one reply, on the poller.
func TestPolledReplyInPieces(t *testing.T) {
	const size = 40 << 10
	srv := faulttest.RESP(t, faulttest.Handshake(func(args []string) faulttest.Reply {
		return faulttest.Reply{Bytes: []byte("$40960\r\n"), Stream: func(w io.Writer) error {
			f := w.(interface{ Flush() error })
			chunk := strings.Repeat("x", size/4)
			for range 4 {
				if _, err := io.WriteString(w, chunk); err != nil {
					return err
				}
				if err := f.Flush(); err != nil {
					return err
				}
				time.Sleep(time.Millisecond)
			}
			_, err := io.WriteString(w, "\r\n")
			return err
		}}
	}))
	cfg := testProbeConfig(t, 50, time.Second, "ping")
	cfg.Connections = 1
	pl := cfg.Poller
	h := startProbe(t, srv.Addr(), cfg)
	eventually(t, 10*time.Second, "the connection on the poller", func() bool { return pl.Connections() == 1 })
	before := h.requests("ok")
	eventually(t, 10*time.Second, "20 more replies", func() bool { return h.requests("ok") >= before+20 })
	if bad := h.requests("error") + h.requests("timeout"); bad != 0 {
		t.Errorf("%v failed requests: a reply in pieces was not gathered", bad)
	}
	if pl.Connections() != 1 {
		t.Errorf("the connection left the poller")
	}
}

// resultRecorder keeps each request's result and latency, and the
// network samples.
type resultRecorder struct {
	mu  sync.Mutex
	res []Result
	lat []time.Duration
	net []NetworkSample
}

func (r *resultRecorder) RecordNetwork(s NetworkSample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.net = append(r.net, s)
}

func (r *resultRecorder) Record(_ int, res Result, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res, r.lat = append(r.res, res), append(r.lat, d)
}
func (r *resultRecorder) SetUp(bool)                      {}
func (r *resultRecorder) RecordLag(time.Duration)         {}
func (r *resultRecorder) RecordClientDelay(time.Duration) {}
func (r *resultRecorder) SetClock(wire.Clock)             {}
func (r *resultRecorder) ClockFallback()                  {}

// manualLoop is a poll loop driven by hand (no goroutine) serving one PING
// worker's stamped connection to ep, recording into rec; cancel stops the
// worker should the loop hand it back.
func manualLoop(t *testing.T, ep Endpoint, timeout time.Duration) (*pollLoop, *pollConn, *resultRecorder, context.CancelFunc) {
	t.Helper()
	cmds, err := ParseCommands("ping")
	if err != nil {
		t.Fatal(err)
	}
	rec := &resultRecorder{}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	p := NewProbe(ProbeConfig{Rate: 1, Timeout: timeout, Commands: cmds, Connections: 1},
		ep, rec, NewFaultLog(slog.New(slog.NewTextHandler(io.Discard, nil))))
	w := &worker{probe: p, ctx: ctx, done: func() {},
		reqs: [][]byte{encodeArgs([]any{"PING"})}}
	w.unpolled = true // a handed-back worker stays on its goroutine
	c, stampErr, err := ep.dialWire(ctx, time.Second, resp.Probe, wire.NewStamping())
	if err != nil || stampErr != nil {
		t.Fatal(err, stampErr)
	}
	// The cases below need RX stamps, so they start once a reply carries one.
	pcn := &probeConn{conn: c, r: resp.NewReader(c, probeReadBuffer)}
	awaitRXStamp(t, c, func() error {
		return pcn.exchange(encodeArgs([]any{"PING"}), time.Now().Add(time.Second))
	})
	// The schedule starts now: its first slot due when the warm-up began
	// would be a timeout already after a slow warm-up on a busy host.
	w.sched = NewTimetable(time.Now(), time.Second)
	fd, err := wire.Dup(c.stamps)
	if err != nil {
		t.Fatal(err)
	}
	pc := &pollConn{w: w, fd: fd, remote: c.RemoteAddr(), guard: c.guard, sent: c.stamps.Sent()}
	_ = c.Close()
	poll, err := wire.NewPoll()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(poll.Close)
	l := newPollLoop(newPoller(1).shards[0], poll)
	l.conns[int32(fd)] = pc
	t.Cleanup(func() {
		if l.conns[int32(fd)] == pc { // still open: not handed back
			_ = unix.Close(fd)
		}
	})
	return l, pc, rec, cancel
}

// A loop late to its own timer (a busy host) looks for the reply before it
// calls the request a timeout: one that reached the kernel by its deadline
// is an answer; one that came after it, or not at all, is a timeout at its
// true age. The loop is driven by hand here, so its lateness is exact.
func TestLateLoopReadsBeforeTimingOut(t *testing.T) {
	srv := redistest.Start(t)
	ep := Endpoint{Network: "tcp", Addr: srv.Addr()}
	// Long enough that a busy host's Redis answers within it: the cases
	// are about the loop's lateness, not the server's.
	const timeout = 200 * time.Millisecond
	cases := []struct {
		name  string
		pause time.Duration // Redis stopped for this long after the request
		late  time.Duration // the loop looks this long after the request
		want  Result
	}{
		{"reply in time", 0, 3 * timeout, ResultOK},
		{"reply after the deadline", 2 * timeout, 3 * timeout, ResultTimeout},
		{"no reply yet", 4 * timeout, 2 * timeout, ResultTimeout},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, pc, rec, cancel := manualLoop(t, ep, timeout)
			if tc.pause > 0 {
				srv.Pause()
				defer srv.Resume() // the next case's warm-up needs it, should this one fail
			}
			pc.s = pc.w.claim()
			if !l.send(pc, time.Now()) || !pc.inflight {
				t.Fatal("the request was not sent")
			}
			sent := time.Now()
			if tc.pause > 0 {
				time.Sleep(tc.pause)
				srv.Resume()
			}
			time.Sleep(tc.late - time.Since(sent))
			cancel() // a worker handed back stops at once
			l.fire()
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if len(rec.res) != 1 {
				t.Fatalf("%d results, want 1", len(rec.res))
			}
			if rec.res[0] != tc.want {
				t.Errorf("result %v (latency %v), want %v", rec.res[0], rec.lat[0], tc.want)
			}
			if tc.want == ResultOK && rec.lat[0] >= timeout {
				t.Errorf("answered in time but charged %v", rec.lat[0])
			}
			if tc.want == ResultTimeout && rec.lat[0] < timeout {
				t.Errorf("timeout charged %v, under its %v deadline", rec.lat[0], timeout)
			}
		})
	}
}

// The loop takes a request's TX stamp by its key, as the goroutine path
// does: a stamp left on the error queue by an earlier write (here one
// written beneath the loop, which nobody drained) is never taken for the
// next request's departure.
func TestPolledStaleTXStampNotMatched(t *testing.T) {
	srv := redistest.Start(t)
	l, pc, _, _ := manualLoop(t, Endpoint{Network: "tcp", Addr: srv.Addr()}, time.Second)
	ping := []byte("*1\r\n$4\r\nPING\r\n")
	pong := []byte("+PONG\r\n")
	for range 3 {
		// The earlier request: its stamp stays queued, and its bytes
		// still count in the key space; its reply is read beneath too.
		if _, err := unix.Write(pc.fd, ping); err != nil {
			t.Fatal(err)
		}
		pc.sent += uint32(len(ping))
		var buf [64]byte
		deadline := time.Now().Add(5 * time.Second)
		for got := 0; got < len(pong); {
			n, err := unix.Read(pc.fd, buf[got:])
			switch {
			case err == unix.EAGAIN && time.Now().Before(deadline):
				time.Sleep(time.Millisecond)
				continue
			case err != nil:
				t.Fatal(err)
			}
			got += n
		}
		if err := pc.guard.Feed(pong); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
		pc.s = pc.w.claim()
		if !l.send(pc, time.Now()) {
			t.Fatal("the request was not sent")
		}
		ex := pc.ex
		if !ex.TX {
			t.Fatalf("no TX stamp for the loop's own write: %+v", ex)
		}
		if ex.TXWall.Before(ex.WriteAt.Round(0)) {
			t.Fatalf("TX stamp %v is %v before the write it was matched to: a stale stamp",
				ex.TXWall, ex.WriteAt.Round(0).Sub(ex.TXWall))
		}
		// Its reply, read by the loop, so the next round starts with
		// nothing in flight.
		for i := 0; pc.inflight; i++ {
			if i > 5000 {
				t.Fatal("no reply within 5 s")
			}
			l.read(pc, false)
			time.Sleep(time.Millisecond)
		}
	}
}

// An overdue request is charged what its connection spent on Redis past
// its due time, never the prober's lateness in reading replies: a loop that
// reads a prompt reply late sends the next slot overdue but free on the
// wire (its lag, not Redis's); a server that held a reply past the next
// slot's due time is charged from that due time to the reply's arrival, on
// top of the next request's own round trip; and a backlog after a stall,
// drained by a loop late at every read, is charged as a prompt loop would
// have drained it. Slots are 100 ms apart; the first is sent at once.
func TestOverdueChargedByPreviousArrival(t *testing.T) {
	srv := redistest.Start(t)
	ep := Endpoint{Network: "tcp", Addr: srv.Addr()}
	const interval = 100 * time.Millisecond
	for _, tc := range []struct {
		name     string
		pause    time.Duration // Redis stopped this long after the first request
		late     time.Duration // the loop reads each reply this long after it could
		requests int
		// the last request's charge: at least min, under max
		min, max time.Duration
	}{
		// Without the rule: from its due time to its reply, 2*interval.
		{"prompt reply read late", 0, 3 * interval, 2, 0, interval},
		// The first reply came after the resume, 3*interval after the
		// first slot: 2*interval after the second was due.
		{"reply held past the next due time", 3 * interval, 0, 2, 2 * interval, time.Hour},
		// A prompt loop would have sent the second request at the resume
		// (3*interval) and the third a round trip later, interval after
		// it was due. By the arrival of each reply instead, the loop's
		// 150 ms lateness at the second read would be charged too.
		{"backlog drained by a late loop", 3 * interval, 3 * interval / 2, 3, interval, 2 * interval},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, pc, rec, _ := manualLoop(t, ep, 5*time.Second)
			pc.w.sched = NewTimetable(time.Now(), interval)
			if tc.pause > 0 {
				srv.Pause()
				defer srv.Resume() // should the test fail before its resume
			}
			pc.s = pc.w.claim()
			sent := time.Now()
			if !l.send(pc, sent) || !pc.inflight {
				t.Fatal("the first request was not sent")
			}
			if tc.pause > 0 {
				time.Sleep(tc.pause - time.Since(sent))
				srv.Resume()
			}
			// Each read settles the reply that has arrived; the loop
			// sends the next slot, overdue, as soon as it settles one.
			deadline := time.Now().Add(10 * time.Second)
			for i := range tc.requests {
				time.Sleep(tc.late)
				for n := 0; n <= i; {
					if time.Now().After(deadline) {
						t.Fatalf("%d of %d replies in 10 s", n, tc.requests)
					}
					l.read(pc, false)
					rec.mu.Lock()
					n = len(rec.res)
					rec.mu.Unlock()
					if n <= i {
						time.Sleep(time.Millisecond)
					}
				}
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			for i, r := range rec.res {
				if r != ResultOK {
					t.Fatalf("request %d: %v, want an answer", i, r)
				}
			}
			last := rec.lat[tc.requests-1]
			t.Logf("charged %v", rec.lat)
			if last < tc.min || last >= tc.max {
				t.Errorf("the last request was charged %v, want [%v, %v)", last, tc.min, tc.max)
			}
		})
	}
}
