package explain

import "time"

// Evidence is one thing a source saw on the node's timeline: a stall of
// the main thread (a fork, a slow command, a latency event) or a state
// that held (a child process running, keys being evicted), somewhere in
// [From, To]. The window is as wide as the source's resolution: a fork
// seen between two INFO reads lies between them; a SLOWLOG entry, stamped
// in whole server seconds, ended within that second. Times are Unix
// nanoseconds on the prober's clock (server times are moved by the clock
// offset, see clockOffset).
type Evidence struct {
	Cause    Cause
	From, To int64
	// Dur is how long the stall lasted, when the source says (latest_fork_usec,
	// a SLOWLOG entry's duration, a latency event's milliseconds, a run
	// delay); 0 for a state that held, whose cost the source does not give.
	Dur time.Duration
	// Spread says Dur is a total over the whole window (a run delay, the
	// CPU time of expiry or of a fork child), so a request is charged only
	// its share of it, by overlap; otherwise Dur is one stall somewhere in
	// the window, which a request overlapping the window may have met
	// whole.
	Spread bool
	// Rise says Dur is how far a round trip rose over the path's own
	// minimum (the network's held rise): a queue on the path, or a server
	// late to reply, which lengthens the kernel's round-trip samples too.
	// So it is a stall of the network only beyond what the server causes
	// overlapping the request could have delayed it, and otherwise a
	// state (see Decide). Only network evidence is a rise.
	Rise bool
}

// Request is one slow probe request as the attribution sees it.
type Request struct {
	End     int64         // Unix ns: the reply's arrival in the kernel (its RX stamp), or its read
	Latency time.Duration // as charged (from its TX stamp or due time)
	// UserClock: the request was timed by the prober's own clock, so this
	// host's delays are in its figure.
	UserClock bool
}

// Start is when the request's charge began.
func (r Request) Start() int64 { return r.End - int64(r.Latency) }

// Decide attributes a slow request (latency at or above threshold) to one
// cause, from the evidence whose window overlaps the request:
//
//  1. a cause whose stalls, added up, account for it wins: the request's
//     latency less their durations is under the threshold, so without
//     them it would not have been slow;
//  2. else the cause whose stalls cover the most of its latency, if at
//     least half of it;
//  3. else a cause that merely coincides with it: a state that held,
//     stalls too short for the above but of at least half the threshold,
//     or a total spread over a window (a run delay) of at least half the
//     threshold that would pass step 1 or 2 had all of it fallen on this
//     request. A run delay is not
//     spread evenly: the scheduler makes the server wait in whole ticks
//     (4 ms at HZ=250) and only when it has work, which is when requests
//     come, so a window's 4 ms is often one request's 4 ms;
//  4. else Unexplained.
//
// Within steps 1 and 3 the first cause in the order of precedence (the
// order of the Cause constants) wins. Host evidence counts only for a
// request timed by the prober's own clock: a kernel-stamped latency has
// this host's delays out of its figure already.
//
// A round trip that rose and held (Evidence.Rise) is a network stall in
// steps 1 and 2 only by what is left of it once the server causes
// overlapping the request have had their due: a server late to reply
// lengthens the round trip by as much as it was late, at most the stalls
// and whole run delays (as in step 3) its sources give, so the rise less
// those is the path's own queue. A server state that held (a fork child, a
// defrag), whose cost no source gives, may have been all of the rise: then
// the rise is a state only. What is not a stall is a state in step 3,
// after every server cause. So a congested link is network by its size,
// beside a run delay of a few ms that only coincides; a fork or a slow
// command that accounts still wins by precedence, and a server whose run
// delay could have been the whole rise is still redis_cpu.
func Decide(r Request, threshold time.Duration, ev []Evidence) Cause {
	var t tally
	t.add(r, ev)
	return t.decide(r, threshold)
}

// tally is what the evidence overlapping one request adds up to, by cause.
// The order of the evidence does not matter, so it may come in several
// slices (a node's own and its server's shared samples).
type tally struct {
	timed, whole [NumCauses]time.Duration
	state        [NumCauses]bool
	rise         time.Duration // the largest rise of the round trip over the request
}

func (t *tally) add(r Request, ev []Evidence) {
	from, to := r.Start(), r.End
	for _, e := range ev {
		if e.Cause >= Unexplained || e.To < from || e.From > to {
			continue
		}
		if e.Cause == Host && !r.UserClock {
			continue
		}
		if e.Rise && e.Cause == Network {
			// Several connections' views of the same path: the largest.
			t.rise = max(t.rise, min(e.Dur, r.Latency))
			t.state[e.Cause] = true
			continue
		}
		d, all := e.Dur, e.Dur
		if e.Spread && e.To > e.From {
			overlap := min(e.To, to) - max(e.From, from)
			d = time.Duration(float64(e.Dur) * float64(overlap) / float64(e.To-e.From))
			all = min(e.Dur, time.Duration(overlap))
		}
		t.whole[e.Cause] += all
		if e.Dur == 0 {
			t.state[e.Cause] = true
		}
		t.timed[e.Cause] += d
	}
}

// decide is Decide on what the tally added up.
func (t *tally) decide(r Request, threshold time.Duration) Cause {
	timed, whole, state, rise := t.timed, t.whole, t.state, t.rise
	// The most the server's own causes can have delayed the request: a
	// rise beyond it is the path's. A state of unknown cost may have been
	// all of it; a starved server's state (redis_cpu) costs its run delay.
	var late time.Duration
	for c := range Network {
		if state[c] && c != RedisCPU {
			late = rise
			break
		}
		late += whole[c]
	}
	pathRise := rise > late
	if pathRise {
		timed[Network] += rise - late
	}
	for c := range Unexplained {
		if timed[c] > 0 && r.Latency-timed[c] < threshold {
			return c
		}
	}
	best := Unexplained
	for c := range Unexplained {
		if timed[c] > 0 && 2*timed[c] >= r.Latency && (best == Unexplained || timed[c] > timed[best]) {
			best = c
		}
	}
	if best != Unexplained {
		return best
	}
	if pathRise {
		// Bigger than every server cause that coincides, together.
		return Network
	}
	for c := range Unexplained {
		// A stall too short to matter (under half the threshold) is no
		// coincidence worth naming.
		could := whole[c] >= threshold/2 && (r.Latency-whole[c] < threshold || 2*whole[c] >= r.Latency)
		if state[c] || timed[c] >= threshold/2 || could {
			return c
		}
	}
	return Unexplained
}
