package burst

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/redis-prober/redis-prober/internal/resp"
	"github.com/redis-prober/redis-prober/prober"
	"github.com/redis-prober/redis-prober/wire"
)

// burstConn is one burst connection: an ordinary (netpoller) socket that
// speaks just enough RESP2 to pipeline the burst's commands without
// allocating per request. go-redis, which the control path uses, spends
// more per command than Redis itself on a pipelined GET
// (docs/performance.md, "The hand-written parts"); a load generator has to stay cheaper
// than the server it loads.
type burstConn struct {
	c       net.Conn
	r       *resp.Reader
	w       []byte
	timeout time.Duration
	// stamps times the connection's traffic by the kernel (nil where it
	// gives none: a unix socket, another system): requests are charged
	// wire time, and the client's own lateness is measured apart.
	stamps *wire.StampedConn
	guard  *resp.Guard // what c checks every byte read against
	// tcp is the socket beneath, for the event loop to take over (nil
	// on a unix socket).
	tcp *net.TCPConn
}

// dialBurst opens and authenticates one burst connection. register is
// called with the raw socket before anything is sent, so an abort can close
// it from another goroutine.
func dialBurst(ctx context.Context, ep prober.Endpoint, timeout time.Duration, lim resp.Limits, paced bool, register func(net.Conn) error) (*burstConn, error) {
	d := net.Dialer{Timeout: timeout, KeepAlive: -1}
	raw, err := d.DialContext(ctx, ep.Network, ep.Addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", ep.String(), err)
	}
	tcp, _ := raw.(*net.TCPConn)
	if tcp != nil {
		_ = tcp.SetNoDelay(true)
	}
	if err := register(raw); err != nil {
		raw.Close()
		return nil, err
	}
	c := raw
	var stamps *wire.StampedConn
	// A paced load is timed by the kernel: its latency leaves this host's
	// scheduling out, and its lag is measured against each write's
	// departure. An unpaced load (as fast as Redis answers) keeps the
	// prober's clock: recvmsg and the stamps would cost it throughput
	// (docs/performance.md, "Measured reasons"), and its latency is queueing that
	// a client delay barely moves.
	if paced {
		if sc, err := wire.StampLoad(raw); err == nil {
			c, stamps = sc, sc
		}
	}
	if ep.TLS != nil {
		c = ep.TLSClient(c)
	}
	// The codec below trusts lengths no more than go-redis does: the guard
	// has refused any header over lim before the codec reads it.
	c, g := prober.GuardConn(c, lim)
	bc := &burstConn{c: c, r: resp.NewReader(c, 64<<10), timeout: timeout, stamps: stamps, guard: g, tcp: tcp}
	// Never format the password into an error: only the reply is shown.
	if step, err := ep.Handshake(bc.roundTrip); err != nil {
		bc.Close()
		return nil, fmt.Errorf("%s: %w", step, err)
	}
	// Named, so CLIENT LIST tells burst connections from the application's.
	if err := bc.roundTrip(setName); err != nil {
		var er resp.ErrorReply
		if !errors.As(err, &er) {
			bc.Close()
			return nil, fmt.Errorf("CLIENT SETNAME: %w", err)
		}
	}
	return bc, nil
}

// setName is CLIENT SETNAME redis-prober-burst, encoded.
var setName = resp.AppendCommand(nil, "CLIENT", "SETNAME", "redis-prober-burst")

func (bc *burstConn) Close() error { return bc.c.Close() }

// roundTrip sends req (not the buffer) and reads its reply: the
// connection's set-up, one request at a time.
func (bc *burstConn) roundTrip(req []byte) error {
	if err := bc.send(req); err != nil {
		return err
	}
	_, _, err := bc.r.Reply()
	return err
}

// flush writes the buffered requests and arms the read deadline for their
// replies.
func (bc *burstConn) flush() error {
	err := bc.send(bc.w)
	bc.w = bc.w[:0]
	return err
}

// send writes b and arms the read deadline for its replies.
func (bc *burstConn) send(b []byte) error {
	_ = bc.c.SetDeadline(time.Now().Add(bc.timeout))
	_, err := bc.c.Write(b)
	return err
}
