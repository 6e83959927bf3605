package prober

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/redis-prober/redis-prober/internal/resp"
)

// wireConn is every connection the prober opens to Redis, beneath go-redis
// or the burst codec. Its stream is the server's plaintext RESP (the socket
// itself, or TLS over it), and a resp.Guard checks every byte read before
// the client library parses it: a reply that claims more than the
// connection's limits fails the connection with an error naming the limit,
// instead of an allocation of whatever size the server asked for (go-redis
// v9.23, the newest, trusts every length header).
type wireConn struct {
	net.Conn
	guard *resp.Guard
}

var _ net.Conn = (*wireConn)(nil)

func guard(c net.Conn, lim resp.Limits) *wireConn {
	return &wireConn{Conn: c, guard: resp.New(lim)}
}

func (c *wireConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		if gerr := c.guard.Feed(b[:n]); gerr != nil {
			// The stream is no longer in step: nothing more is read
			// from it, and the client library drops the connection on
			// this error.
			_ = c.Conn.Close()
			return 0, gerr
		}
	}
	return n, err
}

// tlsClient starts TLS over raw with the endpoint's settings, naming the
// server from its address when the config does not.
func (e Endpoint) tlsClient(raw net.Conn) *tls.Conn {
	cfg := e.TLS.Clone()
	if cfg.ServerName == "" && e.Network != "unix" {
		if host, _, err := net.SplitHostPort(e.Addr); err == nil {
			cfg.ServerName = host
		}
	}
	return tls.Client(raw, cfg)
}

// dialGuarded opens an ordinary (netpoller) connection to the endpoint, TLS
// when asked, with every reply checked against lim.
func (e Endpoint) dialGuarded(ctx context.Context, timeout time.Duration, lim resp.Limits) (*wireConn, error) {
	d := net.Dialer{Timeout: timeout, KeepAlive: -1}
	raw, err := d.DialContext(ctx, e.Network, e.Addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := raw.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	if e.TLS == nil {
		return guard(raw, lim), nil
	}
	tc := e.tlsClient(raw)
	hctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		raw.Close()
		return nil, fmt.Errorf("tls handshake with %s: %w", e.Addr, err)
	}
	return guard(tc, lim), nil
}

// GuardedDialer is a go-redis Dialer for the endpoint's control traffic, for
// clients the prober builds outside ClientOptions (Sentinel).
func (e Endpoint) GuardedDialer(timeout time.Duration) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, _, _ string) (net.Conn, error) {
		return e.dialGuarded(ctx, timeout, resp.Control)
	}
}
