//go:build linux

package wire

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/redistest"
	"golang.org/x/sys/unix"
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
	s, err := NewStamping().Stamp(raw)
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

// TestReadNow: what has come, nothing yet, a closed stream and a failed
// read, each as ReadNow says it, on a real loopback TCP connection.
func TestReadNow(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := client.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var m MsgBuf
	buf, oob := make([]byte, 64), make([]byte, 512)
	read := func() (n int, ok bool, err error) {
		if cerr := raw.Control(func(fd uintptr) { n, _, ok, err = m.ReadNow(fd, buf, oob, client.RemoteAddr()) }); cerr != nil {
			t.Fatal(cerr)
		}
		return n, ok, err
	}
	if n, ok, err := read(); ok || err != nil || n != 0 {
		t.Errorf("nothing sent: %d bytes, ok %v, %v; want nothing yet", n, ok, err)
	}
	if _, err := server.Write([]byte("+PONG\r\n")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, ok, err := read()
		if err != nil || (ok && string(buf[:n]) != "+PONG\r\n") {
			t.Fatalf("read %q, ok %v, %v", buf[:n], ok, err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the reply never came")
		}
		time.Sleep(time.Millisecond)
	}
	// A reset (linger 0) is a failed read; a close with nothing left is EOF.
	_ = server.(*net.TCPConn).SetLinger(0)
	server.Close()
	for {
		_, ok, err := read()
		if err != nil {
			var op *net.OpError
			if !errors.As(err, &op) || op.Op != "read" || op.Addr.String() != client.RemoteAddr().String() {
				t.Errorf("after a reset: %v, want a read *net.OpError naming the server", err)
			}
			break
		}
		if ok || time.Now().After(deadline) {
			t.Fatalf("after a reset: ok %v, no error", ok)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestReadNowEOF: a stream the other end closed is io.EOF.
func TestReadNowEOF(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	unix.Close(fds[1])
	var m MsgBuf
	n, _, ok, err := m.ReadNow(uintptr(fds[0]), make([]byte, 8), make([]byte, 64), nil)
	if !errors.Is(err, io.EOF) || ok || n != 0 {
		t.Errorf("closed stream: %d bytes, ok %v, %v; want io.EOF", n, ok, err)
	}
}
