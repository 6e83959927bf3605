//go:build linux

package wire

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// TCPInfo reads the TCP_INFO of the socket fd: one getsockopt(2) and one
// allocation (BenchmarkTCPInfo; docs/performance.md, "Measured reasons"),
// cheap enough after a slow request, too dear for every request of a
// thousand targets. Fields an older kernel does not
// fill are zero.
func TCPInfo(fd int) (TCPStats, error) {
	ti, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
	if err != nil {
		return TCPStats{}, fmt.Errorf("getsockopt TCP_INFO: %w", err)
	}
	us := func(v uint32) time.Duration { return time.Duration(v) * time.Microsecond }
	return TCPStats{
		RTT:          us(ti.Rtt),
		RTTVar:       us(ti.Rttvar),
		MinRTT:       us(ti.Min_rtt),
		RTO:          us(ti.Rto),
		TotalRetrans: ti.Total_retrans,
		Retrans:      ti.Retrans,
		Lost:         ti.Lost,
		RTOTime:      time.Duration(ti.Total_rto_time) * time.Millisecond,
	}, nil
}
