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
//     nodes probing it (by its pid), by one loop of the Share's while a
//     node of that server had slow requests lately, and each node takes
//     the evidence of the samples it has not seen at its tick. A task of
//     each node's own woke its housekeeping ten times a second, healthy or
//     not: 10,000 wake-ups a second at 1,000 local targets, and ten a
//     second for nothing beside a healthy sidecar;
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
	// The sampling loop runs while the Share has users (Hold) and a
	// server is wanted; stop is nil while it does not run.
	users int
	stop  chan struct{}
	done  chan struct{}
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
func NewShare() *Share {
	return &Share{procs: map[int]*sharedProc{}, tokens: logReadBurst}
}

// Hold counts a user of the Share (a node of the engine); Release ends the
// use, and stops the sampling loop when it was the last.
func (s *Share) Hold() {
	s.mu.Lock()
	s.users++
	s.mu.Unlock()
}

// Release ends a use begun by Hold; the last one returns once the sampling
// loop has stopped.
func (s *Share) Release() {
	s.mu.Lock()
	s.users--
	var done chan struct{}
	if s.users == 0 && s.stop != nil {
		close(s.stop)
		done, s.stop = s.done, nil
	}
	s.mu.Unlock()
	if done != nil {
		<-done
	}
}

// want has the loop sample the server of the node at cur every
// ProcInterval until until (Unix ns): the node had slow requests lately.
// Nothing while the node has no server sampled (not local, or not attached
// yet: its tick attaches it).
func (s *Share) want(cur *procCursor, until int64) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wantLocked(cur, until)
}

// kick is want from the probe's goroutine, which never waits on the lock
// (a sample of /proc may hold it): when it is taken, the node's next tick
// wants the server instead, a second later at most.
func (s *Share) kick(cur *procCursor, until int64) {
	if !s.mu.TryLock() {
		return
	}
	defer s.mu.Unlock()
	s.wantLocked(cur, until)
}

func (s *Share) wantLocked(cur *procCursor, until int64) {
	if cur.sp == nil || s.procs[cur.key] != cur.sp {
		return
	}
	cur.sp.wanted = max(cur.sp.wanted, until)
	if s.users > 0 && s.stop == nil {
		s.stop, s.done = make(chan struct{}), make(chan struct{})
		go s.loop(s.stop, s.done)
	}
}

// loop samples every wanted server each ProcInterval, and ends when none
// is wanted any more or the last user is gone.
func (s *Share) loop(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(ProcInterval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		if !s.sampleWanted(stop) {
			return
		}
	}
}

// sampleWanted samples the servers wanted now; false when there are none
// (the loop is then marked stopped, under the lock, so a want starts
// another).
func (s *Share) sampleWanted(stop <-chan struct{}) bool {
	now := time.Now().UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	wanted := false
	for key, sp := range s.procs {
		if sp.wanted > now {
			wanted = true
			s.sampleLocked(key, sp, now)
		}
	}
	if !wanted && s.stop == stop {
		s.stop = nil
	}
	return wanted
}

// sharedProc is one local server's /proc sampler and its last samples'
// evidence, numbered.
type sharedProc struct {
	s      procSampler
	at     int64 // the last sample, Unix ns
	seq    uint64
	ev     []numbered
	wanted int64 // sampled every interval until then, Unix ns
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
	key int
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
		*cur = procCursor{sp: sp, key: key, seq: sp.seq}
	}
	if now-sp.at >= int64(ProcInterval/2) && !s.sampleLocked(key, sp, now) {
		return nil
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

// sampleLocked takes one sample of sp, the server at key; false when the
// process is gone (then dropped: the next attach starts again).
func (s *Share) sampleLocked(key int, sp *sharedProc, now int64) bool {
	sp.at = now
	ev := sp.s.sample(now)
	if _, ok := sp.s.key(); !ok {
		delete(s.procs, key)
		return false
	}
	sp.seq++
	if len(ev) > 0 {
		if len(sp.ev) == sharedSamples {
			sp.ev = append(sp.ev[:0], sp.ev[1:]...)
		}
		sp.ev = append(sp.ev, numbered{seq: sp.seq, ev: ev})
	}
	return true
}
