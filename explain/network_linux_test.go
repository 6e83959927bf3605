//go:build linux

package explain

import (
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
	// TCP_INFO is read by the event loop: both connections are on it
	// (after their first request) before each fault.
	onLoop := func() {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); h.poller.Connections() < 2; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d probe connections on the event loop after 10 s, want 2", h.poller.Connections())
			}
		}
	}
	onLoop()
	excess, raw := h.during(t, 2*time.Second, func() {
		for range 3 {
			onLoop()
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
