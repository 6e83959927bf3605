// Package faulttest provides the network faults the redistest harness lacks:
// a TCP listener that accepts and never answers, one that answers with bytes
// that are not RESP, and HTTP clients that are slow to send a request or
// never read the reply. Everything listens on and dials 127.0.0.1 only, and
// every listener is closed (with its connections) when the test ends.
package faulttest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// Listener is a loopback TCP listener that misbehaves as told; Close (called
// at test end) stops it and closes every connection it accepted.
type Listener struct {
	ln       net.Listener
	reply    func(net.Conn)
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	accepted int
	wg       sync.WaitGroup
	closed   bool
}

// Silent accepts connections, reads whatever arrives and never writes a
// byte: the client sees a TCP connection to a server that hangs.
func Silent(t testing.TB) *Listener {
	t.Helper()
	return listen(t, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
}

// Garbage answers every read with bytes that are not RESP (an HTTP status
// line, binary noise, then an unterminated line), so a client fails to parse
// the reply rather than time out.
func Garbage(t testing.TB) *Listener {
	t.Helper()
	return listen(t, func(c net.Conn) {
		buf := make([]byte, 4096)
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
			if _, err := c.Write(garbage); err != nil {
				return
			}
		}
	})
}

// garbage has no valid RESP type byte at the start of a line.
var garbage = []byte("HTTP/1.1 400 Bad Request\r\n\x00\xff\xfe\x01 not redis\r\n?%&")

func listen(t testing.TB, serve func(net.Conn)) *Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("faulttest: listen: %v", err)
	}
	l := &Listener{ln: ln, reply: serve, conns: map[net.Conn]struct{}{}}
	l.wg.Add(1)
	go l.accept()
	t.Cleanup(l.Close)
	return l
}

func (l *Listener) accept() {
	defer l.wg.Done()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			_ = c.Close()
			return
		}
		l.conns[c] = struct{}{}
		l.accepted++
		l.wg.Add(1)
		l.mu.Unlock()
		go func() {
			defer l.wg.Done()
			l.reply(c)
			l.mu.Lock()
			delete(l.conns, c)
			l.mu.Unlock()
			_ = c.Close()
		}()
	}
}

// Addr is host:port of the listener.
func (l *Listener) Addr() string { return l.ln.Addr().String() }

// URL is the redis:// URL of the listener.
func (l *Listener) URL() string { return "redis://" + l.Addr() }

// Accepted counts the connections accepted so far.
func (l *Listener) Accepted() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.accepted
}

// Open counts the connections still open.
func (l *Listener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// Close stops accepting, closes every connection and waits for the
// goroutines that served them.
func (l *Listener) Close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	_ = l.ln.Close()
	for c := range l.conns {
		_ = c.Close()
	}
	l.mu.Unlock()
	l.wg.Wait()
}

// SlowRequest opens a connection to addr and sends an HTTP GET of path one
// byte every interval, without ever finishing the request if the server
// waits long enough. It returns when the server closes the connection, when
// the whole request is sent and answered, or after limit; the error says
// which (nil when the server cut it off).
func SlowRequest(addr, path string, interval, limit time.Duration) (sent int, err error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	req := []byte("GET " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nX-Slow: ")
	// A header that never ends keeps the request incomplete.
	for i := 0; i < 1<<16; i++ {
		req = append(req, 'a')
	}
	deadline := time.Now().Add(limit)
	_ = c.SetDeadline(deadline)
	for _, b := range req {
		if _, err := c.Write([]byte{b}); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				// Our own limit, reached in a sleep that overslept on
				// a busy host: the server was still waiting.
				return sent, fmt.Errorf("faulttest: the server still waited after %v", limit)
			}
			return sent, nil // the server hung up on us: what we want
		}
		sent++
		if time.Now().Add(interval).After(deadline) {
			return sent, fmt.Errorf("faulttest: the server still waited after %v", limit)
		}
		time.Sleep(interval)
	}
	return sent, errors.New("faulttest: the whole slow request was accepted")
}

// Unread is an HTTP request whose reply is never read: the server fills the
// socket buffers and blocks on its write until its write timeout.
type Unread struct {
	c net.Conn
}

// SendUnread sends a complete GET of path (with a tiny receive buffer) and
// reads nothing back. Close it when done.
func SendUnread(addr, path string) (*Unread, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(1024)
	}
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, addr); err != nil {
		_ = c.Close()
		return nil, err
	}
	return &Unread{c: c}, nil
}

// Close drops the connection.
func (u *Unread) Close() error { return u.c.Close() }
