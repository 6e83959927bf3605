package burst

import (
	"time"
)

// A paced load's slots are handed to its clients by one dispatcher, as a C
// load generator's event loop paces every connection from one thread: it
// sleeps until a slot is due, with nanosecond precision (sleepPrecise, on
// a thread of its own), and hands the slot to whichever client is free,
// by a channel that wakes exactly one of them. Go's timers could not pace:
// they end up to a millisecond late (the netpoller rounds shorter waits
// up), so every client was late on most slots above 1,000 ops/s; and
// every client waiting on the same shared slot woke for each one, a
// thundering herd of fifty clients for every request.
//
// A slot waits in the queue, charged from its due time, only while every
// client is busy with Redis; that is the coordinated-omission case. The
// dispatcher's own lateness is the client's lag, measured apart.

// slotQueue is how many due slots may wait for a free client: beyond it
// the dispatcher waits too (the slots stay due, counted by the governor).
func slotQueue(p Plan) int { return max(4*p.Clients*p.Pipeline, 64) }

// dispatch hands the slots out until the test time ends or the load stops.
func (l *burstLoad) dispatch() {
	defer pinPacing()()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for k := int64(0); ; k++ {
		l.dispatched.Store(k)
		due := l.pacer.Due(k, 0)
		if due >= l.end {
			l.stop(Decision{}, "test-time")
			return
		}
		if wait := due - time.Since(l.t0); wait > 0 {
			if coarse := wait - preciseSpan; coarse > 0 {
				timer.Reset(coarse)
				select {
				case <-timer.C:
				case <-l.stopCh:
					return
				}
			}
			sleepPrecise(l.t0.Add(due))
		}
		select {
		case l.slots <- k:
		case <-l.stopCh:
			return
		}
	}
}

// queuedOverdue counts the slots due for longer than older but not yet
// taken by a client, and the age of the oldest. The governor charges them
// to Redis only when every client has been busy with a request for longer
// than older (otherwise a client would have taken them: the lag is this
// client's).
func (l *burstLoad) queuedOverdue(now, older time.Duration) (int64, time.Duration) {
	if l.plan.Rate <= 0 {
		return 0, 0
	}
	for _, c := range l.clients {
		// A connection free, or busy with a batch it sent only now (a
		// client catching up on its own backlog), would have taken the
		// slots in time: only when Redis has sat on every connection
		// for longer than older are the queued slots Redis's.
		if c.inflightN.Load() == 0 || now-time.Duration(c.inflightFrom.Load()) <= older {
			return 0, 0
		}
	}
	taken := l.taken.Load() // the event loop's
	if l.slots != nil {
		taken = l.dispatched.Load() - int64(len(l.slots))
	}
	return l.pacer.Overdue(taken, now, older)
}
