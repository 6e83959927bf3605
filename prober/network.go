package prober

import (
	"time"

	"github.com/redis-prober/redis-prober/wire"
)

// NetworkSample is the kernel's view of a probe connection's round trip
// (TCP_INFO) just after one of its requests, for the attribution of slow
// requests (explain's network cause). Only the Poller's connections give
// one, and only after a request that was long on the wire (see
// networkFloor): a retransmission costs a request at least the kernel's
// 200 ms retransmission timeout, so none is missed, and a healthy node is
// not read at all.
type NetworkSample struct {
	// From and To are the request's time on the wire, on the wall clock:
	// its kernel TX stamp (else its write) to the RX stamp of its reply
	// (else its read, or the moment it was given up).
	From, To time.Time
	// Retrans is how many segments the connection retransmitted since its
	// previous sample (or since the loop took it over): within this
	// request, since every earlier retransmission made its own request
	// long enough to be sampled.
	Retrans uint32
	// RTOTime is the time the connection spent in retransmission-timeout
	// recovery over the same span (Linux 6.7+; 0 before).
	RTOTime time.Duration
	// TCP is the connection's TCP_INFO as read.
	TCP wire.TCPStats
}

// RecordNetwork exports nothing: the round trip is evidence for the
// attribution (explain), whose counters say what it explained.
func (r *TargetRecorder) RecordNetwork(NetworkSample) {}
