package prober

import (
	"net"
	"time"
)

// KernelStamps gives a burst connection the kernel's timestamps of its
// traffic, as probe connections have them: the departure of its last
// write and the arrival of its last read, each on the monotonic clock (so
// they compare with time.Now readings). It is the wire layer's timing for
// load; the probe's event loop uses the same socket option and parsing.
type KernelStamps struct{ sc *stampConn }

// StampLoad turns kernel timestamps on for c, a connected TCP socket that
// carries load (many requests in flight): it returns the connection to
// use in c's place (TLS goes on top of it, so its stamps are the records')
// and its stamps. It fails where the kernel gives no stamps (unix sockets,
// other systems); the caller then times by its own clock.
func StampLoad(c net.Conn) (net.Conn, *KernelStamps, error) {
	sc, err := enableStamps(c)
	if err != nil {
		return nil, nil, err
	}
	// A burst's reads must not take the probes' one blocking-wait slot.
	sc.load = true
	return sc, &KernelStamps{sc: sc}, nil
}

// LastWrite is when the last write's last byte left, by its kernel stamp,
// and when the write began by the prober's clock; ok is false when the
// stamp is missing or is not of this write.
func (k *KernelStamps) LastWrite() (tx, wrote time.Time, ok bool) {
	ex := k.sc.last()
	if !ex.tx {
		return time.Time{}, ex.writeAt, false
	}
	tx = ex.writeAt.Add(ex.txWall.Sub(ex.writeAt.Round(0)))
	if tx.Before(ex.writeAt) {
		return time.Time{}, ex.writeAt, false // left before it was written: not its stamp
	}
	return tx, ex.writeAt, true
}

// LastRead is when the last read's last segment arrived, by its kernel
// stamp, and when the read returned by the prober's clock (their gap is
// the client delay); ok is false without a stamp or when the wall clock
// stepped against the monotonic one.
func (k *KernelStamps) LastRead() (rx, read time.Time, ok bool) {
	ex := k.sc.ex
	if !ex.rx {
		return time.Time{}, ex.readAt, false
	}
	delay := ex.readAt.Round(0).Sub(ex.rxWall)
	if delay < 0 || delay > time.Minute {
		return time.Time{}, ex.readAt, false
	}
	if skew := ex.readAt.Round(0).Sub(ex.writeAt.Round(0)) - ex.readAt.Sub(ex.writeAt); skew > maxClockSkew || skew < -maxClockSkew {
		return time.Time{}, ex.readAt, false
	}
	return ex.readAt.Add(-delay), ex.readAt, true
}
