package wire

import "time"

// LastWrite is when the last write's last byte left, by its kernel stamp,
// and when the write began by the prober's clock; ok is false when the
// stamp is missing or is not of this write.
func (s *StampedConn) LastWrite() (tx, wrote time.Time, ok bool) {
	ex := s.Last()
	if !ex.TX {
		return time.Time{}, ex.WriteAt, false
	}
	if tx, ok = Departure(ex.WriteAt, ex.TXWall); !ok {
		return time.Time{}, ex.WriteAt, false
	}
	return tx, ex.WriteAt, true
}

// LastRead is when the last read's last segment arrived, by its kernel
// stamp, and when the read returned by the prober's clock (their gap is
// the client delay); ok is false without a stamp or when the wall clock
// stepped against the monotonic one.
func (s *StampedConn) LastRead() (rx, read time.Time, ok bool) {
	ex := s.Exchange()
	if !ex.RX || skewed(ex.WriteAt, ex.ReadAt) {
		return time.Time{}, ex.ReadAt, false
	}
	if rx, ok = Arrival(ex.ReadAt, ex.RXWall); !ok {
		return time.Time{}, ex.ReadAt, false
	}
	return rx, ex.ReadAt, true
}
