package wire

import "time"

// TCPStats is what attribution needs of a connection's TCP_INFO: the
// kernel's own view of its round trip and of the segments it had to send
// again. A field the running kernel does not report is zero.
type TCPStats struct {
	// RTT is the smoothed round-trip time (tcpi_rtt), RTTVar its mean
	// deviation (tcpi_rttvar). The kernel takes an RTT sample from each
	// ACK of new data; a server that replies late (the ACK rides on its
	// reply, up to its delayed-ACK timeout) lengthens the sample too.
	RTT, RTTVar time.Duration
	// MinRTT is the smallest RTT seen over the last five minutes or so
	// (tcpi_min_rtt, Linux 4.6+): the path's own round trip.
	MinRTT time.Duration
	// RTO is the retransmission timeout in force (tcpi_rto): at least
	// 200 ms on Linux, which is what a lost segment costs at the least.
	RTO time.Duration
	// TotalRetrans counts the segments retransmitted over the
	// connection's life (tcpi_total_retrans); Retrans those not yet
	// acknowledged (tcpi_retrans); Lost those the kernel deems lost
	// (tcpi_lost).
	TotalRetrans, Retrans, Lost uint32
	// RTOTime is the time spent in retransmission-timeout recoveries over
	// the connection's life (tcpi_total_rto_time, Linux 6.7+); 0 before.
	RTOTime time.Duration
}
