package prober

import (
	"context"
	"net"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/internal/resp"
)

// ConnectRecorder takes connect-probe samples.
type ConnectRecorder interface {
	RecordConnect(res Result, d time.Duration)
}

// ConnectProbe measures what a new client pays before its first reply: dial,
// TLS, AUTH (and SELECT) and one PING, on a fresh connection each time. A full
// accept queue or a slow AUTH shows here long before it shows on a warm
// connection.
type ConnectProbe struct {
	ep      Endpoint
	timeout time.Duration
	rec     ConnectRecorder
	faults  *FaultLog
}

// NewConnectProbe wires a connect probe.
func NewConnectProbe(ep Endpoint, timeout time.Duration, rec ConnectRecorder, faults *FaultLog) *ConnectProbe {
	return &ConnectProbe{ep: ep, timeout: timeout, rec: rec, faults: faults}
}

// Once runs one connect probe and records it.
func (c *ConnectProbe) Once(ctx context.Context) {
	opts := c.ep.ClientOptions(c.timeout, 1)
	var raw atomic.Pointer[wireConn]
	opts.Dialer = func(ctx context.Context, _, _ string) (net.Conn, error) {
		conn, _, err := c.ep.dialWire(ctx, c.timeout, resp.Probe, false)
		if err != nil {
			return nil, err
		}
		raw.Store(conn)
		return conn, nil
	}
	client := redis.NewClient(opts)
	defer client.Close()

	start := time.Now()
	deadline := start.Add(c.timeout)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		if r := raw.Load(); r != nil {
			r.Interrupt()
		}
	})
	defer stop()
	err := client.Ping(ctx).Err()
	d := time.Since(start)
	if ctx.Err() != nil && err != nil && d < c.timeout {
		return // stopping, not a fault of Redis
	}
	res, _ := classify(err)
	c.rec.RecordConnect(res, d)
	c.faults.Observe("connect", err, res != ResultTimeout && err == nil)
}

// Run repeats Once every interval until ctx is done.
func (c *ConnectProbe) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		c.Once(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
