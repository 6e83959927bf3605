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
//     threshold at least, and at least doubled) that held over several
//     round trips (its mean deviation is under the rise) is a state: the
//     kernel takes an RTT sample from the ACK that rides on the server's
//     reply, so a server that replies late lengthens the samples too, and
//     a rise names the network only when nothing on the server does.
//     One late reply leaves a deviation larger than the rise; a queue on
//     the path keeps the round trip up, and the deviation falls.
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
	rise := s.TCP.RTT - s.TCP.MinRTT
	if s.TCP.MinRTT > 0 && rise >= max(threshold/2, s.TCP.MinRTT) && s.TCP.RTTVar < rise {
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
