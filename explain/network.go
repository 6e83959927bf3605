package explain

import (
	"time"

	"github.com/redis-prober/redis-prober/prober"
)

// maxBackoffs bounds the doubling of the retransmission timeout counted
// for one request: past it the stall is the request's time on the wire
// anyway.
const maxBackoffs = 16

// networkEvidence turns the kernel's view of a probe connection after one
// of its requests (TCP_INFO, read by the probe's event loop) into evidence
// over the request's time on the wire, or nothing:
//
//   - a segment retransmitted during the request is a stall: the kernel
//     waited its retransmission timeout (200 ms at the least, doubled at
//     each further loss) before sending it again, so the stall is that
//     wait (or the kernel's own count of the time in recovery, when it
//     has one), never more than the request's time on the wire;
//   - a smoothed round trip well over the path's own minimum (by half the
//     threshold at least, and at least doubled) that held is a rise: its
//     size, at most the request's time on the wire, goes with it. The
//     kernel takes an RTT sample from the ACK that rides on the server's
//     reply, so a server that replies late lengthens the samples too:
//     Decide counts a rise as the network's stall only beyond what the
//     server's own causes could have delayed the request, and as a state
//     otherwise. One late reply is no rise: it moves the smoothed round
//     trip by an eighth of it, and its mean deviation by more. A rise held
//     when its deviation is under it (a steady queue), or when the round
//     trip was up already before this request's own sample (a queue that
//     comes and goes, as a bulk flow's does, keeps the deviation high).
func networkEvidence(s prober.NetworkSample, threshold time.Duration) (Evidence, bool) {
	from, to := s.From.UnixNano(), s.To.UnixNano()
	wire := time.Duration(to - from)
	if wire <= 0 {
		return Evidence{}, false
	}
	e := Evidence{Cause: Network, From: from, To: to}
	if s.Retrans > 0 {
		stall := s.TCP.RTO * time.Duration(uint64(1)<<min(s.Retrans, maxBackoffs)-1)
		e.Dur = min(max(stall, s.RTOTime), wire)
		return e, e.Dur > 0
	}
	if s.TCP.MinRTT <= 0 {
		return Evidence{}, false
	}
	least := max(threshold/2, s.TCP.MinRTT)
	rise := s.TCP.RTT - s.TCP.MinRTT
	// The smoothed round trip before this request's sample (the kernel
	// adds an eighth of each sample's difference): this request took
	// about its time on the wire.
	before := (8*s.TCP.RTT-wire)/7 - s.TCP.MinRTT
	if rise >= least && (s.TCP.RTTVar < rise || before >= least) {
		e.Dur, e.Rise = min(rise, wire), true
		return e, true
	}
	return Evidence{}, false
}

// RecordNetwork takes the kernel's view of a probe connection after a
// request long on the wire. The sample says when the request was on the
// wire, so its evidence goes on the timeline at once, whichever request
// the next Record is (another connection's, on another loop).
func (t tap) RecordNetwork(s prober.NetworkSample) {
	t.Recorder.RecordNetwork(s)
	if e, ok := networkEvidence(s, t.n.Threshold()); ok {
		t.n.addEvidence(e)
	}
}
