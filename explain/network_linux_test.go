//go:build linux

package explain

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/redistest"
)

// TestFaultNetwork: redis-server in a network namespace of the test's own,
// reached over a veth pair, whose every packet to the prober is dropped for
// faultFor, three times. The probe's requests out at the time wait for
// retransmissions (the kernel's timeout, 200 ms doubled at each loss; the
// server's own, on its side, as long or longer), and the requests behind
// them for those; the event loop reads each connection's TCP_INFO after
// them, and the retransmissions say network.
func TestFaultNetwork(t *testing.T) {
	// Short enough that the server's retransmission after it (its timeout
	// backs off from 200-400 ms) comes within the probe's 2 s timeout: a
	// timed-out request closes its connection, and the new connection's
	// first request is timed on a goroutine, without TCP_INFO.
	const faultFor = 600 * time.Millisecond
	ns := redistest.NewNetns(t)
	srv := redistest.StartInNetns(t, ns)
	h := startHarnessAt(t, srv.Addr(), srv.Client(), 5*time.Millisecond, 200)
	h.onLoop(t)
	excess, raw := h.during(t, 2*time.Second, func() {
		for range 3 {
			h.onLoop(t)
			restore := ns.Blackhole()
			time.Sleep(faultFor) // the fault's length, not a wait for something
			restore()
			h.settle(t)
		}
	})
	// The requests of 0.6 s at 200 a second and of the backoff after
	// (0.8-0.9 s in all on the test VM): about 170 slow requests each time.
	assertShare(t, excess, raw, Network, 300)
}

// TestFaultNetworkCongested: redis-server in a network namespace of the
// test's own, whose end of the veth pair is throttled (a tbf qdisc) while
// another client reads a big value over and over: the bulk flow keeps the
// link's queue full, every probe reply waits behind it, and the probe
// connections' round trips rise and hold (TCP_INFO), which says network.
// No packet of the probe's need be lost: the queue is what its requests
// wait in. The server waits for a CPU too on a busy test host, a few ms a
// window: that run delay only coincides with a rise far bigger than it.
func TestFaultNetworkCongested(t *testing.T) {
	const (
		rate     = 8_000_000 // bit/s
		queue    = 150 * time.Millisecond
		faultFor = 8 * time.Second
		bulkSize = 256 << 10
	)
	ns := redistest.NewNetns(t)
	srv := redistest.StartInNetns(t, ns)
	ctx := context.Background()
	bulk := srv.Client()
	if err := bulk.Set(ctx, "bulk", strings.Repeat("x", bulkSize), 0).Err(); err != nil {
		t.Fatal(err)
	}
	// 20 requests a second on the probe's two connections, 100 ms apart on
	// each: a reply waits in the queue 150 ms at most, so a connection
	// falls behind by little and catches up, and no request nears the
	// probe's 2 s timeout (a new connection's first request is timed
	// without TCP_INFO).
	h := startHarnessAt(t, srv.Addr(), srv.Client(), 5*time.Millisecond, 20)
	h.onLoop(t)
	excess, raw := h.during(t, 3*time.Second, func() {
		restore := ns.Throttle(rate, queue)
		defer restore()
		fctx, cancel := context.WithTimeout(ctx, faultFor)
		defer cancel()
		for fctx.Err() == nil { // bounded by faultFor
			if err := bulk.Get(fctx, "bulk").Err(); err != nil && fctx.Err() == nil {
				t.Fatal(err)
			}
		}
	})
	// Nearly every request of the 8 s is slow: 160 at 20 a second.
	assertShare(t, excess, raw, Network, 100)
}

// onLoop waits until both probe connections are on the event loop (after
// their first request): TCP_INFO is read there only.
func (h *harness) onLoop(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); h.poller.Connections() < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d probe connections on the event loop after 10 s, want 2", h.poller.Connections())
		}
	}
}
