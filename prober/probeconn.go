package prober

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/redis-prober/redis-prober/internal/resp"
	"github.com/redis-prober/redis-prober/wire"
)

// probeConn is one probe connection: the probe's commands, encoded once,
// sent one at a time over a guardedConn and their replies read by the RESP
// codec. The probe speaks RESP2 itself rather than through go-redis: at a
// thousand targets go-redis's pool, hooks and per-call deadlines cost more
// of a core than the requests (see docs/scaling.md), and a probe needs
// none of them.
type probeConn struct {
	conn *guardedConn
	r    *resp.Reader
	// tcp is the TCP socket beneath the stream (under TLS too), for its
	// TCP_INFO on a goroutine (network); nil for a unix socket, which has
	// none. net is that TCP_INFO as last read.
	tcp syscall.RawConn
	net netTrack
}

// probeReadBuffer is the reply buffer of one probe connection: probe
// replies are small, and a longer one streams through it.
const probeReadBuffer = 1024

// openProbeConn dials the endpoint and readies the connection
// (Handshake). stamps, when set, asks the
// kernel to timestamp the socket's traffic; stampErr says why it could
// not (the connection works all the same). The handshake must be done by
// deadline. An error the server replied with comes back as resp.ErrorReply
// itself, never wrapped around the password.
func (e Endpoint) openProbeConn(ctx context.Context, timeout time.Duration, deadline time.Time, stamps *wire.Stamping) (pc *probeConn, stampErr, err error) {
	c, stampErr, err := e.dialWire(ctx, timeout, resp.Probe, stamps)
	if err != nil {
		return nil, nil, err
	}
	pc = &probeConn{conn: c, r: resp.NewReader(c, probeReadBuffer)}
	// A stop during the handshake wakes it, as it wakes a request.
	stop := context.AfterFunc(ctx, c.Interrupt)
	defer stop()
	// The probe reports the server's own words (WRONGPASS ...), unwrapped.
	if _, err := e.Handshake(func(req []byte) error { return pc.exchange(req, deadline) }); err != nil {
		_ = c.Close()
		return nil, stampErr, err
	}
	if pc.tcp = tcpSocket(c.Conn); pc.tcp != nil {
		pc.net.begin(pc.tcpInfo)
	}
	return pc, stampErr, nil
}

// tcpSocket is the TCP socket beneath a probe connection's stream (a TLS
// connection over a stamped or a plain socket, or the socket itself); nil
// when there is none (a unix socket) or it cannot be reached.
func tcpSocket(c net.Conn) syscall.RawConn {
	if tc, ok := c.(interface{ NetConn() net.Conn }); ok { // *tls.Conn
		c = tc.NetConn()
	}
	if _, ok := c.LocalAddr().(*net.TCPAddr); !ok {
		return nil
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// tcpInfo reads the TCP_INFO of the socket beneath the stream.
func (pc *probeConn) tcpInfo() (st wire.TCPStats, ok bool) {
	err := pc.tcp.Control(func(fd uintptr) { st, ok = readTCPInfo(int(fd)) })
	return st, ok && err == nil
}

// network is the network sample of a request of a connection on a
// goroutine of its own (TLS), by the rule the Poller's loop follows for
// its own (netTrack): ex holds the request's kernel stamps, end is when it
// ended. A unix socket gives none.
func (pc *probeConn) network(ex wire.Exchange, end time.Time) (NetworkSample, bool) {
	if pc.tcp == nil {
		return NetworkSample{}, false
	}
	from, to := onWire(ex, end)
	return pc.net.after(from, to, pc.tcpInfo)
}

// Handshake readies a new connection as every Redis client does: AUTH when
// there is a password, SELECT when the database is not 0, READONLY for a
// Cluster replica (it then serves reads of its primary's slots). roundTrip
// sends one encoded request and reads its reply. A failure says which step
// it was; neither the error nor any buffer left behind holds the password.
// The probe and the burst connections both open this way.
func (e Endpoint) Handshake(roundTrip func(req []byte) error) (step string, err error) {
	var req []byte
	defer func() { clear(req) }()
	if e.Password != "" {
		if e.Username != "" {
			req = resp.AppendCommand(req[:0], "AUTH", e.Username, e.Password)
		} else {
			req = resp.AppendCommand(req[:0], "AUTH", e.Password)
		}
		if err := roundTrip(req); err != nil {
			return "AUTH", err
		}
	}
	if e.DB != 0 {
		req = resp.AppendCommand(req[:0], "SELECT", strconv.Itoa(e.DB))
		if err := roundTrip(req); err != nil {
			return "SELECT", err
		}
	}
	if e.ReadOnly {
		req = resp.AppendCommand(req[:0], "READONLY")
		if err := roundTrip(req); err != nil {
			return "READONLY", err
		}
	}
	return "", nil
}

// exchange sends one encoded request and reads its reply, all by deadline.
func (pc *probeConn) exchange(req []byte, deadline time.Time) error {
	_ = pc.conn.SetDeadline(deadline)
	if _, err := pc.conn.Write(req); err != nil {
		return err
	}
	_, _, err := pc.r.Reply()
	return err
}

func (pc *probeConn) Close() error { return pc.conn.Close() }

// encodeArgs encodes one command of a template's arguments (strings and
// integers).
func encodeArgs(args []any) []byte {
	b := resp.AppendHeader(nil, '*', len(args))
	for _, a := range args {
		var s string
		switch v := a.(type) {
		case string:
			s = v
		case int:
			s = strconv.Itoa(v)
		case int64:
			s = strconv.FormatInt(v, 10)
		default:
			s = fmt.Sprint(v)
		}
		b = resp.AppendBulk(b, []byte(s))
	}
	return b
}
