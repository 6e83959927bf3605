package prober

import (
	"sync/atomic"
	"time"
)

// schedule is the open-loop timetable of one probe: slot k is due at
// start + k*interval, whatever happened to earlier slots. Workers claim slots in
// order; a slot is never skipped, so a stall cannot hide behind a slow reply.
type schedule struct {
	start    time.Time // carries a monotonic reading
	interval time.Duration
	next     atomic.Int64
}

func newSchedule(start time.Time, interval time.Duration) *schedule {
	return &schedule{start: start, interval: interval}
}

// intervalFor converts a rate in requests per second into the slot spacing.
func intervalFor(rate float64) time.Duration {
	if rate <= 0 {
		return 0
	}
	return time.Duration(float64(time.Second) / rate)
}

// due returns when slot k is due.
func (s *schedule) due(k int64) time.Time {
	return s.start.Add(time.Duration(k) * s.interval)
}

// claim hands out the next slot.
func (s *schedule) claim() (int64, time.Time) {
	k := s.next.Add(1) - 1
	return k, s.due(k)
}

// chargeFrom decides where a request's latency clock starts.
//
// A worker that claimed its slot before the slot was due was idle: it sleeps
// until the slot, and any lateness of that wake-up is the prober's own timer
// (host jitter, measured separately), so the clock starts when it actually
// sends. A worker that claimed a slot already overdue was busy with an earlier
// request that Redis had not answered: the wait is Redis's doing and the clock
// starts at the slot's due time (no coordinated omission).
func chargeFrom(claimed, due, woke time.Time) (start time.Time, lag time.Duration, overdue bool) {
	if claimed.After(due) {
		return due, 0, true
	}
	if !woke.After(due) {
		return woke, 0, false
	}
	return woke, woke.Sub(due), false
}
