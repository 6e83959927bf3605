//go:build linux

package burst

import (
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// preciseSpan is the end of a wait slept in nanosleep(2) rather than on a
// Go timer (which can be a millisecond late).
const preciseSpan = 2 * time.Millisecond

// pinPacing gives the dispatcher a thread of its own with a timer slack
// of 1 ns (50 µs by default); the returned function undoes it. The thread
// goes back to the runtime with its slack reset rather than exit locked
// (an exiting thread is a parent death to the children it forked with
// Pdeathsig set, such as the tests' redis-servers).
func pinPacing() (unpin func()) {
	runtime.LockOSThread()
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	return func() {
		_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 0, 0, 0, 0)
		runtime.UnlockOSThread()
	}
}

// sleepPrecise sleeps until deadline, a short span (at most preciseSpan).
// The sleep is a raw system call, one the Go runtime does not see: seen,
// the dispatcher's P would be handed off while it sleeps, and the client
// it just woke could wait for sysmon to notice (20 µs to 10 ms) before it
// ran. Raw, the P stays with the dispatcher and the woken client is taken
// by another P at once, as the probe's event loop does (prober's
// pollLoop.wait); a signal (preemption, GC) ends the sleep with EINTR.
func sleepPrecise(deadline time.Time) {
	var ts unix.Timespec
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		ts = unix.NsecToTimespec(left.Nanoseconds())
		_, _, e := unix.RawSyscall(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
		if e != 0 && e != unix.EINTR {
			return
		}
	}
}
