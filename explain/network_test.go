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
	t.Parallel()
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
		dur  time.Duration // the stall, or the rise
		rise bool
	}{
		{"a quiet connection", with(func(*prober.NetworkSample) {}), false, 0, false},
		{"one retransmission: the timeout", with(func(s *prober.NetworkSample) { s.Retrans = 1 }), true, 204 * time.Millisecond, false},
		// Two losses wait 204 + 408 ms, more than the request was on the
		// wire: the stall is its time on the wire.
		{"backoff, at most the time on the wire", with(func(s *prober.NetworkSample) { s.Retrans = 2 }), true, 250 * time.Millisecond, false},
		{"the kernel's own time in recovery", with(func(s *prober.NetworkSample) {
			s.Retrans, s.RTOTime, s.TCP.RTO = 1, 230*time.Millisecond, 201*time.Millisecond
		}), true, 230 * time.Millisecond, false},
		{"many retransmissions do not overflow", with(func(s *prober.NetworkSample) { s.Retrans = 1 << 31 }), true, 250 * time.Millisecond, false},
		// A queue on the path: the round trip held at 8 ms over a 20 µs
		// minimum, its deviation small.
		{"a round trip that rose and held", with(func(s *prober.NetworkSample) {
			s.TCP.RTT, s.TCP.RTTVar = 8*time.Millisecond, time.Millisecond
		}), true, 8*time.Millisecond - 20*time.Microsecond, true},
		// A bulk flow's queue comes and goes (the deviation over the
		// rise), but the round trip was up before this request: 40 ms
		// after a 60 ms request, 37 ms before it.
		{"a queue that comes and goes", with(func(s *prober.NetworkSample) {
			s.To = from.Add(60 * time.Millisecond)
			s.TCP.RTT, s.TCP.RTTVar = 40*time.Millisecond, 50*time.Millisecond
		}), true, 40*time.Millisecond - 20*time.Microsecond, true},
		{"a rise at most the time on the wire", with(func(s *prober.NetworkSample) {
			s.To = from.Add(20 * time.Millisecond)
			s.TCP.RTT, s.TCP.RTTVar = 40*time.Millisecond, time.Millisecond
		}), true, 20 * time.Millisecond, true},
		// One late reply (a server stall): the smoothed round trip rose
		// by an eighth of it, its deviation by more.
		{"one late reply", with(func(s *prober.NetworkSample) {
			s.TCP.RTT, s.TCP.RTTVar = 5*time.Millisecond, 10*time.Millisecond
		}), false, 0, false},
		// A reply 60 ms late after a quiet run: the round trip rose by
		// 7.5 ms, over half the threshold, but was not up before it.
		{"one late reply over half the threshold", with(func(s *prober.NetworkSample) {
			s.To = from.Add(60 * time.Millisecond)
			s.TCP.RTT, s.TCP.RTTVar = 7560*time.Microsecond, 15*time.Millisecond
		}), false, 0, false},
		{"a rise under half the threshold", with(func(s *prober.NetworkSample) {
			s.TCP.RTT, s.TCP.RTTVar = 3*time.Millisecond, 100*time.Microsecond
		}), false, 0, false},
		// A remote node 4 ms away whose round trip is 6 ms: not doubled.
		{"a rise under the path's own round trip", with(func(s *prober.NetworkSample) {
			s.TCP.MinRTT, s.TCP.RTT, s.TCP.RTTVar = 4*time.Millisecond, 7*time.Millisecond, 100*time.Microsecond
		}), false, 0, false},
		{"no min_rtt (an old kernel)", with(func(s *prober.NetworkSample) {
			s.TCP.MinRTT, s.TCP.RTT, s.TCP.RTTVar = 0, 8*time.Millisecond, time.Millisecond
		}), false, 0, false},
		{"no time on the wire", with(func(s *prober.NetworkSample) { s.To, s.Retrans = from, 1 }), false, 0, false},
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
			if e.Dur != tc.dur || e.Rise != tc.rise {
				t.Errorf("stall %v (rise %v), want %v (rise %v)", e.Dur, e.Rise, tc.dur, tc.rise)
			}
		})
	}
}

// The tap puts network evidence on the node's timeline, and a slow request
// that waited on a retransmission is attributed to the network.
func TestTapRecordNetwork(t *testing.T) {
	t.Parallel()
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
