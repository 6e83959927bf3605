package wire

import (
	"errors"
	"time"
)

// Clock names the clock a request's latency is read from, for the clock
// label of redis_prober_probe_clock_info and a burst's report.
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

// ErrNoStamps says this connection cannot carry kernel timestamps.
var ErrNoStamps = errors.New("kernel timestamps are not available on this connection")

// Exchange is what a stamped connection knows of its last request and
// reply. Kernel stamps are CLOCK_REALTIME readings without a monotonic
// part; WriteAt and ReadAt are time.Now() readings (with one) taken just
// before the last write and just after the last read, which relate the
// two clocks.
type Exchange struct {
	WriteAt, TXWall time.Time // TXWall: the kernel's stamp of the write's last byte leaving
	ReadAt, RXWall  time.Time // RXWall: the kernel's stamp of the last read's last segment arriving
	TX, RX          bool      // whether each stamp is there (and belongs to this write)
}

// MaxClockSkew is how far the wall clock may drift from the monotonic one
// over one request before its stamps are not trusted: NTP slews at most
// 500 ppm (0.5 µs a millisecond), so more than this is a step.
const MaxClockSkew = 50 * time.Microsecond

// Timing turns an exchange into the request's wire latency and the
// client delay (reply in the kernel → read by the prober). start is where
// the user-space clock started the request and end where it stopped; from
// is the request's due time when it was overdue (charged from there), else
// zero (charged from the kernel's TX stamp). ok is false when the stamps
// are missing or disagree with the monotonic clock (a clock step, a stamp
// of another write): the caller then keeps its own reading.
func Timing(ex Exchange, from, start, end time.Time) (d, delay time.Duration, ok bool) {
	if !ex.RX || (from.IsZero() && !ex.TX) || ex.ReadAt.Before(start) || ex.ReadAt.After(end) {
		return 0, 0, false
	}
	// time.Time.Sub uses the monotonic clock when both readings have one,
	// the wall clock otherwise; Round(0) strips the monotonic reading.
	if skewed(start, ex.ReadAt) {
		return 0, 0, false
	}
	delay = ex.ReadAt.Sub(ex.RXWall) // wall: RXWall has no monotonic reading
	rxMono := ex.ReadAt.Add(-delay)  // keeps ReadAt's monotonic reading
	begin := from
	if begin.IsZero() {
		var ok bool
		if begin, ok = Departure(ex.WriteAt, ex.TXWall); !ok {
			return 0, 0, false
		}
	}
	d = rxMono.Sub(begin)
	if delay < 0 || d < 0 || d > end.Sub(begin) || rxMono.Before(begin) {
		return 0, 0, false
	}
	return d, delay, true
}

// skewed tells whether the wall clock stepped against the monotonic one
// between two time.Now readings.
func skewed(a, b time.Time) bool {
	skew := b.Round(0).Sub(a.Round(0)) - b.Sub(a)
	return skew > MaxClockSkew || skew < -MaxClockSkew
}

// Departure is a write's TX stamp on the monotonic clock: wrote is
// time.Now just before the write, tx the kernel's wall-clock stamp of its
// last byte. ok is false when the stamp is before the write (not its own).
func Departure(wrote, tx time.Time) (time.Time, bool) {
	at := wrote.Add(tx.Sub(wrote.Round(0)))
	if at.Before(wrote) {
		return time.Time{}, false
	}
	return at, true
}

// Arrival is a read's RX stamp on the monotonic clock: read is time.Now
// just after the read, rx the kernel's wall-clock stamp of its last
// segment arriving. ok is false when the gap between them is negative or
// over a minute (the wall clock stepped).
func Arrival(read, rx time.Time) (time.Time, bool) {
	delay := read.Round(0).Sub(rx)
	if delay < 0 || delay > time.Minute {
		return time.Time{}, false
	}
	return read.Add(-delay), true
}
