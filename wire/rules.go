package wire

import "time"

// The rules about a probe connection after a request met its deadline,
// written once for the event loop and the goroutine path.

// Kept is what a request that met its deadline leaves of its connection.
type Kept int

const (
	// Drop: the connection is out of step (a timeout amid a reply, more
	// replies than requests) or failed: it is closed and a new one opened.
	Drop Kept = iota
	// KeepOwed: none of the reply has come: the connection is kept, the
	// reply is read and dropped when it comes, and a slot due before then
	// waits for it.
	KeepOwed
	// KeepInStep: the whole reply came, after the deadline: the stream is
	// in step and the connection serves the next slot as it is.
	KeepInStep
)

// AfterTimeout says what a timed-out request leaves of its connection:
// replies is how many whole replies the connection read since the request
// went out, between whether its reader stands between two replies (no
// partial reply read or buffered). A connection given up on for every late
// reply costs a loaded host a connect and the server a new client each
// time, which keeps the replies late (docs/performance.md, "Measured
// reasons").
func AfterTimeout(replies uint64, between bool) Kept {
	if !between {
		return Drop
	}
	switch replies {
	case 0:
		return KeepOwed
	case 1:
		return KeepInStep
	}
	return Drop
}

// OwedPatience is how many timeouts past its deadline a connection waits
// for an owed reply before it is given up on and a new one opened: long
// enough for the late replies of a loaded server, short enough that a
// connection whose peer is gone (a failover, a path that lost its state)
// is not kept for long after a new one would work.
const OwedPatience = 2

// OwedBy is when a connection that owes the reply of a request due back
// by deadline is given up on.
func OwedBy(deadline time.Time, timeout time.Duration) time.Time {
	return deadline.Add(OwedPatience * timeout)
}

// ReplyArrival is when the reply's last bytes reached the kernel, on the
// monotonic clock, by its RX stamp; without one it is when the reply was
// read (the request is then timed by the prober's own clock).
func ReplyArrival(ex Exchange) time.Time {
	if !ex.RX {
		return ex.ReadAt
	}
	return ex.ReadAt.Add(-ex.ReadAt.Round(0).Sub(ex.RXWall))
}

// LateReply says a reply read at or after its request's deadline arrived
// after it: the request is then a timeout at its true age, not an answer.
// A reply already in the socket by its deadline (by its kernel stamp) is
// an answer, however late the loop was to read it.
func LateReply(ex Exchange, deadline time.Time) bool {
	return ReplyArrival(ex).After(deadline)
}
