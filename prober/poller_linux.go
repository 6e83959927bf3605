//go:build linux

package prober

import (
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/redis-prober/redis-prober/internal/resp"
	"github.com/redis-prober/redis-prober/wire"
)

// Poller serves the open probe connections of many targets from few event
// loops (one on a small host): each one thread waiting in epoll(7) on its
// sockets and on a heap of their timers, as a C client's event loop does.
// Without it each probe connection is a goroutine that parks on a Go timer
// until its slot and on the netpoller until its reply, two trips through
// Go's scheduler a request; at a thousand targets those wake-ups, not the
// requests, were the larger share of the prober's CPU (see
// docs/scaling.md).
//
// Only a plain TCP connection whose traffic the kernel timestamps is
// served here: TLS needs crypto/tls, which needs a net.Conn, and without
// stamps the figure would be the loop's wake-up. Opening a connection
// (dial, handshake and its first request, timed in user space) stays on
// the worker's goroutine, which hands the connection over once it works
// and gets it back, as a goroutine again, when it has to open a new one.
//
// A loop runs while it has connections and exits when it has none; the
// zero cost of an idle Poller is why nothing has to stop it.
type Poller struct {
	stamps *wire.Stamping
	shards []*pollShard
	next   atomic.Uint32 // round robin over the shards
}

// pollShard is one loop of a Poller and what is handed to it.
type pollShard struct {
	mu      sync.Mutex
	running bool
	failed  bool        // the loop could not be set up: every worker stays on its goroutine
	inbox   []*pollConn // handed over, not yet taken by the loop
	sweep   bool        // a probe stopped: the loop lets go of its workers
	poll    *wire.Poll  // the loop's epoll set, valid while running
	served  atomic.Int64
}

// NewPoller returns a Poller; its loops start with their first connection.
// One loop's CPU is mostly the kernel's (the writes and reads): 10,000
// requests a second cost it a small share of a core of a small VM
// (docs/performance.md, "Measured reasons"), so there is one loop for every
// four CPUs Go may use, and at least one.
func NewPoller() *Poller { return newPoller(max(1, runtime.GOMAXPROCS(0)/4)) }

func newPoller(loops int) *Poller {
	p := &Poller{stamps: wire.NewStamping()}
	for range loops {
		p.shards = append(p.shards, &pollShard{})
	}
	return p
}

// Stamping is the stamping state of the probe connections the loops
// serve (nil for a nil Poller).
func (p *Poller) Stamping() *wire.Stamping {
	if p == nil {
		return nil
	}
	return p.stamps
}

// Connections is how many probe connections the loops serve now.
func (p *Poller) Connections() int {
	n := 0
	for _, sh := range p.shards {
		n += int(sh.served.Load())
	}
	return n
}

// adopt hands pc to one of the loops, in turn; false when none can run it.
func (p *Poller) adopt(pc *pollConn) bool {
	first := int(p.next.Add(1))
	for i := range p.shards {
		if p.shards[(first+i)%len(p.shards)].adopt(pc) {
			return true
		}
	}
	return false
}

// stopped tells every loop that a probe's context is done.
func (p *Poller) stopped() {
	for _, sh := range p.shards {
		sh.stopped()
	}
}

// maxPolledRequest bounds the requests a polled connection sends: one write
// of a small request to a socket with nothing queued (its last request was
// answered) never blocks, so the loop never waits to write. A probe with
// larger values (data_size) keeps its goroutine.
const maxPolledRequest = 4 << 10

// pollConn is one probe connection owned by the loop.
type pollConn struct {
	w      *worker
	fd     int
	remote net.Addr
	guard  *resp.Guard
	sent   uint32 // bytes written since stamping began (the OPT_ID key space)
	want   uint32 // key of the last write's last byte
	buf    []byte // the reply read so far, when one read did not bring it all
	// replies is the guard's count when the request went out: one more
	// means its reply is all in buf.
	replies  uint64
	s        slotTiming
	ex       wire.Exchange
	inflight bool
	deadline time.Time
	// dead is what the connection met while no request was out (the server
	// closed it, reset it, or sent what nobody asked for): the next
	// request meets it, as a client reusing the connection would.
	dead error
	// owed: a request timed out before any of its reply came, and the
	// connection is kept (keepAfter): the reply is read and dropped when
	// it comes, and a slot due before then waits for it (slotTiming.behind).
	// owedBy is when the connection is given up on if it has not.
	owed   bool
	owedBy time.Time
	t      wire.Timer // the slot's due time, or the request's deadline (or a waiting slot's)
	// net is the connection's TCP_INFO as last read: when the loop took
	// it over, then after each request long on the wire.
	net netTrack
}

// pollable tells whether the worker's open connection is one the poller
// serves.
func (w *worker) pollable() bool {
	if w.probe.cfg.Poller == nil || w.pc == nil || w.owed {
		return false
	}
	wc := w.pc.conn
	sc, plain := wc.Conn.(*wire.StampedConn)
	if !plain || sc != wc.stamps || w.pc.r.Buffered() > 0 || !wc.guard.Between() {
		return false
	}
	for _, r := range w.reqs {
		if len(r) > maxPolledRequest {
			return false
		}
	}
	return true
}

// handOver gives the worker's open connection, and the worker, to the
// poller (pollable said it may); false keeps both here.
func (w *worker) handOver() bool {
	sc := w.pc.conn.Conn.(*wire.StampedConn)
	fd, err := wire.Dup(sc)
	if err != nil {
		return false
	}
	pc := &pollConn{w: w, fd: fd, remote: sc.RemoteAddr(), guard: w.pc.conn.guard, sent: sc.Sent()}
	// The worker is the loop's once adopted: nothing of it is touched here
	// after that.
	own := w.pc
	w.pc = nil
	w.conn.Store(nil)
	if !w.probe.cfg.Poller.adopt(pc) {
		_ = unix.Close(fd)
		w.pc = own
		w.conn.Store(own.conn)
		return false
	}
	_ = own.Close()
	return true
}

// startLocked starts the loop; false when it cannot be set up. p.mu is held.
func (p *pollShard) startLocked() bool {
	if p.running || p.failed {
		return p.running
	}
	poll, err := wire.NewPoll()
	if err != nil {
		p.failed = true
		return false
	}
	p.running, p.poll = true, poll
	go newPollLoop(p, poll).run()
	return true
}

func newPollLoop(p *pollShard, poll *wire.Poll) *pollLoop {
	l := &pollLoop{p: p, poll: poll, conns: map[int32]*pollConn{}, timers: wire.NewTimerHeap[*pollConn](),
		oob: wire.OOB(), errOOB: wire.ErrOOB()}
	l.rd = resp.NewReader(&l.src, probeReadBuffer)
	return l
}

// adopt queues pc for the loop, starting the loop if it is not running (it
// exits only with an empty inbox, checked under the same lock); false when
// it cannot run.
func (p *pollShard) adopt(pc *pollConn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.startLocked() {
		return false
	}
	p.inbox = append(p.inbox, pc)
	p.wake()
	return true
}

// stopped tells the loop that a probe's context is done.
func (p *pollShard) stopped() {
	p.mu.Lock()
	if p.running {
		p.sweep = true
		p.wake()
	}
	p.mu.Unlock()
}

// wake rouses the loop; p.mu is held.
func (p *pollShard) wake() { p.poll.Wake() }
