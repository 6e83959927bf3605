package prober

import (
	"time"

	"github.com/redis-prober/redis-prober/wire"
)

// NetworkSample is the kernel's view of a probe connection's round trip
// (TCP_INFO) just after one of its requests, for the attribution of slow
// requests (explain's network cause). Every TCP probe connection gives
// one, on the Poller's loop or on a goroutine of its own (TLS), and only
// after a request that was long on the wire (see netTrack): a
// retransmission costs a request at least the kernel's 200 ms
// retransmission timeout, so none is missed, and a healthy node is not
// read at all. A unix socket has no TCP_INFO, and gives none.
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

// networkFloor is the least time on the wire after which a request's
// connection has its TCP_INFO read: explain's threshold never goes under
// it (explain.MinThreshold), so a faster request is never one it
// attributes. A lost segment costs a request the retransmission timeout,
// 200 ms at the least, so no retransmission goes unread.
const networkFloor = time.Millisecond

// netTrack is one probe connection's TCP_INFO as last read, and the rule
// of when it is read again: after a request long on the wire (at least
// networkFloor, and twice the path's own minimum round trip, so a remote
// node whose every request takes a millisecond is not read on each). A
// read is one system call (wire.TCPInfo): a healthy node pays
// nothing, a node in trouble one read a slow request. The Poller's loop
// and a worker on its own goroutine (TLS) both follow it; a unix socket
// has no TCP_INFO and is never read.
type netTrack struct {
	tcp wire.TCPStats
	ok  bool // the baseline was read: a socket without TCP_INFO never is
}

// tcpInfoFunc reads a connection's TCP_INFO (by its descriptor on the
// loop, through syscall.RawConn on a goroutine); false when it cannot.
type tcpInfoFunc func() (wire.TCPStats, bool)

// begin reads the baseline the retransmissions of the connection's
// requests are counted from.
func (t *netTrack) begin(read tcpInfoFunc) { t.tcp, t.ok = read() }

// after is the sample of a request on the wire from from to to, if the
// rule reads TCP_INFO after it: what moved since the last read.
func (t *netTrack) after(from, to time.Time, read tcpInfoFunc) (NetworkSample, bool) {
	if !t.ok || from.IsZero() || to.Sub(from) < max(networkFloor, 2*t.tcp.MinRTT) {
		return NetworkSample{}, false
	}
	st, ok := read()
	if !ok {
		return NetworkSample{}, false
	}
	s := NetworkSample{From: from, To: to, TCP: st}
	if st.TotalRetrans >= t.tcp.TotalRetrans {
		s.Retrans = st.TotalRetrans - t.tcp.TotalRetrans
	}
	if st.RTOTime >= t.tcp.RTOTime {
		s.RTOTime = st.RTOTime - t.tcp.RTOTime
	}
	t.tcp = st
	return s, true
}

// onWire is a request's time on the wire: its kernel TX stamp (else its
// write) to the RX stamp of its reply (else end: its read, or the moment
// it was given up).
func onWire(ex wire.Exchange, end time.Time) (from, to time.Time) {
	from, to = ex.WriteAt, end
	if ex.TX {
		from = ex.TXWall
	}
	if ex.RX {
		to = ex.RXWall
	}
	return from, to
}

// readTCPInfo is wire.TCPInfo with its failure as false: a connection whose
// TCP_INFO cannot be read only gives no network evidence.
func readTCPInfo(fd int) (wire.TCPStats, bool) {
	st, err := wire.TCPInfo(fd)
	return st, err == nil
}

// RecordNetwork exports nothing: the round trip is evidence for the
// attribution (explain), whose counters say what it explained.
func (r *TargetRecorder) RecordNetwork(NetworkSample) {}
