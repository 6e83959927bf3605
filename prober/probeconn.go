package prober

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis-prober/redis-prober/internal/resp"
)

// probeConn is one probe connection: the probe's commands, encoded once,
// sent one at a time over a wireConn and their replies read by the RESP
// codec. The probe speaks RESP2 itself rather than through go-redis: at a
// thousand targets go-redis's pool, hooks and per-call deadlines cost more
// of a core than the requests (see docs/scaling.md), and a probe needs
// none of them.
type probeConn struct {
	wire *wireConn
	r    *resp.Reader
}

// probeReadBuffer is the reply buffer of one probe connection: probe
// replies are small, and a longer one streams through it.
const probeReadBuffer = 1024

// openProbeConn dials the endpoint and readies the connection
// (Handshake). Stamped asks the
// kernel to timestamp the socket's traffic; stampErr says why it could
// not (the connection works all the same). The handshake must be done by
// deadline. An error the server replied with comes back as resp.ErrorReply
// itself, never wrapped around the password.
func (e Endpoint) openProbeConn(ctx context.Context, timeout time.Duration, deadline time.Time, stamped bool) (pc *probeConn, stampErr, err error) {
	c, stampErr, err := e.dialWire(ctx, timeout, resp.Probe, stamped)
	if err != nil {
		return nil, nil, err
	}
	pc = &probeConn{wire: c, r: resp.NewReader(c, probeReadBuffer)}
	// A stop during the handshake wakes it, as it wakes a request.
	stop := context.AfterFunc(ctx, c.Interrupt)
	defer stop()
	// The probe reports the server's own words (WRONGPASS ...), unwrapped.
	if _, err := e.Handshake(func(req []byte) error { return pc.exchange(req, deadline) }); err != nil {
		_ = c.Close()
		return nil, stampErr, err
	}
	return pc, stampErr, nil
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
	_ = pc.wire.SetDeadline(deadline)
	if _, err := pc.wire.Write(req); err != nil {
		return err
	}
	_, _, err := pc.r.Reply()
	return err
}

func (pc *probeConn) Close() error { return pc.wire.Close() }

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
