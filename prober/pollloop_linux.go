//go:build linux

package prober

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/redis-prober/redis-prober/internal/resp"
	"github.com/redis-prober/redis-prober/wire"
)

// pollLoop is the state of one run of the loop, touched by its goroutine only.
type pollLoop struct {
	p        *pollShard
	poll     *wire.Poll
	conns    map[int32]*pollConn
	timers   wire.TimerHeap[*pollConn]
	msg      wire.MsgBuf
	oob      []byte // the control messages of reads
	errOOB   []byte // and of the error queue
	src      bytes.Reader
	rd       *resp.Reader // parses a complete reply out of src
	inflight int          // requests out, whose replies a wait expects soon
	// owing: connections that owe a timed-out request's reply, which a
	// wait expects soon too: a slot may wait for it (readOwed), and a loop
	// parked on a Go timer would see it only at that slot's deadline.
	owing   int
	scratch [maxLastWords]byte
	in      [16 << 10]byte // the first read of every reply
}

func (l *pollLoop) run() {
	// The thread is the loop's alone: its waits end at probes' due times,
	// and the default 50 µs timer slack would make each up to that late.
	// It goes back to the runtime with its slack reset rather than exit
	// locked: a thread's exit is a parent death to any child process it
	// once forked with Pdeathsig set (the tests' redis-servers), and would
	// kill it.
	defer wire.PinThread()()
	for {
		l.fire()
		if len(l.conns) == 0 && l.retire() {
			return
		}
		var next time.Time
		if l.timers.Len() > 0 {
			_, t := l.timers.First()
			next = t.At
		}
		for _, ev := range l.poll.Wait(next, l.inflight > 0 || l.owing > 0) {
			if l.poll.IsWake(ev) {
				l.takeInbox()
			} else if pc := l.conns[ev.Fd]; pc != nil {
				l.onEvent(pc, ev.Events)
			}
		}
	}
}

// retire ends the loop when nothing is queued for it.
func (l *pollLoop) retire() bool {
	l.p.mu.Lock()
	defer l.p.mu.Unlock()
	if len(l.p.inbox) > 0 {
		return false
	}
	l.p.running, l.p.poll, l.p.sweep = false, nil, false
	l.poll.Close()
	return true
}

// takeInbox starts serving the connections handed over, and lets go of the
// workers of stopped probes.
func (l *pollLoop) takeInbox() {
	l.p.mu.Lock()
	in, sweep := l.p.inbox, l.p.sweep
	l.p.inbox, l.p.sweep = nil, false
	l.p.mu.Unlock()
	for _, pc := range in {
		if pc.w.ctx.Err() != nil {
			l.release(pc)
			continue
		}
		if err := l.poll.Add(pc.fd, unix.EPOLLIN); err != nil {
			l.handBack(pc)
			continue
		}
		l.conns[int32(pc.fd)] = pc
		l.p.served.Add(1)
		// The baseline the retransmissions of its requests are counted
		// from; a socket without TCP_INFO is never read again.
		pc.net.begin(func() (wire.TCPStats, bool) { return readTCPInfo(pc.fd) })
		l.next(pc)
	}
	if sweep {
		for _, pc := range l.conns {
			if pc.w.ctx.Err() != nil {
				l.release(pc)
			}
		}
	}
}

// next claims the worker's next slot: a timer until it is due, or the
// request at once when it is overdue.
func (l *pollLoop) next(pc *pollConn) {
	for {
		pc.s = pc.w.claim()
		if !pc.s.claimed.After(pc.s.due) {
			l.setTimer(pc, pc.s.due)
			return
		}
		if l.send(pc, time.Now()) {
			return
		}
	}
}

// fire runs the timers that are due: a slot to send, or a request past its
// deadline.
func (l *pollLoop) fire() {
	for l.timers.Len() > 0 {
		now := time.Now()
		pc, _ := l.timers.First()
		limit := now
		if !pc.inflight && !pc.s.behind {
			limit = now.Add(sendEarly)
		}
		if pc.t.At.After(limit) {
			return
		}
		l.timers.Remove(&pc.t)
		switch {
		case pc.inflight:
			// On a busy host the loop can be late to its own timers: a
			// reply already in the socket by its deadline (by its kernel
			// stamp) is an answer, not a timeout.
			l.read(pc, true)
			if pc.inflight {
				l.finish(pc, timedOut(pc), now)
			}
		case pc.s.behind:
			l.giveUpWaiting(pc, now)
		case !l.send(pc, now):
			l.next(pc)
		}
	}
}

// sendEarly is how far ahead of its due time the loop sends a slot when it
// is awake anyway. Each wake-up of the loop's thread costs the kernel a
// sleep and a wake (a VM exit on a virtual CPU going idle), and at 10,000
// requests a second one a slot made the loop cost more CPU than the
// goroutines it replaced; slots of different connections due within this
// much of each other now share one. A slot sent early is charged from its
// departure like any other, and 200 µs is nothing to a probe whose slots
// are milliseconds apart.
const sendEarly = 200 * time.Microsecond

// timedOut is a request past its deadline, as the goroutine path words it.
func timedOut(pc *pollConn) error {
	return &net.OpError{Op: "read", Net: "tcp", Addr: pc.remote, Err: os.ErrDeadlineExceeded}
}

// send makes the slot's request at woke; false when the slot had already
// waited its whole timeout (recorded as such), so the next one is due.
func (l *pollLoop) send(pc *pollConn, woke time.Time) bool {
	if pc.owed {
		pc.s.behind = true
	}
	deadline, ok := pc.w.wake(&pc.s, woke)
	if !ok {
		return false
	}
	if pc.owed {
		// The connection still owes the reply of a request that timed
		// out: the slot waits for it (readOwed), until its own deadline.
		l.setTimer(pc, deadline)
		return true
	}
	if pc.dead != nil {
		l.finish(pc, pc.dead, time.Now())
		return true
	}
	req := pc.w.reqs[pc.s.ci]
	pc.ex = wire.Exchange{WriteAt: time.Now()}
	pc.replies = pc.guard.Replies()
	n, err := wire.RawWrite(pc.fd, req)
	if err != nil || n < len(req) {
		l.finish(pc, l.writeError(pc, err), time.Now())
		return true
	}
	pc.sent += uint32(n)
	pc.want = pc.sent - 1
	// The write woke the server, maybe on this CPU: let it run before
	// this thread's own work (wire.Yield). Yielding after each write is
	// also cheaper than only after a batch's last write at fleet scale,
	// which made more switches (docs/performance.md, "Measured
	// reasons").
	wire.Yield()
	// The software TX stamp is taken as the segment goes to the device,
	// within the write on an idle socket; taking it now also clears the
	// error queue before the reply is awaited.
	l.drain(pc)
	l.launched(pc, deadline)
	l.setTimer(pc, deadline)
	return true
}

// writeError is a failed write as the goroutine path reports it, with the
// server's last words when it hung up on the request after saying why.
func (l *pollLoop) writeError(pc *pollConn, err error) error {
	if err == nil {
		err = io.ErrShortWrite // a small write to an empty send queue: the peer is not reading
	}
	werr := &net.OpError{Op: "write", Net: "tcp", Addr: pc.remote, Err: err}
	n, _, rerr := l.msg.Recvmsg(uintptr(pc.fd), l.scratch[:], l.oob, unix.MSG_DONTWAIT)
	if rerr == nil {
		if said := errorLine(l.scratch[:n]); said != "" {
			return &ServerRefusal{Reply: said, Err: werr}
		}
	}
	return werr
}

// drain takes the request's TX stamp from the error queue.
func (l *pollLoop) drain(pc *pollConn) {
	if ts, ok := l.msg.DrainTX(uintptr(pc.fd), l.errOOB, pc.want); ok {
		pc.ex.TXWall, pc.ex.TX = ts, true
	}
}

// onEvent acts on what epoll reported for a connection.
func (l *pollLoop) onEvent(pc *pollConn, events uint32) {
	if pc.inflight {
		if events&unix.EPOLLERR != 0 && !pc.ex.TX {
			l.drain(pc) // a TX stamp that came after the write
		}
		l.read(pc, false)
		return
	}
	// Nothing was asked: a late stamp, or the connection went bad while
	// idle. The error queue is emptied whatever it holds.
	if events&unix.EPOLLERR != 0 {
		l.msg.DrainTX(uintptr(pc.fd), l.errOOB, ^uint32(0))
	}
	if pc.owed {
		l.readOwed(pc)
		return
	}
	n, _, err := l.msg.Recvmsg(uintptr(pc.fd), l.scratch[:], l.oob, unix.MSG_DONTWAIT)
	switch {
	case err == unix.EAGAIN || err == unix.EINTR:
		return
	case err != nil:
		pc.dead = &net.OpError{Op: "read", Net: "tcp", Addr: pc.remote, Err: err}
	case n == 0:
		pc.dead = io.EOF
	default:
		if gerr := pc.guard.Feed(l.scratch[:n]); gerr != nil {
			pc.dead = gerr
		} else {
			pc.dead = errUnasked
		}
	}
	// It is not watched any more: the next slot meets what it saw.
	l.poll.Remove(pc.fd)
}

// read takes what has come of the reply; a complete one settles the request.
// The first read of a reply goes to the loop's own buffer, so a reply that
// comes in one read (nearly all) costs its connection no buffer of its own;
// only the rest of a longer one is gathered in the connection's.
// late says the loop reads at the request's deadline, not when epoll said.
func (l *pollLoop) read(pc *pollConn, late bool) {
	for {
		into := l.in[:]
		if len(pc.buf) > 0 {
			if len(pc.buf) == cap(pc.buf) {
				// The guard bounds a reply (resp.Probe), so this does too.
				pc.buf = append(pc.buf, make([]byte, cap(pc.buf))...)[:len(pc.buf)]
			}
			into = pc.buf[len(pc.buf):cap(pc.buf)]
		}
		n, oobn, ok, err := l.msg.ReadNow(uintptr(pc.fd), into, l.oob, pc.remote)
		if err != nil {
			l.finish(pc, err, time.Now())
			return
		}
		if !ok {
			return
		}
		pc.ex.ReadAt = time.Now()
		pc.ex.RXWall, pc.ex.RX = wire.RXStamp(l.oob[:oobn])
		got := into[:n]
		if gerr := pc.guard.Feed(got); gerr != nil {
			l.finish(pc, gerr, pc.ex.ReadAt)
			return
		}
		done := pc.guard.Replies() > pc.replies
		switch {
		case len(pc.buf) > 0:
			pc.buf = pc.buf[:len(pc.buf)+n]
			got = pc.buf
		case !done:
			pc.buf = append(make([]byte, 0, 2*len(l.in)), got...)
		}
		if done {
			l.complete(pc, got, late)
			return
		}
	}
}

// complete parses the reply now all in data, with the probe's own codec.
func (l *pollLoop) complete(pc *pollConn, data []byte, late bool) {
	end := pc.ex.ReadAt
	l.src.Reset(data)
	l.rd.Reset(&l.src)
	_, _, err := l.rd.Reply()
	if pc.guard.Replies() != pc.replies+1 || !pc.guard.Between() || l.src.Len() > 0 || l.rd.Buffered() > 0 {
		// More came than the one reply: it is this request's all the
		// same, and the next one meets a stream out of step.
		pc.dead = errUnasked
	}
	if !pc.ex.TX {
		l.drain(pc)
	}
	if late && wire.LateReply(pc.ex, pc.deadline) {
		// It came, but after its deadline: a timeout at its true age.
		err, end = timedOut(pc), time.Now()
	}
	l.finish(pc, err, end)
}

// finish settles the request with its outcome: the worker records it, and
// either the next slot is claimed or the connection is closed and the
// worker goes back to a goroutine to open a new one.
func (l *pollLoop) finish(pc *pollConn, err error, end time.Time) {
	if pc.inflight {
		l.network(pc, end)
	}
	l.landed(pc)
	l.stopTimer(pc)
	keep := l.keepAfter(pc, err)
	pc.buf = nil // a reply longer than one read is rare: its buffer is not kept
	if pc.w.settle(&pc.s, err, end, false, pc.ex) && !keep || pc.dead != nil {
		l.handBack(pc)
		return
	}
	l.next(pc)
}

// keepAfter says whether a request that failed with err leaves its
// connection in step, by wire.AfterTimeout; an owed reply is read and
// dropped when it comes.
func (l *pollLoop) keepAfter(pc *pollConn, err error) bool {
	if !errors.Is(err, os.ErrDeadlineExceeded) || pc.dead != nil {
		return false
	}
	switch wire.AfterTimeout(pc.guard.Replies()-pc.replies, pc.guard.Between()) {
	case wire.KeepOwed:
		l.setOwed(pc, true)
		pc.owedBy = wire.OwedBy(pc.deadline, pc.w.probe.cfg.Timeout)
		return true
	case wire.KeepInStep:
		return true
	}
	return false
}

// readOwed reads what has come of the reply the connection owes, and drops
// it; once it is whole, a slot that waits for it goes at once, charged from
// its due time with the wait split at the reply's arrival (heldOnWire), as
// a slot behind a slow reply is. More than the one reply, a failure or a
// hang-up is met by the next request, as while idle.
func (l *pollLoop) readOwed(pc *pollConn) {
	for pc.owed && pc.dead == nil {
		n, oobn, ok, err := l.msg.ReadNow(uintptr(pc.fd), l.in[:], l.oob, pc.remote)
		switch {
		case err != nil:
			pc.dead = err
		case !ok:
			return
		default:
			if gerr := pc.guard.Feed(l.in[:n]); gerr != nil {
				pc.dead = gerr
			} else if pc.guard.Replies() > pc.replies {
				l.setOwed(pc, false)
				if pc.guard.Replies() > pc.replies+1 || !pc.guard.Between() {
					pc.dead = errUnasked
				}
				rx, stamped := wire.RXStamp(l.oob[:oobn])
				pc.w.freeAt = wire.ReplyArrival(wire.Exchange{ReadAt: time.Now(), RXWall: rx, RX: stamped})
			}
		}
	}
	if pc.dead != nil {
		l.setOwed(pc, false)
		l.poll.Remove(pc.fd)
	}
	if pc.s.behind {
		l.stopTimer(pc)
		if !l.send(pc, time.Now()) {
			l.next(pc)
		}
	}
}

// giveUpWaiting settles a slot whose deadline came while it waited for the
// reply its connection owes: a timeout at its true age. A connection that
// has owed a reply past its patience is given up on, and the worker opens
// a new one.
func (l *pollLoop) giveUpWaiting(pc *pollConn, now time.Time) {
	pc.w.wake(&pc.s, now) // past its deadline: recorded as a timeout
	if !now.Before(pc.owedBy) {
		l.handBack(pc)
		return
	}
	l.next(pc)
}

// close forgets the connection and closes it (closing takes it out of the
// epoll set: no other descriptor refers to the socket).
func (l *pollLoop) close(pc *pollConn) {
	l.landed(pc)
	l.setOwed(pc, false)
	l.stopTimer(pc)
	if l.conns[int32(pc.fd)] == pc {
		delete(l.conns, int32(pc.fd))
		l.p.served.Add(-1)
	}
	_ = unix.Close(pc.fd)
}

// launched marks pc's request as out, due back by deadline.
func (l *pollLoop) launched(pc *pollConn, deadline time.Time) {
	pc.inflight, pc.deadline = true, deadline
	l.inflight++
}

// landed marks pc's request, if one was out, as over.
func (l *pollLoop) landed(pc *pollConn) {
	if pc.inflight {
		pc.inflight = false
		l.inflight--
	}
}

// setOwed marks whether pc owes a reply, keeping the loop's count.
func (l *pollLoop) setOwed(pc *pollConn, owed bool) {
	switch {
	case owed && !pc.owed:
		l.owing++
	case !owed && pc.owed:
		l.owing--
	}
	pc.owed = owed
}

// handBack returns the worker to a goroutine of its own, which opens a new
// connection for its next slot.
func (l *pollLoop) handBack(pc *pollConn) {
	l.close(pc)
	go pc.w.drive()
}

// release lets go of a worker whose probe has stopped.
func (l *pollLoop) release(pc *pollConn) {
	l.close(pc)
	pc.w.done()
}

// network reads the connection's TCP_INFO after a request long on the wire
// (netTrack's rule) and tells the recorder what moved. end is when the
// request ended, for a request without an RX stamp.
func (l *pollLoop) network(pc *pollConn, end time.Time) {
	from, to := onWire(pc.ex, end)
	if s, ok := pc.net.after(from, to, func() (wire.TCPStats, bool) { return readTCPInfo(pc.fd) }); ok {
		pc.w.probe.rec.RecordNetwork(s)
	}
}

func (l *pollLoop) setTimer(pc *pollConn, at time.Time) { l.timers.Set(&pc.t, pc, at) }

func (l *pollLoop) stopTimer(pc *pollConn) { l.timers.Remove(&pc.t) }
