//go:build linux

package wire

import (
	"runtime"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// PinThread gives the calling goroutine (an event loop) a thread of its
// own with a timer slack of 1 ns: its waits end at due times, and the
// default 50 µs slack would make each up to that late. The returned
// function undoes it: the thread goes back to the runtime with its slack
// reset rather than exit locked, because a thread's exit is a parent
// death to any child process it once forked with Pdeathsig set (the
// tests' redis-servers), and would kill it.
func PinThread() (unpin func()) {
	runtime.LockOSThread()
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	return func() {
		_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 0, 0, 0, 0)
		runtime.UnlockOSThread()
	}
}

// RawWaitMax is the longest wait made raw. To sysmon a raw wait is the
// goroutine running, and it preempts a goroutine that has run for 10 ms:
// on a quiet prober (one target: a slot every 50 ms) that is a signal and
// two thread switches every 10 ms, and more CPU than the goroutines
// (docs/performance.md, "Measured reasons").
const RawWaitMax = 5 * time.Millisecond

// parkEarly is how long before its timer a parked loop wakes, to wait the
// rest raw: a Go timer can be a millisecond late.
const parkEarly = 2 * time.Millisecond

// Poll is an epoll set with an eventfd that wakes its waits, and the
// state of its waits: the core of an event loop, used by one goroutine.
type Poll struct {
	epfd, evfd int
	events     [64]unix.EpollEvent
	noPwait2   bool // the kernel has no epoll_pwait2 (before 5.11)
	ts         unix.Timespec
	park       *time.Timer // a long wait's timer
	// woken wakes a wait parked on a Go timer, as evfd does one in epoll.
	woken chan struct{}
}

var one = [8]byte{1}

// NewPoll creates the epoll set and its eventfd.
func NewPoll() (*Poll, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	evfd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err == nil {
		err = unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, evfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(evfd)})
		if err != nil {
			unix.Close(evfd)
		}
	}
	if err != nil {
		unix.Close(epfd)
		return nil, err
	}
	return &Poll{epfd: epfd, evfd: evfd, woken: make(chan struct{}, 1)}, nil
}

// Close closes the epoll set and the eventfd.
func (p *Poll) Close() {
	unix.Close(p.evfd)
	unix.Close(p.epfd)
}

// Wake rouses a wait, from any goroutine.
func (p *Poll) Wake() {
	_, _ = unix.Write(p.evfd, one[:])
	select {
	case p.woken <- struct{}{}:
	default:
	}
}

// IsWake tells whether an event is the eventfd's (a Wake), and clears it.
func (p *Poll) IsWake(ev unix.EpollEvent) bool {
	if int(ev.Fd) != p.evfd {
		return false
	}
	var b [8]byte
	_, _ = unix.Read(p.evfd, b[:])
	return true
}

// Add watches fd for events (unix.EPOLLIN, EPOLLOUT; errors always).
func (p *Poll) Add(fd int, events uint32) error {
	return unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: events, Fd: int32(fd)})
}

// Modify changes the events fd is watched for.
func (p *Poll) Modify(fd int, events uint32) error {
	return unix.EpollCtl(p.epfd, unix.EPOLL_CTL_MOD, fd, &unix.EpollEvent{Events: events, Fd: int32(fd)})
}

// Remove stops watching fd.
func (p *Poll) Remove(fd int) { _ = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, fd, nil) }

// Wait blocks until an event, a Wake or until (never when until is zero),
// and returns the events. busy says replies are expected soon (requests
// are out): the wait then never parks on a Go timer.
//
// A short wait is a raw system call, one the Go runtime does not see: to
// the scheduler the loop's goroutine is running, not in a system call.
// Seen, a thread blocked in a system call has its P taken away by sysmon
// as soon as another goroutine could use it, and at thousands of waits a
// second that kept sysmon polling every 20 µs, handed Ps back and forth
// and woke threads for nothing, and the prober used more CPU than the
// goroutines the loop replaced (docs/performance.md, "Measured reasons"). The
// loop keeps its P while it waits instead (so GOMAXPROCS counts it), and
// the runtime can still stop it: sysmon's preemption and the GC's
// stop-the-world signal the thread, the wait returns EINTR (no events),
// and the goroutine reaches a safe point at once. Only a short wait is
// raw (RawWaitMax).
func (p *Poll) Wait(until time.Time, busy bool) []unix.EpollEvent {
	var ts *unix.Timespec
	var left time.Duration = -1
	if !until.IsZero() {
		left = max(time.Until(until), 0)
		p.ts = unix.NsecToTimespec(left.Nanoseconds())
		ts = &p.ts
	}
	if !busy && (ts == nil || left >= RawWaitMax) {
		// Nothing is expected for a while: the loop parks on a Go
		// timer, holding neither its P nor a system call, until
		// shortly before its next timer or until woken; the rest of the
		// wait is short and raw, so the timer is still on time. Raw, a
		// long wait looks to sysmon like a goroutine running for over
		// 10 ms, preempted with a signal and two thread switches every
		// 10 ms; seen as a system call, it has its P retaken, and
		// sysmon polls every 20 µs for a while after each retake.
		// Either doubled the CPU of one probe target.
		p.parkFor(left)
		ts = &p.ts // events that came meanwhile are taken at once
		left = 0
		if !until.IsZero() {
			left = max(time.Until(until), 0)
		}
		p.ts = unix.NsecToTimespec(left.Nanoseconds())
	}
	call := unix.RawSyscall6
	if ts == nil || left >= RawWaitMax {
		// A reply awaited long (a stalled server): the runtime may
		// see this one.
		call = unix.Syscall6
	}
	if !p.noPwait2 {
		r, _, e := call(unix.SYS_EPOLL_PWAIT2, uintptr(p.epfd), uintptr(unsafe.Pointer(&p.events[0])),
			uintptr(len(p.events)), uintptr(unsafe.Pointer(ts)), 0, 0)
		if e == 0 {
			return p.events[:r]
		}
		if e != unix.ENOSYS {
			return nil // EINTR: go round
		}
		p.noPwait2 = true
	}
	// Milliseconds, rounded up: the lateness is schedule lag, not charged.
	ms := -1
	if left >= 0 {
		ms = int((left + time.Millisecond - 1) / time.Millisecond)
	}
	r, _, e := call(unix.SYS_EPOLL_PWAIT, uintptr(p.epfd), uintptr(unsafe.Pointer(&p.events[0])),
		uintptr(len(p.events)), uintptr(ms), 0, 0)
	if e != 0 {
		return nil
	}
	return p.events[:r]
}

// parkFor parks the loop's goroutine for about d (d < 0: until woken).
func (p *Poll) parkFor(d time.Duration) {
	if d >= 0 && d-parkEarly <= 0 {
		return
	}
	var fired <-chan time.Time
	if d >= 0 {
		if p.park == nil {
			p.park = time.NewTimer(d - parkEarly)
		} else {
			p.park.Reset(d - parkEarly)
		}
		fired = p.park.C
		defer p.park.Stop()
	}
	select {
	case <-fired:
	case <-p.woken:
	}
}

// RawWrite is write(2) on a loop's non-blocking socket, made raw: it
// never blocks, so the runtime need not hand the loop's P over for it.
func RawWrite(fd int, b []byte) (int, error) {
	for {
		r, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return int(r), nil
	}
}

// Yield gives the CPU to a thread the last write woke, if the kernel put
// it on this CPU (a sync wake-up: the writer is expected to wait for the
// answer, as a blocking client does at once). Until then the request
// waits behind this thread's own work, inside the two kernel stamps, as
// if the server were slower; where the server runs elsewhere this is one
// cheap system call. It brings the probe's wire mean closer to the C
// client's (docs/performance.md, "Measured reasons").
func Yield() { _, _, _ = unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }

// Dup gives a loop a descriptor of its own for a Go socket: closing Go's
// then takes the socket out of the netpoller, whose events for it would
// otherwise wake the Go scheduler on every reply.
func Dup(c syscall.Conn) (int, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	if cerr := rc.Control(func(f uintptr) { fd, err = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0) }); cerr != nil {
		return -1, cerr
	}
	return fd, err
}
