//go:build linux

package burst

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/redis-prober/redis-prober/internal/resp"
	"github.com/redis-prober/redis-prober/wire"
)

// A paced load over TCP runs on one event loop (the wire package's), as a
// C load generator runs every connection from one thread: the loop sleeps
// in epoll until the next slot is due, with nanosecond precision, sends it
// on a free connection, yields so Redis can answer at once, and reads each
// reply the moment it arrives, keeping the kernel's RX stamp of the read
// that completed it. The goroutine per connection it replaces woke for
// every slot through a dispatcher and a channel, two trips through Go's
// scheduler a request, and the wake-up was in the client's latency and
// lag (docs/bursts.md, "How a burst is timed").
//
// A slot waits, charged from its due time, only while every connection is
// busy with Redis: that is the coordinated-omission case. The loop's own
// lateness (it woke late, the host was busy) is the client's lag.

// loopConn is one burst connection served by the loop.
type loopConn struct {
	w      *loadWorker
	fd     int
	remote net.Addr
	guard  *resp.Guard
	sent   uint32 // bytes written since stamping began (the OPT_ID key space)
	want   uint32 // key of the batch's last byte
	out    []byte // the batch, encoded
	wrote  int    // how much of out has gone
	n      int    // requests in the batch; 0: the connection is free
	// need[j] is how many of the batch's replies complete request j (a
	// first SET of a key carries its EXPIRE's reply too); rx[r] is when
	// reply r arrived, since t0, or -1 without a stamp.
	need     []int
	rx       []time.Duration
	replies0 uint64 // the guard's count when the batch went out
	in       []byte // the batch's replies read so far
	writeAt  time.Time
	txDone   bool // the batch's TX stamp was taken (or given up)
	wantOut  bool // EPOLLOUT is asked for (a batch waits for room)
	stamped  bool // the kernel stamps its traffic
	freeAt   time.Duration
	t        wire.Timer // the batch's deadline
	// dead is a redial that failed: the next batch on this connection
	// fails with it at once, and the connection dials again.
	dead error
}

// loadLoop is the event loop of a load over TCP, touched by its goroutine only.
type loadLoop struct {
	l       *burstLoad
	ctx     context.Context
	poll    *wire.Poll
	conns   map[int32]*loopConn
	all     []*loopConn
	free    []*loopConn
	sentNow []*loopConn // sent in this round: their TX stamps are taken after the yield
	timers  wire.TimerHeap[*loopConn]
	next    int64 // the next slot to hand out
	busy    int   // batches out
	msg     wire.MsgBuf
	oob     []byte
	errOOB  []byte
	src     bytes.Reader
	rd      *resp.Reader
	scratch [64 << 10]byte

	redialMu sync.Mutex
	redialed []redialed // dials done, not yet taken by the loop
	dials    sync.WaitGroup
}

type redialed struct {
	c    *loopConn
	conn *burstConn
	err  error
}

// errAborted fails the requests in flight when the governor or a cancel
// stops the load: they are counted as interrupted, not as Redis errors.
var errAborted = errors.New("burst stopped with the request in flight")

// startLoop takes the load's open connections over, when every one of
// them is plain TCP, stamped when the load is paced (a paced load has
// nothing else to time its requests by that leaves the client out): it
// returns the loop, or nil to keep the goroutine per connection.
func startLoop(ctx context.Context, l *burstLoad, conns []*burstConn, seq []int) *loadLoop {
	for _, c := range conns {
		if c.tcp == nil || (l.plan.Rate > 0 && c.stamps == nil) || c.r.Buffered() > 0 {
			return nil
		}
	}
	poll, err := wire.NewPoll()
	if err != nil {
		return nil
	}
	p := &loadLoop{l: l, ctx: ctx, poll: poll, conns: map[int32]*loopConn{},
		timers: wire.NewTimerHeap[*loopConn](), oob: wire.OOB(), errOOB: wire.ErrOOB()}
	p.rd = resp.NewReader(&p.src, 64<<10)
	// Every socket is the loop's before any of Go's is closed: where one
	// cannot be (out of descriptors), the goroutines keep them all.
	for i, bc := range conns {
		c := &loopConn{w: newLoadWorker(l, i, l.clients[i], nil, l.shards[i%len(l.shards)], seq), fd: -1}
		p.all = append(p.all, c)
		if err := p.adopt(c, bc); err != nil {
			p.closeAll()
			poll.Close()
			return nil
		}
	}
	for _, bc := range conns {
		bc.Close()
	}
	p.free = append(p.free, p.all...)
	return p
}

// adopt gives the loop a descriptor of its own for bc's socket; closing
// Go's then takes it out of the netpoller.
func (p *loadLoop) adopt(c *loopConn, bc *burstConn) error {
	fd, err := wire.Dup(bc.tcp)
	if err == nil {
		if err = p.poll.Add(fd, unix.EPOLLIN); err != nil {
			unix.Close(fd)
		}
	}
	if err != nil {
		return err
	}
	c.fd, c.remote, c.guard, c.sent, c.stamped = fd, bc.c.RemoteAddr(), bc.guard, 0, bc.stamps != nil
	c.wantOut = false
	if c.stamped {
		c.sent = bc.stamps.Sent()
	}
	c.dead = nil
	p.conns[int32(fd)] = c
	return nil
}

// run serves the load until a bound, an abort or ctx ends it.
func (p *loadLoop) run() {
	defer wire.PinThread()()
	defer p.poll.Close()
	defer p.closeAll()
	l := p.l
	l.setWake(p.poll.Wake)
	defer l.setWake(nil)
	for {
		if l.stopped.Load() {
			if l.isAborted() {
				p.failAll(errAborted)
			}
			if p.busy == 0 {
				return
			}
		} else {
			p.dispatch()
		}
		var until time.Time
		if !l.stopped.Load() {
			// The next slot, or the end of the test time when no
			// connection is free to send it (all are out, or
			// dialling again).
			until = l.t0.Add(l.end)
			if len(p.free) > 0 {
				until = l.t0.Add(min(l.pacer.Due(p.next, 0), l.end))
			}
		}
		if p.timers.Len() > 0 {
			if _, t := p.timers.First(); until.IsZero() || t.At.Before(until) {
				until = t.At
			}
		}
		if p.busy > 0 {
			// Replies are due any moment: the wait stays short and raw
			// (wire.Poll.Wait), whatever the next timer.
			if soon := time.Now().Add(time.Millisecond); until.IsZero() || until.After(soon) {
				until = soon
			}
		}
		for _, ev := range p.poll.Wait(until, p.busy > 0) {
			if p.poll.IsWake(ev) {
				p.takeRedials()
			} else if c := p.conns[ev.Fd]; c != nil {
				p.onEvent(c, ev.Events)
			}
		}
		p.expire()
	}
}

// dispatch sends every slot that is due on the free connections, a
// pipeline at most on each, then yields once and takes the TX stamps.
func (p *loadLoop) dispatch() {
	l, plan := p.l, p.l.plan
	paced := plan.Rate > 0
	for !l.stopped.Load() {
		now := time.Since(l.t0)
		due := now // unpaced: every slot is due
		if paced {
			due = l.pacer.Due(p.next, 0)
		}
		if due >= l.end || now >= l.end {
			l.stop(Decision{}, "test-time")
			break
		}
		if due > now || len(p.free) == 0 {
			break
		}
		if l.b.stall != nil {
			l.b.stall()
			now = time.Since(l.t0)
		}
		c := p.free[len(p.free)-1]
		p.free = p.free[:len(p.free)-1]
		w := c.w
		n := 0
		for n < plan.Pipeline {
			d := now
			if paced {
				if d = l.pacer.Due(p.next, 0); d > now || d >= l.end {
					break
				}
			}
			w.intended[n] = d
			p.next++
			n++
		}
		l.taken.Store(p.next)
		w.now = now
		w.idleFrom = -1
		if c.freeAt < w.intended[0] {
			w.idleFrom = c.freeAt
		}
		if n = w.bound(n); n == 0 {
			p.free = append(p.free, c)
			break
		}
		p.send(c, n)
	}
	if len(p.sentNow) > 0 {
		// Only a paced load yields: an unpaced one has Redis busy on
		// the other CPU already, and a yield a round costs it
		// throughput for no timing gained (its latency is queueing).
		if paced {
			wire.Yield()
		}
		for _, c := range p.sentNow {
			if c.n > 0 && !c.txDone && c.stamped {
				p.drainTX(c)
			}
		}
		p.sentNow = p.sentNow[:0]
	}
}

// send encodes a batch of n requests and writes it.
func (p *loadLoop) send(c *loopConn, n int) {
	w := c.w
	c.out, n = w.encode(c.out[:0], n)
	if n == 0 {
		p.free = append(p.free, c)
		return
	}
	c.n, c.wrote, c.txDone = n, 0, false
	c.need, c.rx = c.need[:0], c.rx[:0]
	replies := 0
	for j := range n {
		replies++
		if w.batch[j].extra {
			replies++
		}
		c.need = append(c.need, replies)
	}
	for range replies {
		c.rx = append(c.rx, -1)
	}
	c.replies0, c.in = c.guard.Replies(), c.in[:0]
	w.launch(n)
	p.busy++
	p.timers.Set(&c.t, c, time.Now().Add(p.l.plan.Timeout))
	if c.dead != nil {
		// Its last dial failed: the batch fails with that error, as a
		// goroutine's batch after a failed dial does, and it dials again.
		err := c.dead
		c.dead = nil
		p.fail(c, err)
		return
	}
	c.writeAt = time.Now()
	w.sentAt = c.writeAt.Sub(p.l.t0)
	p.write(c)
}

// write sends what is left of the batch; a full socket buffer waits for
// EPOLLOUT.
func (p *loadLoop) write(c *loopConn) {
	k, err := wire.RawWrite(c.fd, c.out[c.wrote:])
	if err != nil && err != unix.EAGAIN {
		p.fail(c, &net.OpError{Op: "write", Net: "tcp", Addr: c.remote, Err: err})
		return
	}
	c.wrote += k
	c.sent += uint32(k)
	if c.wrote < len(c.out) {
		if !c.wantOut {
			c.wantOut = true
			_ = p.poll.Modify(c.fd, unix.EPOLLIN|unix.EPOLLOUT)
		}
		return
	}
	if c.wantOut {
		// Only a socket that filled asks for EPOLLOUT: an epoll_ctl a
		// batch showed in a paced loop's profile (docs/performance.md,
		// "Measured reasons").
		c.wantOut = false
		_ = p.poll.Modify(c.fd, unix.EPOLLIN)
	}
	c.want = c.sent - 1
	p.sentNow = append(p.sentNow, c)
}

// drainTX takes the batch's TX stamp from the error queue.
func (p *loadLoop) drainTX(c *loopConn) {
	ts, ok := p.msg.DrainTX(uintptr(c.fd), p.errOOB, c.want)
	if !ok {
		return
	}
	c.txDone = true
	if tx, ok := wire.Departure(c.writeAt, ts); ok {
		c.w.tx, c.w.txOK = tx.Sub(p.l.t0), true
	}
}

// onEvent acts on what epoll reported for a connection.
func (p *loadLoop) onEvent(c *loopConn, events uint32) {
	if c.n == 0 {
		// Nothing was asked: the server closed, reset or wrote out of
		// turn. The connection is replaced.
		if events&unix.EPOLLERR != 0 {
			p.msg.DrainTX(uintptr(c.fd), p.errOOB, ^uint32(0))
		}
		if _, _, err := p.msg.Recvmsg(uintptr(c.fd), p.scratch[:], p.oob, unix.MSG_DONTWAIT); err == unix.EAGAIN || err == unix.EINTR {
			return
		}
		p.takeOff(c)
		p.removeFree(c)
		p.redial(c)
		return
	}
	if events&unix.EPOLLERR != 0 && !c.txDone {
		p.drainTX(c) // a TX stamp that came after the write
	}
	if events&unix.EPOLLOUT != 0 && c.wrote < len(c.out) {
		p.write(c)
		if c.n == 0 {
			return
		}
	}
	p.read(c)
}

// read takes what has come of the batch's replies; each reply completed
// by a read gets that read's RX stamp.
func (p *loadLoop) read(c *loopConn) {
	for c.n > 0 {
		k, oobn, ok, err := p.msg.ReadNow(uintptr(c.fd), p.scratch[:], p.oob, c.remote)
		if err != nil {
			p.fail(c, err)
			return
		}
		if !ok {
			return
		}
		readAt := time.Now()
		at := time.Duration(-1) // unstamped: the user clock times it
		if ts, ok := wire.RXStamp(p.oob[:oobn]); ok && c.stamped {
			if rx, ok := wire.Arrival(readAt, ts); ok {
				at = rx.Sub(p.l.t0)
			}
		}
		before := c.guard.Replies()
		if gerr := c.guard.Feed(p.scratch[:k]); gerr != nil {
			p.fail(c, gerr)
			return
		}
		c.in = append(c.in, p.scratch[:k]...)
		done := int(c.guard.Replies() - c.replies0)
		for r := int(before - c.replies0); r < min(done, len(c.rx)); r++ {
			c.rx[r] = at
		}
		if done >= len(c.rx) {
			p.complete(c, done > len(c.rx))
			return
		}
	}
}

// complete records the batch, its replies all read, and frees the
// connection; extra says more came than was asked (the stream is out of
// step: the connection is replaced).
func (p *loadLoop) complete(c *loopConn, extra bool) {
	if !c.txDone && c.stamped {
		p.drainTX(c)
	}
	w := c.w
	p.src.Reset(c.in)
	p.rd.Reset(&p.src)
	var lost error
	for j := range c.n {
		s := &w.batch[j]
		var rn, nils int64
		err := lost
		if err == nil {
			rn, nils, err = p.rd.Reply()
			if s.extra && (err == nil || isErrorReply(err)) {
				if _, _, xerr := p.rd.Reply(); xerr != nil && !isErrorReply(xerr) {
					err = xerr
				}
			}
			if err != nil && !isErrorReply(err) {
				lost = err
			}
		}
		w.rxAt, w.rxOK = c.rx[c.need[j]-1], lost == nil && c.rx[c.need[j]-1] >= 0
		w.record(s, j, rn, nils, err)
	}
	p.settle(c)
	if extra || lost != nil {
		p.takeOff(c)
		p.redial(c)
		return
	}
	// A batch answered: the connection works, and the next failure
	// starts the back-off again from its first pause.
	w.redial = 0
	p.free = append(p.free, c)
}

// settle ends the batch's bookkeeping: counted, no longer in flight.
func (p *loadLoop) settle(c *loopConn) {
	w := c.w
	w.shard.add(w.batch[:c.n])
	w.landed()
	w.txOK = false
	c.n = 0
	c.freeAt = time.Since(p.l.t0)
	p.timers.Remove(&c.t)
	p.busy--
}

// fail records every request of the batch with err and replaces the
// connection.
func (p *loadLoop) fail(c *loopConn, err error) {
	w := c.w
	w.rxOK = false
	for j := range c.n {
		w.record(&w.batch[j], j, 0, 0, err)
	}
	if c.n > 0 {
		p.settle(c)
	}
	p.takeOff(c)
	if err != errAborted {
		p.redial(c)
	}
}

// failAll fails every batch in flight (an abort).
func (p *loadLoop) failAll(err error) {
	for _, c := range p.all {
		if c.n > 0 {
			p.fail(c, err)
		}
	}
}

// expire fails the batches past their deadline.
func (p *loadLoop) expire() {
	now := time.Now()
	for p.timers.Len() > 0 {
		c, t := p.timers.First()
		if t.At.After(now) {
			return
		}
		// A reply already in the socket is an answer, not a timeout.
		p.read(c)
		if c.n > 0 && c.t.Armed() && !c.t.At.After(now) {
			p.fail(c, &net.OpError{Op: "read", Net: "tcp", Addr: c.remote, Err: os.ErrDeadlineExceeded})
		}
	}
}

// takeOff closes the connection's socket; the loop forgets it.
func (p *loadLoop) takeOff(c *loopConn) {
	if c.fd < 0 {
		return
	}
	delete(p.conns, int32(c.fd))
	_ = unix.Close(c.fd)
	c.fd = -1
}

func (p *loadLoop) removeFree(c *loopConn) {
	for i, f := range p.free {
		if f == c {
			p.free = append(p.free[:i], p.free[i+1:]...)
			return
		}
	}
}
