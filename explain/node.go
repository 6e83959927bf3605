package explain

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis-prober/redis-prober/prober"
)

// Bounds of a node's memory, whatever the traffic.
const (
	// maxPending bounds the slow requests waiting for their sources: at
	// the defaults (10 requests a second, a 1 s timeout) a node has at
	// most a few dozen. When full, the oldest is decided at once.
	maxPending = 1024
	// maxEvidence bounds what is kept of the timeline; the oldest goes,
	// a quarter at a time (one copy, not one a piece of evidence).
	maxEvidence = 1024
	// evidenceLag is how late a source may add evidence of a moment
	// (the slow log read a second or two after its entry) beyond the
	// request's wait: with decideBy and the longest request it makes
	// how long evidence is kept (Config.MaxLatency).
	evidenceLag = 5 * time.Second
	// defaultMaxLatency stands in for a node without a probe timeout:
	// evidence is then kept a minute.
	defaultMaxLatency = 45 * time.Second
	// decideBy is how long a slow request waits for its sources at most:
	// a source that does not answer (Redis down, an ACL) does not hold
	// the counters back.
	decideBy = 10 * time.Second
	// TimelineMinutes is how far back Node.Timeline goes.
	TimelineMinutes = 60
)

// Config is a node's attribution settings.
type Config struct {
	// Objective is the node's p99 objective (0: DefaultObjective).
	Objective time.Duration
	// Threshold, when set, is the threshold in force, fixed; otherwise it
	// follows the node's own p99 (see BaselineFactor).
	Threshold time.Duration
	// MaxLatency is the longest a probe request lasts (the probe's
	// timeout; 0: 45 s). Evidence is kept only as long as a waiting
	// request could overlap it: decideBy + MaxLatency + evidenceLag, 16 s
	// at the defaults. At a thousand nodes of a busy host the evidence
	// was most of explain's memory when it was kept a minute.
	MaxLatency time.Duration
}

// keepEvidence is how long evidence is kept.
func (c Config) keepEvidence() time.Duration {
	m := c.MaxLatency
	if m <= 0 {
		m = defaultMaxLatency
	}
	return decideBy + m + evidenceLag
}

type pendingReq struct {
	Request
	threshold time.Duration
}

// Node attributes the slow requests of one node. Its Tap sees the probe's
// samples (the hot path: an atomic add, and a lock only for a slow one);
// its sources add evidence and decide the requests whose sources have all
// been read past their end (Settle).
type Node struct {
	cfg       Config
	threshold atomic.Int64 // ns, the threshold in force
	delay     atomic.Int64 // the client delay of the request being recorded; -1: none
	now       func() time.Time

	base     baseline
	settles  atomic.Int64
	lastSlow atomic.Int64 // Unix ns of the last slow request seen
	// onHot, when set (before the node's first sample), is told of a slow
	// request after none for procHot, on the probe's goroutine.
	onHot func(at int64)

	mu       sync.Mutex
	pending  []pendingReq
	evidence []Evidence
	// shared is what the /proc samples of the node's server say, as the
	// Share keeps them for every node of that server (Share.take): read,
	// never written, never copied.
	shared sharedView
	counts [NumCauses]uint64
	// minutes count the requests decided by minute, by cause, oldest
	// first: the status page's timeline and the 5-minute share. Only the
	// minutes that had slow requests are here, the last TimelineMinutes
	// at most, so a node without any holds none (a fixed array of an hour
	// was on every node: docs/performance.md, "Measured reasons").
	minutes []minuteCounts
	// keySizes are INFO KEYSIZES's largest bins as read in the last
	// second slow requests waited (Redis 8+; empty elsewhere).
	keySizes KeySizes
}

// NewNode returns a node's attribution, with the threshold at the objective
// (or the fixed threshold) until the baseline fills.
func NewNode(cfg Config) *Node {
	n := &Node{cfg: cfg, now: time.Now}
	n.delay.Store(-1)
	th := cfg.Threshold
	if th <= 0 {
		th = thresholdFor(cfg.Objective, 0, false)
	}
	n.threshold.Store(int64(th))
	return n
}

// Threshold is the threshold in force.
func (n *Node) Threshold() time.Duration { return time.Duration(n.threshold.Load()) }

// Tap returns a Recorder that records into rec and shows every sample to
// n as well.
func (n *Node) Tap(rec prober.Recorder) prober.Recorder { return tap{Recorder: rec, n: n} }

type tap struct {
	prober.Recorder
	n *Node
}

// RecordClientDelay comes just before the Record of the same request (the
// probe's worker calls both in turn), so the delay is held for it.
func (t tap) RecordClientDelay(d time.Duration) {
	t.Recorder.RecordClientDelay(d)
	t.n.delay.Store(int64(d))
	if d >= MinThreshold {
		now := t.n.now().UnixNano()
		t.n.addEvidence(Evidence{Cause: Host, From: now - int64(d), To: now, Dur: d})
	}
}

func (t tap) Record(cmd int, res prober.Result, d time.Duration) {
	t.Recorder.Record(cmd, res, d)
	t.n.Observe(res, d)
}

// Observe takes one probe sample, recorded just now. A request with a
// client delay held for it (RecordClientDelay) was timed by the kernel's
// stamps, and its reply arrived that long ago; any other was timed by the
// prober's own clock and ends now. Error replies are not latency (a
// refused request answers at once) and are left out.
func (n *Node) Observe(res prober.Result, d time.Duration) {
	delay := n.delay.Swap(-1)
	if res == prober.ResultError {
		return
	}
	n.base.add(d)
	th := n.threshold.Load()
	if int64(d) < th {
		return
	}
	r := Request{End: n.now().UnixNano(), Latency: d, UserClock: delay < 0}
	if prev := n.lastSlow.Swap(r.End); n.onHot != nil && r.End-prev > int64(procHot) {
		n.onHot(r.End)
	}
	if delay > 0 {
		r.End -= delay
	}
	n.mu.Lock()
	if len(n.pending) >= maxPending {
		n.decideLocked(n.pending[0])
		n.pending = n.pending[1:]
	}
	n.pending = append(n.pending, pendingReq{Request: r, threshold: time.Duration(th)})
	n.mu.Unlock()
}

// LastSlow is when the last slow request was seen (zero: never).
func (n *Node) LastSlow() time.Time {
	if ns := n.lastSlow.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// Pending reports whether slow requests wait for their sources.
func (n *Node) Pending() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.pending) > 0
}

func (n *Node) addEvidence(e ...Evidence) {
	if len(e) == 0 {
		return
	}
	n.mu.Lock()
	n.evidence = append(n.evidence, e...)
	if len(n.evidence) > maxEvidence {
		n.evidence = append(n.evidence[:0], n.evidence[len(n.evidence)-maxEvidence*3/4:]...)
	}
	n.mu.Unlock()
}

// setShared keeps the node's view of its server's shared samples.
func (n *Node) setShared(v sharedView) {
	n.mu.Lock()
	n.shared = v
	n.mu.Unlock()
}

// Settle decides every waiting request that ended by through (every source
// has been read past it), and any that waited longer than decideBy; it
// forgets evidence older than it may serve (Config.MaxLatency), and moves the baseline and the
// threshold on.
func (n *Node) Settle(through int64) {
	defer n.settles.Add(1)
	now := n.now().UnixNano()
	n.mu.Lock()
	defer n.mu.Unlock()
	kept := n.pending[:0]
	for _, p := range n.pending {
		if p.End <= through || now-p.End > int64(decideBy) {
			n.decideLocked(p)
		} else {
			kept = append(kept, p)
		}
	}
	clear(n.pending[len(kept):])
	n.pending = kept
	keep := int64(n.cfg.keepEvidence())
	ev := n.evidence[:0]
	for _, e := range n.evidence {
		if now-e.To < keep {
			ev = append(ev, e)
		}
	}
	n.evidence = ev
	n.base.rotate(now)
	if n.cfg.Threshold <= 0 {
		p99, ok := n.base.p99()
		n.threshold.Store(int64(thresholdFor(n.cfg.Objective, p99, ok)))
	}
}

func (n *Node) decideLocked(p pendingReq) {
	var t tally
	t.add(p.Request, n.evidence)
	from := p.Start()
	for _, samples := range n.shared {
		for _, s := range samples {
			if s.to >= from {
				t.add(p.Request, s.ev)
			}
		}
	}
	c := t.decide(p.Request, p.threshold)
	n.counts[c]++
	n.countMinute(n.now().Unix()/60, c)
}

// minuteCounts is one minute's slow requests by cause.
type minuteCounts struct {
	at     int64 // Unix minutes
	counts [NumCauses]uint32
}

// countMinute counts a request of cause c decided in minute m, and forgets
// the minutes TimelineMinutes before it.
func (n *Node) countMinute(m int64, c Cause) {
	i, found := slices.BinarySearchFunc(n.minutes, m, func(e minuteCounts, m int64) int { return cmp.Compare(e.at, m) })
	if !found {
		// A minute before the newest one is a clock set back: kept in order.
		n.minutes = slices.Insert(n.minutes, i, minuteCounts{at: m})
	}
	n.minutes[i].counts[c]++
	newest := n.minutes[len(n.minutes)-1].at
	old := 0
	for old < len(n.minutes) && newest-n.minutes[old].at >= TimelineMinutes {
		old++
	}
	n.minutes = slices.Delete(n.minutes, 0, old)
}

// setKeySizes keeps the key sizes read while slow requests waited.
func (n *Node) setKeySizes(k KeySizes) {
	n.mu.Lock()
	n.keySizes = k
	n.mu.Unlock()
}

// KeySizes are the largest key-size bins of each kind (INFO KEYSIZES,
// Redis 8+) as read in the last second slow requests waited: beside slow
// requests under slow_command, they say whether the server holds keys
// big enough for a command on one of them to be slow (a person's lead,
// not a cause). Empty when the server has no KEYSIZES or no slow request
// waited yet.
func (n *Node) KeySizes() KeySizes {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.keySizes
}

// Settles counts the calls of Settle: a reader's ticks, each after its
// reads of the sources.
func (n *Node) Settles() int64 { return n.settles.Load() }

// Counts are the slow requests decided so far, by cause.
func (n *Node) Counts() [NumCauses]uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.counts
}

// Recent counts the slow requests decided over the last minutes (the
// current one included), by cause.
func (n *Node) Recent(minutes int) [NumCauses]uint64 {
	var out [NumCauses]uint64
	m := n.now().Unix() / 60
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, e := range n.minutes {
		if age := m - e.at; age >= 0 && age < int64(minutes) {
			for c, v := range e.counts {
				out[c] += uint64(v)
			}
		}
	}
	return out
}

// Minute is one minute of the timeline: its start and its slow requests by
// cause.
type Minute struct {
	Start  time.Time
	Counts [NumCauses]uint32
}

// Timeline is the last TimelineMinutes minutes that had slow requests,
// oldest first.
func (n *Node) Timeline() []Minute {
	m := n.now().Unix() / 60
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []Minute
	for _, e := range n.minutes {
		if age := m - e.at; age >= 0 && age < TimelineMinutes {
			out = append(out, Minute{Start: time.Unix(e.at*60, 0), Counts: e.counts})
		}
	}
	return out
}

// UnexplainedShare is the share of the slow requests of the last 5
// minutes that no source explains; 0 when there were none.
func (n *Node) UnexplainedShare() float64 {
	r := n.Recent(5)
	var all uint64
	for _, v := range r {
		all += v
	}
	if all == 0 {
		return 0
	}
	return float64(r[Unexplained]) / float64(all)
}
