package explain

import (
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/prober"
	"github.com/redis-prober/redis-prober/wire"
)

// TestNetworkEvidence: what a probe connection's TCP_INFO after a request
// says, on fixtures: a request 250 ms on the wire, threshold 10 ms.
func TestNetworkEvidence(t *testing.T) {
	from := time.Unix(1000, 0)
	to := from.Add(250 * time.Millisecond)
	const th = 10 * time.Millisecond
	base := wire.TCPStats{RTT: 60 * time.Microsecond, RTTVar: 30 * time.Microsecond, MinRTT: 20 * time.Microsecond,
		RTO: 204 * time.Millisecond}
	with := func(f func(*prober.NetworkSample)) prober.NetworkSample {
		s := prober.NetworkSample{From: from, To: to, TCP: base}
		f(&s)
		return s
	}
	for _, tc := range []struct {
		name string
		s    prober.NetworkSample
		ok   bool
		dur  time.Duration // the stall; 0 for a state
	}{
		{"a quiet connection", with(func(*prober.NetworkSample) {}), false, 0},
		{"one retransmission: the timeout", with(func(s *prober.NetworkSample) { s.Retrans = 1 }), true, 204 * time.Millisecond},
		// Two losses wait 204 + 408 ms, more than the request was on the
		// wire: the stall is its time on the wire.
		{"backoff, at most the time on the wire", with(func(s *prober.NetworkSample) { s.Retrans = 2 }), true, 250 * time.Millisecond},
		{"the kernel's own time in recovery", with(func(s *prober.NetworkSample) {
			s.Retrans, s.RTOTime, s.TCP.RTO = 1, 230*time.Millisecond, 201*time.Millisecond
		}), true, 230 * time.Millisecond},
		{"many retransmissions do not overflow", with(func(s *prober.NetworkSample) { s.Retrans = 1 << 31 }), true, 250 * time.Millisecond},
		// A queue on the path: the round trip held at 8 ms over a 20 µs
		// minimum, its deviation small.
		{"a round trip that rose and held", with(func(s *prober.NetworkSample) {
			s.TCP.RTT, s.TCP.RTTVar = 8*time.Millisecond, time.Millisecond
		}), true, 0},
		// One late reply (a server stall): the smoothed round trip rose
		// by an eighth of it, its deviation by more.
		{"one late reply", with(func(s *prober.NetworkSample) {
			s.TCP.RTT, s.TCP.RTTVar = 5*time.Millisecond, 10*time.Millisecond
		}), false, 0},
		{"a rise under half the threshold", with(func(s *prober.NetworkSample) {
			s.TCP.RTT, s.TCP.RTTVar = 3*time.Millisecond, 100*time.Microsecond
		}), false, 0},
		// A remote node 4 ms away whose round trip is 6 ms: not doubled.
		{"a rise under the path's own round trip", with(func(s *prober.NetworkSample) {
			s.TCP.MinRTT, s.TCP.RTT, s.TCP.RTTVar = 4*time.Millisecond, 7*time.Millisecond, 100*time.Microsecond
		}), false, 0},
		{"no min_rtt (an old kernel)", with(func(s *prober.NetworkSample) {
			s.TCP.MinRTT, s.TCP.RTT, s.TCP.RTTVar = 0, 8*time.Millisecond, time.Millisecond
		}), false, 0},
		{"no time on the wire", with(func(s *prober.NetworkSample) { s.To, s.Retrans = from, 1 }), false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, ok := networkEvidence(tc.s, th)
			if ok != tc.ok {
				t.Fatalf("evidence %v (%+v), want %v", ok, e, tc.ok)
			}
			if !ok {
				return
			}
			if e.Cause != Network || e.From != tc.s.From.UnixNano() || e.To != tc.s.To.UnixNano() || e.Spread {
				t.Errorf("evidence %+v: want network over the request's time on the wire", e)
			}
			if e.Dur != tc.dur {
				t.Errorf("stall %v, want %v", e.Dur, tc.dur)
			}
		})
	}
}

// The tap puts network evidence on the node's timeline, and a slow request
// that waited on a retransmission is attributed to the network.
func TestTapRecordNetwork(t *testing.T) {
	n := NewNode(Config{Threshold: 10 * time.Millisecond})
	rec := n.Tap(prober.NopRecorder{})
	now := time.Now()
	rec.RecordNetwork(prober.NetworkSample{From: now.Add(-210 * time.Millisecond), To: now, Retrans: 1,
		TCP: wire.TCPStats{RTO: 204 * time.Millisecond, MinRTT: 20 * time.Microsecond, RTT: 40 * time.Microsecond}})
	rec.Record(0, prober.ResultOK, 212*time.Millisecond)
	n.Settle(time.Now().Add(time.Second).UnixNano())
	if got := n.Counts(); got[Network] != 1 {
		t.Errorf("counts %v, want the request under network", got)
	}
}
