package explain

import (
	"sync"
	"time"
)

// Share is what the Readers of one prober share, so that explain's own
// work does not grow with its nodes where it need not. At 1,000 targets on
// four local servers (make bench-scale) every node of a busy host had slow
// requests, so every node sampled its server's /proc ten times a second
// and read its server's slow log and latency events every second: 20,000
// file reads and 2,000 commands a second, which made the host busier and
// the requests slower until the prober used a whole core and most probes
// timed out. With a Share:
//
//   - a local server's /proc is sampled once an interval for all the
//     nodes probing it (by its pid), and each node takes the evidence of
//     the samples it has not seen;
//   - the reads of slow logs and latency events, which only slow requests
//     ask for, are bounded for the whole process (logReadRate a second):
//     on a host so busy that every node waits, a node reads a little later
//     and a slow request may be decided with less, rather than the reads
//     adding to the load that made the requests slow.
//
// The zero Share is not usable; a nil *Share shares nothing and bounds
// nothing (one node alone, tests).
type Share struct {
	mu     sync.Mutex
	procs  map[int]*sharedProc
	tokens float64
	last   time.Time
}

const (
	// logReadRate is how many slow-log reads (with their latency events)
	// the whole process makes a second at most, and logReadBurst how
	// many at once: a few nodes in trouble read every second, a thousand
	// take turns.
	logReadRate  = 50
	logReadBurst = 50
	// sharedSamples is how many samples of a server's /proc a node that
	// fell behind can still take.
	sharedSamples = 64
)

// NewShare returns a Share for the Readers of one prober.
func NewShare() *Share { return &Share{procs: map[int]*sharedProc{}, tokens: logReadBurst} }

// sharedProc is one local server's /proc sampler and its last samples'
// evidence, numbered.
type sharedProc struct {
	s   procSampler
	at  int64 // the last sample, Unix ns
	seq uint64
	ev  []numbered
}

type numbered struct {
	seq uint64
	ev  []Evidence
}

// allowLogRead takes one read of the logs from the process's budget.
func (s *Share) allowLogRead(now time.Time) bool {
	if s == nil {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.last.IsZero() {
		s.tokens = min(logReadBurst, s.tokens+now.Sub(s.last).Seconds()*logReadRate)
	}
	s.last = now
	if s.tokens < 1 {
		return false
	}
	s.tokens--
	return true
}

// procCursor is where a node is in its server's shared samples.
type procCursor struct {
	sp  *sharedProc
	seq uint64
}

// sample is the evidence of own's server since the node's cursor: own is
// the node's sampler, attached to its server (or not); the server's shared
// sampler samples when its last sample is at least half an interval old.
// A node new to a server (or to a restarted one) starts at its next sample.
func (s *Share) sample(own *procSampler, cur *procCursor, now int64) []Evidence {
	if s == nil {
		return own.sample(now)
	}
	key, ok := own.key()
	if !ok {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sp := s.procs[key]
	if sp == nil {
		// The node's attach checked the process is the one it probes; the
		// shared sampler starts from that.
		sp = &sharedProc{s: own.unsampled()}
		s.procs[key] = sp
	}
	if cur.sp != sp {
		*cur = procCursor{sp: sp, seq: sp.seq}
	}
	if now-sp.at >= int64(ProcInterval/2) {
		sp.at = now
		ev := sp.s.sample(now)
		if _, ok := sp.s.key(); !ok {
			delete(s.procs, key) // gone: the next attach starts again
			return nil
		}
		sp.seq++
		if len(ev) > 0 {
			if len(sp.ev) == sharedSamples {
				sp.ev = append(sp.ev[:0], sp.ev[1:]...)
			}
			sp.ev = append(sp.ev, numbered{seq: sp.seq, ev: ev})
		}
	}
	var out []Evidence
	for _, n := range sp.ev {
		if n.seq > cur.seq {
			out = append(out, n.ev...)
		}
	}
	cur.seq = sp.seq
	return out
}
