//go:build linux

package burst

import (
	"context"
	"time"

	"github.com/redis-prober/redis-prober/wire"
)

// redial opens a new connection for c on a goroutine, after the redial
// pause (a server that refuses is not hammered), and hands it to the loop.
func (p *loadLoop) redial(c *loopConn) {
	l := p.l
	if l.stopped.Load() {
		return
	}
	c.w.redial = nextRedialPause(c.w.redial)
	pause := c.w.redial
	p.dials.Add(1)
	go func() {
		defer p.dials.Done()
		t := time.NewTimer(pause)
		defer t.Stop()
		select {
		case <-t.C:
		case <-l.stopCh:
			return
		}
		bc, err := dialBurst(p.ctx, l.b.Endpoint, l.plan.Timeout, c.w.lim, c.stamped, l.register)
		if err == nil && c.stamped && bc.stamps == nil {
			bc.Close()
			err = wire.ErrNoStamps
		}
		p.redialMu.Lock()
		p.redialed = append(p.redialed, redialed{c: c, conn: bc, err: err})
		p.redialMu.Unlock()
		p.poll.Wake()
	}()
}

// takeRedials puts the connections dialled again back to work; a failed
// dial leaves the connection free but dead, so its next batch fails with
// the dial's error, as on the goroutine path.
func (p *loadLoop) takeRedials() {
	p.redialMu.Lock()
	got := p.redialed
	p.redialed = nil
	p.redialMu.Unlock()
	for _, r := range got {
		c := r.c
		c.w.vFree = -1
		if r.err == nil {
			r.err = p.adopt(c, r.conn)
			r.conn.Close()
		}
		if r.err != nil {
			c.dead = r.err
		}
		c.freeAt = time.Since(p.l.t0)
		p.free = append(p.free, c)
	}
}

// closeAll closes every socket, waits for the dials under way and closes
// what they opened.
func (p *loadLoop) closeAll() {
	for _, c := range p.all {
		p.takeOff(c)
	}
	p.dials.Wait()
	for _, r := range p.redialed {
		if r.conn != nil {
			r.conn.Close()
		}
	}
	p.redialed = nil
}

// eventLoop is the loop the load runs on, or nil to run it on a goroutine
// per connection (TLS, a unix socket, a paced load without stamps).
func (l *burstLoad) eventLoop(ctx context.Context, conns []*burstConn, seq []int) *loadLoop {
	if l.b.Endpoint.TLS != nil {
		return nil
	}
	return startLoop(ctx, l, conns, seq)
}
