//go:build linux

package wire

import (
	"net"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/redistest"
)

// awaitRXStamp repeats exchange on s until a reply carries an RX stamp.
// The kernel turns receive stamping on for the whole host in a deferred
// work item when the first socket asks (netstamp_needed), and off again the
// same way when the last one closes, so the first replies on a new socket
// may carry none. A busy host runs that work item late, so the wait is
// bounded by time (and a count), not by a few replies.
func awaitRXStamp(t *testing.T, s *StampedConn, exchange func() error) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for i := 0; !s.Last().RX; i++ {
		if i >= 100_000 || time.Now().After(deadline) {
			t.Fatalf("no RX stamp on %d replies in 15 s", i)
		}
		if err := exchange(); err != nil {
			t.Fatal(err)
		}
	}
}

// A stamp left on the error queue by an earlier write (here: one written
// past the stamping code, so nobody drained it) must not be taken for the
// next request's departure: stamps are matched by their key.
func TestStaleTXStampNotMatched(t *testing.T) {
	srv := redistest.Start(t)
	raw, err := net.DialTimeout("tcp", srv.Addr(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Stamp(raw)
	if err != nil {
		raw.Close()
		t.Fatal(err)
	}
	defer s.Close()
	c := s
	ping := []byte("*1\r\n$4\r\nPING\r\n")
	buf := make([]byte, 64)
	readPong := func() {
		for got := 0; got < len("+PONG\r\n"); {
			n, err := c.Read(buf[got:])
			if err != nil {
				t.Fatal(err)
			}
			got += n
		}
	}
	awaitRXStamp(t, c, func() error {
		if _, err := c.Write(ping); err != nil {
			return err
		}
		readPong()
		return nil
	})
	for range 3 {
		// The earlier request: sent beneath StampedConn.Write, its stamp
		// stays queued, and its bytes still count in the key space.
		if _, err := s.TCPConn.Write(ping); err != nil {
			t.Fatal(err)
		}
		s.sent += uint32(len(ping))
		readPong()
		time.Sleep(2 * time.Millisecond)
		if _, err := c.Write(ping); err != nil {
			t.Fatal(err)
		}
		readPong()
		ex := s.Last()
		if !ex.TX || !ex.RX {
			t.Fatalf("stamps missing: %+v", ex)
		}
		if ex.TXWall.Before(ex.WriteAt.Round(0)) {
			t.Fatalf("TX stamp %v is %v before the write it was matched to: a stale stamp",
				ex.TXWall, ex.WriteAt.Round(0).Sub(ex.TXWall))
		}
		if ex.RXWall.Before(ex.TXWall) {
			t.Fatalf("reply stamped %v before the request left", ex.TXWall.Sub(ex.RXWall))
		}
	}
}
