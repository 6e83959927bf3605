package prober

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis-prober/redis-prober/internal/resp"
	"github.com/redis-prober/redis-prober/internal/safetext"
	"github.com/redis-prober/redis-prober/wire"
)

// guardedConn is every connection the prober opens to Redis, beneath go-redis
// or the burst codec: the one place where what crosses the wire is checked
// and timed.
//
//   - Its stream is the server's plaintext RESP (the socket itself, or TLS
//     over it), and a resp.Guard checks every byte read before the client
//     library parses it: a reply that claims more than the connection's
//     limits fails the connection with an error naming the limit, instead
//     of an allocation of whatever size the server asked for (go-redis
//     v9.23, the newest, trusts every length header).
//   - On a probe connection over TCP, stamps is the socket itself with the
//     kernel's timestamps of each write and read (beneath TLS when there is
//     TLS): see stampConn and wireTiming.
//   - limit caps every deadline go-redis sets: the probe's own "this
//     request is charged from here and times out then", which go-redis
//     cannot express per call without a context allocation.
type guardedConn struct {
	net.Conn
	guard       *resp.Guard
	stamps      *wire.StampedConn
	limit       time.Time
	interrupted atomic.Bool
	// lastErr is the error reply the last read began with, if any: go-redis
	// sends HELLO when it opens a connection and takes any error for "an
	// old server", so a refusal (-DENIED) is read there and dropped, and
	// the request after it meets a broken pipe.
	lastErr string
}

var _ net.Conn = (*guardedConn)(nil)

// GuardConn wraps c so that every byte read from it is checked against lim
// (lengths, counts, nesting, line length): a reply that breaks a bound
// fails that connection with a clear error. Burst connections use it too;
// the guard is returned for a loop that takes the socket over and goes on
// feeding it.
func GuardConn(c net.Conn, lim resp.Limits) (net.Conn, *resp.Guard) {
	g := guard(c, lim)
	return g, g.guard
}

func guard(c net.Conn, lim resp.Limits) *guardedConn {
	return &guardedConn{Conn: c, guard: resp.New(lim)}
}

func (c *guardedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	err = withoutSource(err)
	if n > 0 {
		if gerr := c.guard.Feed(b[:n]); gerr != nil {
			// The stream is no longer in step: nothing more is read
			// from it, and the client library drops the connection on
			// this error.
			_ = c.Conn.Close()
			return 0, gerr
		}
		c.lastErr = ""
		if b[0] == '-' {
			c.lastErr = errorLine(b[:n])
		}
	}
	return n, err
}

// Write reports, when the server hung up on the request, what it said
// first if it said anything: Redis refuses a client (protected mode's
// -DENIED, -ERR max number of clients reached) by writing an error reply
// and closing, so the client's write fails with a broken pipe or a reset
// while Redis's own words wait unread in the socket.
func (c *guardedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if err != nil {
		err = withoutSource(err)
		said := c.lastWords()
		if said == "" {
			said = c.lastErr
		}
		if said != "" {
			return n, &ServerRefusal{Reply: said, Err: err}
		}
	}
	return n, err
}

// withoutSource drops the local address from a socket error: it names a
// new ephemeral port on every connection, so a fault that goes on (timeouts
// on each reconnect) would read as a new error each time and defeat the
// fault log's "each distinct error once".
func withoutSource(err error) error {
	if err == nil {
		return nil // before oe, which escapes: the success path allocates nothing
	}
	return sourceless(err)
}

func sourceless(err error) error {
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Source == nil {
		return err
	}
	op := oe.Op
	if op == "raw-read" {
		op = "read"
	} else if op == "raw-write" {
		op = "write"
	}
	return &net.OpError{Op: op, Net: oe.Net, Addr: oe.Addr, Err: oe.Err}
}

// maxLastWords bounds the refusal read after a failed write: one error
// line, as Redis writes it.
const maxLastWords = 512

// lastWords reads, briefly, an error line the server left before hanging
// up. It reads beneath the guard on purpose: the connection is done, and
// only one bounded line is taken from it.
func (c *guardedConn) lastWords() string {
	_ = c.Conn.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	var buf [maxLastWords]byte
	n, _ := io.ReadAtLeast(c.Conn, buf[:], 1)
	return errorLine(buf[:n])
}

// errorLine is the text of the error reply p begins with ("" if none),
// bounded and safe to print.
func errorLine(p []byte) string {
	p = p[:min(len(p), maxLastWords)]
	line, _, ok := strings.Cut(string(p), "\r\n")
	if !ok || len(line) < 2 || line[0] != '-' {
		return ""
	}
	return safetext.Printable(line[1:])
}

// ServerRefusal is an error reply the server wrote before it closed the
// connection on a request: Redis answered, with the reason in Reply. It is
// deliberately not a redis.Error, so go-redis drops the connection (a
// Redis error reply would put it back in the pool, dead).
type ServerRefusal struct {
	Reply string
	Err   error // the failed write
}

func (e *ServerRefusal) Error() string { return e.Reply }
func (e *ServerRefusal) Unwrap() error { return e.Err }

// pastDeadline is a deadline long gone, to wake a blocked read or write.
var pastDeadline = time.Unix(1, 0)

func (c *guardedConn) capped(t time.Time) time.Time {
	if c.interrupted.Load() {
		return pastDeadline
	}
	if !c.limit.IsZero() && (t.IsZero() || c.limit.Before(t)) {
		return c.limit
	}
	return t
}

func (c *guardedConn) SetDeadline(t time.Time) error { return c.Conn.SetDeadline(c.capped(t)) }
func (c *guardedConn) SetReadDeadline(t time.Time) error {
	return c.Conn.SetReadDeadline(c.capped(t))
}
func (c *guardedConn) SetWriteDeadline(t time.Time) error {
	return c.Conn.SetWriteDeadline(c.capped(t))
}

// Interrupt wakes a request blocked on this connection from another
// goroutine (a stop), and keeps every later deadline in the past.
func (c *guardedConn) Interrupt() {
	c.interrupted.Store(true)
	_ = c.Conn.SetDeadline(pastDeadline)
}

// Clock tells which clock this connection's requests are timed by.
func (c *guardedConn) Clock() wire.Clock {
	if c.stamps != nil {
		return wire.ClockKernel
	}
	return wire.ClockUser
}

// TLSClient starts TLS over raw with the endpoint's settings, naming the
// server from its address when the config does not.
func (e Endpoint) TLSClient(raw net.Conn) *tls.Conn {
	cfg := e.TLS.Clone()
	if cfg.ServerName == "" && e.Network != "unix" {
		if host, _, err := net.SplitHostPort(e.Addr); err == nil {
			cfg.ServerName = host
		}
	}
	return tls.Client(raw, cfg)
}

// dialWire opens an ordinary (netpoller) connection to the endpoint, TLS
// when asked, with every reply checked against lim; with stamps set it asks
// the kernel to timestamp the socket's traffic, and says in the returned
// error when it cannot (the connection works all the same).
func (e Endpoint) dialWire(ctx context.Context, timeout time.Duration, lim resp.Limits, stamps *wire.Stamping) (c *guardedConn, stampErr, err error) {
	d := net.Dialer{Timeout: timeout, KeepAlive: -1}
	raw, err := d.DialContext(ctx, e.Network, e.Addr)
	if err != nil {
		return nil, nil, err
	}
	if tc, ok := raw.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	var (
		sc     *wire.StampedConn
		stream = raw
	)
	if stamps != nil {
		if sc, stampErr = stamps.Stamp(raw); stampErr == nil {
			stream = sc
		}
	}
	if e.TLS != nil {
		tc := e.TLSClient(stream)
		hctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if err := tc.HandshakeContext(hctx); err != nil {
			raw.Close()
			return nil, nil, fmt.Errorf("tls handshake with %s: %w", e.Addr, err)
		}
		stream = tc
	}
	c = guard(stream, lim)
	c.stamps = sc
	return c, stampErr, nil
}

// dialGuarded is dialWire for control traffic: bounded, not stamped.
func (e Endpoint) dialGuarded(ctx context.Context, timeout time.Duration, lim resp.Limits) (*guardedConn, error) {
	c, _, err := e.dialWire(ctx, timeout, lim, nil)
	return c, err
}

// checkableConn is a plaintext control connection that lets go-redis peek
// at its socket before reusing it from the pool (syscall.Conn), so an idle
// connection to a server that restarted is dropped instead of failing the
// next command with EOF. Probe connections do not offer it: the check is a
// system call before every request, and a probe that meets a dead
// connection reports what a client would meet.
type checkableConn struct {
	*guardedConn
	sys syscall.Conn
}

func (c checkableConn) SyscallConn() (syscall.RawConn, error) { return c.sys.SyscallConn() }

// GuardedDialer is a go-redis Dialer for the endpoint's control traffic.
func (e Endpoint) GuardedDialer(timeout time.Duration) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, _, _ string) (net.Conn, error) {
		c, err := e.dialGuarded(ctx, timeout, resp.Control)
		if err != nil {
			return nil, err
		}
		if sc, ok := c.Conn.(syscall.Conn); ok {
			return checkableConn{c, sc}, nil
		}
		return c, nil
	}
}
