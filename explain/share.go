package explain

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
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
//     node of that server had slow requests lately, and the Share keeps
//     the samples' evidence for all of them: each node decides on the
//     same slices, not on copies of its own (at 1,000 nodes of four
//     local servers the copies were much of the prober's heap:
//     docs/performance.md, "Measured reasons"). A task of
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
	mu    sync.Mutex
	procs map[int]*sharedProc
	// logReads is the process's budget of log reads; it has a lock of its
	// own, so a read that is refused never waits on a sample of /proc.
	logReads *rate.Limiter
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
	// maxSharedSamples bounds the samples of one server the Share keeps,
	// whatever the nodes' keep: at most two a ProcInterval are taken,
	// so this is more than a minute and a half of them.
	maxSharedSamples = 2048
)

// NewShare returns a Share for the Readers of one prober.
func NewShare() *Share {
	return &Share{procs: map[int]*sharedProc{}, logReads: rate.NewLimiter(logReadRate, logReadBurst)}
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

// sharedProc is one local server's /proc sampler and the evidence of its
// samples, oldest first, kept as long as the longest keep of the nodes
// that read it. A published sample is never written again, and the slice
// only grows at its end or drops from its front: a node may hold a copy
// of the slice header (Share.take) and read it without the lock.
type sharedProc struct {
	s      procSampler
	at     int64  // the last sample, Unix ns
	seq    uint64 // the samples taken
	ev     []sharedSample
	keep   int64 // how long a sample is kept after its window ends, ns
	wanted int64 // sampled every interval until then, Unix ns
}

// sharedSample is one sample's evidence, with the end of its latest window.
type sharedSample struct {
	to int64
	ev []Evidence
}

// allowLogRead takes one read of the logs from the process's budget.
func (s *Share) allowLogRead(now time.Time) bool {
	if s == nil {
		return true
	}
	return s.logReads.AllowN(now, 1)
}

// procCursor is the server a node reads the shared samples of, and the one
// before it (a restarted server is a new process: what the old one said
// still explains the requests that waited on it).
type procCursor struct {
	sp, prev *sharedProc
	key      int
}

// sharedView is what a node sees of its server's samples: the current
// server's and the previous one's, as slices it must not write.
type sharedView [2][]sharedSample

// take samples own's server when its last sample is at least half an
// interval old and returns what the Share keeps of it, at least keep (ns)
// past each sample's window: own is the node's sampler, attached to its
// server (or not). Every node of the server sees the same slices.
func (s *Share) take(own *procSampler, cur *procCursor, now, keep int64) sharedView {
	key, ok := own.key()
	if !ok {
		return s.viewOf(cur)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sp := s.procs[key]
	if sp == nil {
		// The node's attach checked the process is the one it probes; the
		// shared sampler starts from that.
		sp = &sharedProc{s: own.unsampled(), keep: keep}
		s.procs[key] = sp
	}
	sp.keep = max(sp.keep, keep)
	if cur.sp != sp {
		if cur.sp != nil {
			cur.prev = cur.sp
		}
		cur.sp, cur.key = sp, key
	}
	if now-sp.at >= int64(ProcInterval/2) {
		s.sampleLocked(key, sp, now)
	}
	return sharedView{sp.ev, prevEvidence(cur)}
}

// viewOf is the view of a node whose sampler is not attached (any more):
// what its last servers said, until that is older than they keep it.
func (s *Share) viewOf(cur *procCursor) sharedView {
	if cur.sp == nil && cur.prev == nil {
		return sharedView{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var v sharedView
	if cur.sp != nil {
		v[0] = cur.sp.ev
	}
	v[1] = prevEvidence(cur)
	return v
}

func prevEvidence(cur *procCursor) []sharedSample {
	if cur.prev == nil {
		return nil
	}
	return cur.prev.ev
}

// sampleLocked takes one sample of sp, the server at key, and forgets the
// samples older than it keeps them; a process that is gone is dropped (the
// next attach starts again), its samples left to the nodes that hold them.
func (s *Share) sampleLocked(key int, sp *sharedProc, now int64) bool {
	sp.at = now
	ev := sp.s.sample(now)
	if _, ok := sp.s.key(); !ok {
		delete(s.procs, key)
		return false
	}
	sp.seq++
	if len(ev) > 0 {
		to := ev[0].To
		for _, e := range ev[1:] {
			to = max(to, e.To)
		}
		sp.ev = append(sp.ev, sharedSample{to: to, ev: ev})
	}
	drop := max(0, len(sp.ev)-maxSharedSamples)
	for drop < len(sp.ev) && now-sp.ev[drop].to >= sp.keep {
		drop++
	}
	// Reslicing, neither shifting nor clearing: the nodes' views of the
	// front stay whole (the array goes when append moves the slice).
	sp.ev = sp.ev[drop:]
	return true
}
