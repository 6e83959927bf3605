package prober

import (
	"errors"
	"time"
)

// Clock names the clock a node's probe latency is read from, for the clock
// label of redis_prober_probe_clock_info.
type Clock string

const (
	// ClockKernel: the kernel's software timestamps of each request leaving
	// and each reply arriving (SO_TIMESTAMPING). The prober's own
	// scheduling is out of the figure.
	ClockKernel Clock = "kernel"
	// ClockUser: the prober's own monotonic clock around the request, where
	// the kernel gives no stamps (unix sockets, other systems, a kernel
	// that refuses the option).
	ClockUser Clock = "user"
)

// errNoStamps says this connection cannot carry kernel timestamps.
var errNoStamps = errors.New("kernel timestamps are not available on this connection")

// exchange is what a stamped connection knows of its last request and reply.
// Kernel stamps are CLOCK_REALTIME readings without a monotonic part;
// writeAt and readAt are time.Now() readings (with one) taken just before the
// last write and just after the last read, which relate the two clocks.
type exchange struct {
	writeAt, txWall time.Time // txWall: the kernel's stamp of the write's last byte leaving
	readAt, rxWall  time.Time // rxWall: the kernel's stamp of the last read's last segment arriving
	tx, rx          bool      // whether each stamp is there (and belongs to this write)
}

// maxClockSkew is how far the wall clock may drift from the monotonic one
// over one request before its stamps are not trusted: NTP slews at most
// 500 ppm (0.5 µs a millisecond), so more than this is a step.
const maxClockSkew = 50 * time.Microsecond

// wireTiming turns an exchange into the request's wire latency and the
// client delay (reply in the kernel → read by the prober). start is where
// the user-space clock started the request and end where it stopped; from
// is the request's due time when it was overdue (charged from there), else
// zero (charged from the kernel's TX stamp). ok is false when the stamps
// are missing or disagree with the monotonic clock (a clock step, a stamp
// of another write): the caller then keeps its own reading.
func wireTiming(ex exchange, from, start, end time.Time) (d, delay time.Duration, ok bool) {
	if !ex.rx || (from.IsZero() && !ex.tx) || ex.readAt.Before(start) || ex.readAt.After(end) {
		return 0, 0, false
	}
	// time.Time.Sub uses the monotonic clock when both readings have one,
	// the wall clock otherwise; Round(0) strips the monotonic reading.
	if skew := ex.readAt.Round(0).Sub(start.Round(0)) - ex.readAt.Sub(start); skew > maxClockSkew || skew < -maxClockSkew {
		return 0, 0, false
	}
	delay = ex.readAt.Sub(ex.rxWall) // wall: rxWall has no monotonic reading
	rxMono := ex.readAt.Add(-delay)  // keeps readAt's monotonic reading
	begin := from
	if begin.IsZero() {
		begin = ex.writeAt.Add(ex.txWall.Sub(ex.writeAt))
		if begin.Before(ex.writeAt) {
			return 0, 0, false // left before it was written: not its stamp
		}
	}
	d = rxMono.Sub(begin)
	if delay < 0 || d < 0 || d > end.Sub(begin) || rxMono.Before(begin) {
		return 0, 0, false
	}
	return d, delay, true
}
