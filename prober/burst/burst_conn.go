package burst

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/redis-prober/redis-prober/internal/resp"
	"github.com/redis-prober/redis-prober/prober"
)

// burstConn is one burst connection: an ordinary (netpoller) socket that
// speaks just enough RESP2 to pipeline the burst's commands without
// allocating per request. go-redis, which the control path uses, spends
// more per command than Redis itself on a pipelined GET (see
// docs/performance.md, "Bursts"); a load generator has to stay cheaper than
// the server it loads.
type burstConn struct {
	c       net.Conn
	r       *bufio.Reader
	w       []byte
	timeout time.Duration
}

// errorReply is a Redis error reply: Redis answered.
type errorReply string

func (e errorReply) Error() string { return string(e) }

// dialBurst opens and authenticates one burst connection. register is
// called with the raw socket before anything is sent, so an abort can close
// it from another goroutine.
func dialBurst(ctx context.Context, ep prober.Endpoint, timeout time.Duration, lim resp.Limits, register func(net.Conn) error) (*burstConn, error) {
	d := net.Dialer{Timeout: timeout, KeepAlive: -1}
	raw, err := d.DialContext(ctx, ep.Network, ep.Addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", ep.String(), err)
	}
	if tc, ok := raw.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	if err := register(raw); err != nil {
		raw.Close()
		return nil, err
	}
	var c net.Conn = raw
	if ep.TLS != nil {
		c = ep.TLSClient(raw)
	}
	// The codec below trusts lengths no more than go-redis does: the guard
	// has refused any header over lim before the codec reads it.
	c = prober.GuardConn(c, lim)
	bc := &burstConn{c: c, r: bufio.NewReaderSize(c, 64<<10), timeout: timeout}
	// Never format the password into an error: only the reply is shown.
	if ep.Password != "" {
		if ep.Username != "" {
			bc.w = appendCommand(bc.w, "AUTH", ep.Username, ep.Password)
		} else {
			bc.w = appendCommand(bc.w, "AUTH", ep.Password)
		}
		if err := bc.roundTrip(); err != nil {
			bc.Close()
			return nil, fmt.Errorf("AUTH: %w", err)
		}
	}
	if ep.DB != 0 {
		bc.w = appendCommand(bc.w, "SELECT", strconv.Itoa(ep.DB))
		if err := bc.roundTrip(); err != nil {
			bc.Close()
			return nil, fmt.Errorf("SELECT: %w", err)
		}
	}
	if ep.ReadOnly {
		// A Cluster replica then serves reads of its primary's slots.
		bc.w = appendCommand(bc.w, "READONLY")
		if err := bc.roundTrip(); err != nil {
			bc.Close()
			return nil, fmt.Errorf("READONLY: %w", err)
		}
	}
	// Named, so CLIENT LIST tells burst connections from the application's.
	bc.w = appendCommand(bc.w, "CLIENT", "SETNAME", "redis-prober-burst")
	if err := bc.roundTrip(); err != nil {
		var er errorReply
		if !errors.As(err, &er) {
			bc.Close()
			return nil, fmt.Errorf("CLIENT SETNAME: %w", err)
		}
	}
	return bc, nil
}

func (bc *burstConn) Close() error { return bc.c.Close() }

// roundTrip sends what is buffered and reads one reply.
func (bc *burstConn) roundTrip() error {
	if err := bc.flush(); err != nil {
		return err
	}
	_, _, err := bc.read()
	return err
}

// flush writes the buffered requests and arms the read deadline for their
// replies.
func (bc *burstConn) flush() error {
	deadline := time.Now().Add(bc.timeout)
	_ = bc.c.SetDeadline(deadline)
	_, err := bc.c.Write(bc.w)
	bc.w = bc.w[:0]
	return err
}

// read reads one reply. n is the integer, the bulk length (-1 for nil) or
// the array length; nils is how many nil bulks a top-level array held.
// Nested aggregates are skipped with a counter, not by recursion: the guard
// bounds their depth, and the codec does not rely on it.
func (bc *burstConn) read() (n int64, nils int64, err error) {
	n, isArray, err := bc.element()
	if err != nil || !isArray || n <= 0 {
		return n, 0, err
	}
	// Elements arrive depth first, so the elements of nested arrays still
	// to come (inner) are all read before the next top-level one.
	var inner int64
	for topLeft := n; topLeft > 0 || inner > 0; {
		m, nested, err := bc.element()
		var er errorReply
		if err != nil && !errors.As(err, &er) {
			return n, nils, err
		}
		if inner > 0 {
			inner--
		} else {
			topLeft--
			if !nested && m < 0 {
				nils++
			}
		}
		if nested && m > 0 {
			inner += m
		}
	}
	return n, nils, nil
}

// element reads one reply header and, for a scalar, its payload. For an
// array it returns its length with isArray set; the elements follow.
func (bc *burstConn) element() (n int64, isArray bool, err error) {
	line, err := bc.line()
	if err != nil {
		return 0, false, err
	}
	switch line[0] {
	case '+':
		return 0, false, nil
	case '-':
		return 0, false, errorReply(line[1:])
	case ':':
		n, err := parseInt(line[1:])
		return n, false, err
	case '$':
		n, err := parseInt(line[1:])
		if err != nil || n < 0 {
			return -1, false, err
		}
		_, err = bc.r.Discard(int(n) + 2)
		return n, false, err
	case '*':
		n, err := parseInt(line[1:])
		if err != nil || n < 0 {
			return -1, true, err
		}
		return n, true, nil
	}
	return 0, false, fmt.Errorf("unexpected reply type %q", line[0])
}

// line returns one reply line without its CRLF. The slice is only valid
// until the next read.
func (bc *burstConn) line() ([]byte, error) {
	line, err := bc.r.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("malformed reply line")
	}
	return line[:len(line)-2], nil
}

func parseInt(b []byte) (int64, error) {
	if len(b) == 0 {
		return 0, fmt.Errorf("empty number in reply")
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("bad number in reply")
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, nil
}

// appendCommand encodes a command of string arguments (handshake only).
func appendCommand(b []byte, args ...string) []byte {
	b = appendHeader(b, '*', len(args))
	for _, a := range args {
		b = appendHeader(b, '$', len(a))
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}

func appendHeader(b []byte, kind byte, n int) []byte {
	b = append(b, kind)
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

func appendBulk(b, v []byte) []byte {
	b = appendHeader(b, '$', len(v))
	b = append(b, v...)
	return append(b, '\r', '\n')
}

// bulkString pre-encodes a constant argument.
func bulkString(s string) []byte { return appendBulk(nil, []byte(s)) }
