package prober

import (
	"context"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/internal/faulttest"
	"github.com/redis-prober/redis-prober/internal/redistest"
)

// connectionsReceived is the server's count of connections it accepted.
func connectionsReceived(t *testing.T, c *redis.Client) int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "total_connections_received:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no total_connections_received in INFO stats:\n%s", info)
	return 0
}

// connected waits until the probe's n connections are open (and on the
// poller, when there is one) and some requests were answered.
func connected(t *testing.T, h *probeHarness, poller *Poller, n int) {
	t.Helper()
	eventually(t, 10*time.Second, "the connections open", func() bool {
		return (poller == nil || poller.Connections() == n) && h.requests("ok") >= float64(2*n)
	})
}

// probeOneConnection probes srv with PING at rate on one connection (on
// poller unless nil) until it is open, and returns the probe and how many
// connections srv had accepted by then.
func probeOneConnection(t *testing.T, srv *faulttest.Listener, poller *Poller, rate float64, timeout time.Duration) (*probeHarness, int) {
	t.Helper()
	cfg := testProbeConfig(t, rate, timeout, "ping")
	cfg.Connections = 1
	cfg.Poller = poller
	h := startProbe(t, srv.Addr(), cfg)
	connected(t, h, poller, 1)
	return h, srv.Accepted()
}

// A server stopped past the probe's timeout and then resumed (a fork on a
// big heap, a host that starved it) answers the timed-out requests late:
// the connections are kept, the late replies dropped, and the probe goes
// on with no connection opened, where it used to open one for every
// timed-out slot and make a loaded host busier still.
func TestTimeoutKeepsItsConnection(t *testing.T) {
	bothPaths(t, func(t *testing.T, poller *Poller) {
		srv := redistest.Start(t)
		cfg := testProbeConfig(t, 20, 250*time.Millisecond, "ping")
		cfg.Poller = poller
		h := startProbe(t, srv.Addr(), cfg)
		connected(t, h, poller, 2)
		c := srv.Client()
		defer c.Close()
		before := connectionsReceived(t, c)
		// 400 ms: each connection's requests of the first 150 ms time out,
		// and their replies come well within the patience of two timeouts
		// past their deadlines.
		srv.Pause()
		time.Sleep(400 * time.Millisecond)
		srv.Resume()
		ok := h.requests("ok")
		eventually(t, 10*time.Second, "requests answered again", func() bool { return h.requests("ok") >= ok+20 })
		if n := h.requests("timeout"); n < 1 {
			t.Fatalf("%v timeouts while the server was stopped for 400 ms, want some", n)
		}
		if n := connectionsReceived(t, c) - before; n != 0 {
			t.Errorf("%d connections opened after timeouts the server answered late, want 0", n)
		}
		if e := h.requests("error"); e != 0 {
			t.Errorf("%v errors: a late reply was taken for a later request's", e)
		}
		if poller != nil && poller.Connections() != 2 || h.up() != 1 {
			t.Errorf("up %v after the server answered again", h.up())
		}
	})
}

// A slot that comes due while its connection owes a timed-out request's
// reply waits for it and goes when it comes, charged from its due time (the
// wait was the server's), as a slot behind a slow reply is; no connection
// is opened. Every reply after the late one takes 40 ms, so a request that
// took the reply of the one before it (the owed one not dropped: the
// stream one reply behind for good) shows as an answer faster than that.
func TestSlotWaitsForOwedReply(t *testing.T) {
	bothPaths(t, func(t *testing.T, poller *Poller) {
		var delay, lag atomic.Bool
		srv := faulttest.RESP(t, faulttest.Handshake(func(args []string) faulttest.Reply {
			slow := delay.Swap(false)
			lagged := lag.Load()
			if slow {
				lag.Store(true)
			}
			wait := time.Duration(0)
			switch {
			case slow:
				// Past the 200 ms timeout and the next slot's due
				// time (500 ms), within that slot's deadline (700 ms).
				wait = 550 * time.Millisecond
			case lagged:
				wait = 40 * time.Millisecond
			default:
				return faulttest.Bytes("+PONG\r\n")
			}
			return faulttest.Reply{Stream: func(w io.Writer) error {
				time.Sleep(wait)
				_, err := io.WriteString(w, "+PONG\r\n")
				return err
			}}
		}))
		h, accepted := probeOneConnection(t, srv, poller, 2, 200*time.Millisecond)
		delay.Store(true)
		eventually(t, 10*time.Second, "the delayed request's timeout", func() bool { return h.requests("timeout") >= 1 })
		// The one connection waits on the delayed request: nothing is
		// answered fast from here on.
		total, slower := h.latency(0.025)
		fast := total - slower
		ok := h.requests("ok")
		eventually(t, 10*time.Second, "three more answers", func() bool { return h.requests("ok") >= ok+3 })
		if n := h.requests("timeout"); n != 1 {
			t.Errorf("%v timeouts, want the delayed request's alone", n)
		}
		total, slower = h.latency(0.025)
		if n := total - slower - fast; n != 0 {
			t.Errorf("%d answers under 25 ms from a server that took 40 ms for each: a request took the reply of the one before it", n)
		}
		// The slot behind it waited about 100 ms for the owed reply.
		if answered := float64(slower) - h.requests("timeout"); answered < 1 {
			t.Errorf("no answered request slower than 25 ms: the slot that waited for the owed reply was charged from its send")
		}
		if n := srv.Accepted() - accepted; n != 0 {
			t.Errorf("%d connections opened for a reply that came late, want 0", n)
		}
		h.stop()
	})
}

// A connection whose timed-out request is never answered (the server lost
// it, or the path to it lost its state) is given up on after its patience,
// and the worker goes on on a new one.
func TestOwedReplyIsGivenUpOn(t *testing.T) {
	bothPaths(t, func(t *testing.T, poller *Poller) {
		release := make(chan struct{})
		var swallow atomic.Bool
		srv := faulttest.RESP(t, faulttest.Handshake(func(args []string) faulttest.Reply {
			if swallow.Swap(false) {
				return faulttest.Reply{Stream: func(io.Writer) error { <-release; return io.EOF }}
			}
			return faulttest.Bytes("+PONG\r\n")
		}))
		defer close(release)
		h, accepted := probeOneConnection(t, srv, poller, 20, 100*time.Millisecond)
		swallow.Store(true)
		eventually(t, 10*time.Second, "a new connection", func() bool { return srv.Accepted() > accepted })
		ok := h.requests("ok")
		eventually(t, 10*time.Second, "requests answered on it", func() bool { return h.requests("ok") >= ok+10 })
		// The slots behind the lost reply time out over its patience (two
		// timeouts past its deadline), no fewer.
		if n := h.requests("timeout"); n < 3 {
			t.Errorf("%v timeouts before the connection was given up on, want at least 3", n)
		}
		h.stop()
	})
}
