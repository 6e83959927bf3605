package prober

import (
	"sync/atomic"
	"time"
)

// Timetable is an open-loop timetable: slot k is due at start + k*interval,
// whatever happened to earlier slots. Slots are handed out in order and
// never skipped, so a stall cannot hide behind a slow reply. The steady
// probe claims one slot at a time (Claim) and sleeps until it is due; a
// burst's clients claim the slots already due, a pipeline at a time
// (ClaimDue). With no interval (no rate) every slot is due when claimed.
type Timetable struct {
	start    time.Time // carries a monotonic reading
	interval time.Duration
	next     atomic.Int64
}

// NewTimetable starts a timetable at start, one slot every interval.
func NewTimetable(start time.Time, interval time.Duration) *Timetable {
	return &Timetable{start: start, interval: interval}
}

// IntervalFor converts a rate in requests per second into the slot spacing;
// 0 (no rate) when rate is not positive.
func IntervalFor(rate float64) time.Duration {
	if rate <= 0 {
		return 0
	}
	return time.Duration(float64(time.Second) / rate)
}

// DueAt returns when slot k is due.
func (t *Timetable) DueAt(k int64) time.Time {
	return t.start.Add(time.Duration(k) * t.interval)
}

// Claim hands out the next slot and when it is due.
func (t *Timetable) Claim() (int64, time.Time) {
	k := t.next.Add(1) - 1
	return k, t.DueAt(k)
}

// ClaimDue returns up to max slots already due at now, counted from the
// start (the first slot and their number) or, when none is due, when the
// next one will be. With no interval every slot is due: it returns max.
func (t *Timetable) ClaimDue(now time.Duration, max int) (first int64, n int, wait time.Duration) {
	if t.interval <= 0 {
		return t.next.Add(int64(max)) - int64(max), max, 0
	}
	dueUpTo := int64(now/t.interval) + 1 // slots 0..dueUpTo-1 are due
	for {
		next := t.next.Load()
		if next >= dueUpTo {
			return 0, 0, time.Duration(next) * t.interval
		}
		k := min(int64(max), dueUpTo-next)
		if t.next.CompareAndSwap(next, next+k) {
			return next, int(k), 0
		}
	}
}

// Due is when slot k was meant to go out, counted from the start; with no
// interval, now.
func (t *Timetable) Due(k int64, now time.Duration) time.Duration {
	if t.interval <= 0 {
		return now
	}
	return time.Duration(k) * t.interval
}

// Overdue counts the slots from next (the first not yet taken) that have
// been due for longer than older at now (counted from the start), and the
// age of the oldest: a stalled server leaves them waiting, and they will be
// charged from their due time.
func (t *Timetable) Overdue(next int64, now, older time.Duration) (int64, time.Duration) {
	if t.interval <= 0 || now < older {
		return 0, 0
	}
	dueUpTo := int64((now-older)/t.interval) + 1
	if dueUpTo <= next {
		return 0, 0
	}
	return dueUpTo - next, now - time.Duration(next)*t.interval
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

// heldOnWire splits the wait of an overdue request by the kernel's view of
// its connection: the connection was Redis's until its previous reply
// arrived, or would have for a prober never late (freeAt, see
// worker.charge), and only the part of the wait after the due time and
// before then is Redis's doing (held, charged on top of the request's own
// wire time). What came after, until the worker woke to send, is the
// prober reading late (lag): charged to Redis, a client starved of CPU
// would show as a slow server.
func heldOnWire(due, freeAt, woke time.Time) (held, lag time.Duration) {
	free := freeAt
	if due.After(free) {
		free = due
	}
	return max(freeAt.Sub(due), 0), max(woke.Sub(free), 0)
}
