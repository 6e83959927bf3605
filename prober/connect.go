package prober

import (
	"context"
	"time"

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

// pingRequest is PING, encoded.
var pingRequest = resp.AppendCommand(nil, "PING")

// Once runs one connect probe and records it.
func (c *ConnectProbe) Once(ctx context.Context) {
	start := time.Now()
	deadline := start.Add(c.timeout)
	octx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	pc, _, err := c.ep.openProbeConn(octx, c.timeout, deadline, nil)
	if err == nil {
		stop := context.AfterFunc(octx, pc.conn.Interrupt)
		err = pc.exchange(pingRequest, deadline)
		stop()
		_ = pc.Close()
	}
	d := time.Since(start)
	if err != nil && d < c.timeout && cutShort(ctx) {
		return // cut by the caller (a stop, the end of a window), not a fault of Redis
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
