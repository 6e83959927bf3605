//go:build linux

package wire

import (
	"io"
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

// echoPair is a loopback TCP connection to an echo server, and the dup of
// its descriptor the tests read TCP_INFO of (as the probe's loop holds one).
func echoPair(t testing.TB) (net.Conn, int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(c, c)
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	fd, err := Dup(c.(*net.TCPConn))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Close(fd) })
	return c, fd
}

func TestTCPInfo(t *testing.T) {
	c, fd := echoPair(t)
	buf := make([]byte, 4)
	for range 10 {
		if _, err := c.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
	}
	st, err := TCPInfo(fd)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", st)
	// Every field the attribution reads, as loopback gives it: a round
	// trip measured, the path's minimum under it, the 200 ms floor of the
	// timeout, nothing retransmitted.
	if st.RTT <= 0 || st.MinRTT <= 0 || st.MinRTT > st.RTT+st.RTTVar {
		t.Errorf("rtt %v, min_rtt %v, rttvar %v: want a measured round trip over its minimum", st.RTT, st.MinRTT, st.RTTVar)
	}
	if st.RTO < 200e6 {
		t.Errorf("rto %v: Linux's floor is 200 ms", st.RTO)
	}
	if st.TotalRetrans != 0 || st.Retrans != 0 || st.Lost != 0 || st.RTOTime != 0 {
		t.Errorf("retransmissions on loopback: %+v", st)
	}
}

func TestTCPInfoNotASocket(t *testing.T) {
	if _, err := TCPInfo(-1); err == nil {
		t.Error("TCP_INFO of fd -1 did not fail")
	}
}

// BenchmarkTCPInfo is the cost the probe's loop pays for each read: one
// getsockopt(2) on an idle connection.
func BenchmarkTCPInfo(b *testing.B) {
	_, fd := echoPair(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := TCPInfo(fd); err != nil {
			b.Fatal(err)
		}
	}
}
