// Package history keeps what the prober remembers of each node's probe
// samples beside its histograms: the status page's last minutes (Recent)
// and the change detector's before/after windows (ChangeWindow), both fed
// through a tap on the probe's prober.Recorder.
package history

import (
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/redis-prober/redis-prober/internal/safetext"
	"github.com/redis-prober/redis-prober/prober"
)

// Recent is the status page's memory of one node: the probe latency of the
// last minutes per command, the p99 of each of the last 60 minutes, whether
// Redis answers, and the last distinct errors in Redis's own words.
//
// Its budget is a few KiB a node, since one process probes 1,000 targets.
// At the default three commands it holds:
//   - the current minute, 3 commands × 80 counters of 4 bytes = 960 bytes,
//     and the five before it with their non-empty buckets only (a few dozen
//     of 8 bytes each): enough for a sliding 1-minute and 5-minute window,
//     see Snapshot;
//   - 60 p99 figures of 4 bytes (the sparkline) = 240 bytes;
//   - at most 5 errors of at most 200 bytes of text each ≈ 1.3 KiB;
//
// about 3 KiB in all. The buckets are coarser than ChangeWindow's (native
// schema 2, 4 per power of two, so a quantile is within ±9.1%; from
// 2^(-71/4) s ≈ 4.5µs to 2^(7/4) s ≈ 3.4 s, faster and slower samples in
// the first and last): a page for a person needs the order of magnitude and
// the trend, and 8 buckets an octave would double the slots' memory.
//
// The hot path (ObserveSample, through Tap) is two loads and an atomic add,
// as in ChangeWindow; SetUp is one load while nothing changes. Errors are
// off the success path and take a mutex.
type Recent struct {
	commands []string
	cur      atomic.Pointer[recentSlot]
	up       atomic.Int32 // UpState
	upSince  atomic.Int64 // Unix nanoseconds of the last change of up

	mu        sync.Mutex // guards the slots' rotation and the sparkline
	slots     [recentSlots]*recentSlot
	head      int
	headStart time.Time
	spark     [RecentSparkPoints]uint32 // p99 in µs per minute, 0: no samples
	sparkHead int                       // index of the newest point

	emu    sync.Mutex
	errors []RecentError // newest first, at most recentErrors
}

const (
	recentBuckets = 80

	// RecentSlot is the length of one slot of the recent history.
	RecentSlot  = time.Minute
	recentSlots = 6
	// RecentSparkPoints is how many minutes the sparkline covers.
	RecentSparkPoints = 60
	recentErrors      = 5
	// RecentErrorLen bounds the error text kept, in bytes.
	RecentErrorLen = 200
)

// UpState says whether a node answers.
type UpState int32

const (
	UpUnknown UpState = iota // no probe has finished yet
	UpYes
	UpNo
)

// recentSlot is one minute. Only the current one is dense (counts, written
// with atomic adds); a closed minute keeps its non-empty buckets (sparse)
// and its failures, and is never written again.
type recentSlot struct {
	counts []uint32 // dense: command i's buckets at [i*recentBuckets, (i+1)*recentBuckets)
	sparse []winCount
	failed []uint32 // errors and timeouts per command
}

// close empties the dense slot into a closed one. Each counter is swapped
// with 0, so a sample added meanwhile lands in this minute or the next,
// never in both and never nowhere.
func (s *recentSlot) close() *recentSlot {
	out := &recentSlot{failed: make([]uint32, len(s.failed))}
	for i := range s.counts {
		if atomic.LoadUint32(&s.counts[i]) == 0 {
			continue
		}
		if n := atomic.SwapUint32(&s.counts[i], 0); n > 0 {
			out.sparse = append(out.sparse, winCount{idx: uint32(i), n: n})
		}
	}
	for i := range s.failed {
		out.failed[i] = atomic.SwapUint32(&s.failed[i], 0)
	}
	return out
}

var recentRun = bucketRun{schema: 2, first: -71, n: recentBuckets}

func recentIndex(d time.Duration) int { return recentRun.index(d) }

// recentValue is the geometric middle of bucket i.
func recentValue(i int) time.Duration { return recentRun.value(i) }

// NewRecent returns the history of a node probed with commands (in the
// probe's order), starting at now.
func NewRecent(commands []string, now time.Time) *Recent {
	r := &Recent{commands: commands, headStart: now}
	for i := range r.slots {
		r.slots[i] = &recentSlot{failed: make([]uint32, len(commands))}
	}
	r.slots[0].counts = make([]uint32, len(commands)*recentBuckets)
	r.cur.Store(r.slots[0])
	return r
}

// Tap returns rec with every request sample and up/down verdict also
// going to r.
func (r *Recent) Tap(rec prober.Recorder) prober.Recorder { return recentRecorder{Recorder: rec, r: r} }

type recentRecorder struct {
	prober.Recorder
	r *Recent
}

func (t recentRecorder) Record(cmd int, res prober.Result, d time.Duration) {
	t.Recorder.Record(cmd, res, d)
	t.r.ObserveSample(cmd, res, d)
}

func (t recentRecorder) SetUp(answered bool) {
	t.Recorder.SetUp(answered)
	t.r.SetUp(answered, time.Now)
}

// ObserveSample counts one probe sample. Replies and timeouts count in
// the latency; errors are counted apart (a refused connection answers in
// microseconds and would flatter the figures).
func (r *Recent) ObserveSample(cmd int, res prober.Result, d time.Duration) {
	if cmd < 0 || cmd >= len(r.commands) {
		return
	}
	s := r.cur.Load()
	if res != prober.ResultOK {
		atomic.AddUint32(&s.failed[cmd], 1)
	}
	if res == prober.ResultError {
		return
	}
	atomic.AddUint32(&s.counts[cmd*recentBuckets+recentIndex(d)], 1)
}

// SetUp records whether the last probe was answered; now is read only
// when that changes.
func (r *Recent) SetUp(answered bool, now func() time.Time) {
	st := UpNo
	if answered {
		st = UpYes
	}
	if UpState(r.up.Load()) == st {
		return
	}
	r.up.Store(int32(st))
	r.upSince.Store(now().UnixNano())
}

// ObserveError keeps err's text among the last distinct errors, made
// printable and cut to RecentErrorLen bytes.
func (r *Recent) ObserveError(err error, now time.Time) {
	if err == nil {
		return
	}
	msg := clipText(safetext.Printable(err.Error()), RecentErrorLen)
	r.emu.Lock()
	defer r.emu.Unlock()
	for i, e := range r.errors {
		if e.Text == msg {
			e.Last = now
			e.Count++
			copy(r.errors[1:i+1], r.errors[:i])
			r.errors[0] = e
			return
		}
	}
	if len(r.errors) < recentErrors {
		r.errors = append(r.errors, RecentError{})
	}
	copy(r.errors[1:], r.errors)
	r.errors[0] = RecentError{Text: msg, First: now, Last: now, Count: 1}
}

// clipText cuts s to at most n bytes on a rune boundary, marking the cut.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.Clone(s[:cut]) + "…"
}

// Advance moves the history on to now: every whole minute since the last
// call closes a slot, whose p99 becomes a sparkline point. The owner calls
// it every few seconds.
func (r *Recent) Advance(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.cur.Load()
	if now.Sub(r.headStart) >= RecentSlot*RecentSparkPoints {
		// Not advanced for an hour: nothing in it is current.
		cur.close()
		for i := range r.slots {
			r.slots[i] = &recentSlot{failed: make([]uint32, len(r.commands))}
		}
		r.spark = [RecentSparkPoints]uint32{}
		r.head, r.headStart = 0, now
		r.slots[0] = cur
		return
	}
	for now.Sub(r.headStart) >= RecentSlot {
		closed := cur.close()
		var all [recentBuckets]float64
		r.addSlot(&all, -1, closed, 1)
		var p99 uint32
		if total := sum(all[:]); total > 0 {
			p99 = uint32(min(floatQuantile(all[:], total, 0.99).Microseconds(), math.MaxUint32))
			p99 = max(p99, 1)
		}
		r.sparkHead = (r.sparkHead + 1) % RecentSparkPoints
		r.spark[r.sparkHead] = p99
		// The closed minute takes the current one's place in the ring and
		// the dense slot, empty now, moves on over the oldest.
		r.slots[r.head] = closed
		r.head = (r.head + 1) % recentSlots
		r.slots[r.head] = cur
		r.headStart = r.headStart.Add(RecentSlot)
	}
}

// addSlot adds weight × slot s's counts of command cmd (every command when
// cmd < 0) to h, and returns the failures so added.
func (r *Recent) addSlot(h *[recentBuckets]float64, cmd int, s *recentSlot, weight float64) float64 {
	var failed float64
	for ci := range r.commands {
		if cmd >= 0 && ci != cmd {
			continue
		}
		if s.counts != nil {
			for b := range recentBuckets {
				if n := atomic.LoadUint32(&s.counts[ci*recentBuckets+b]); n > 0 {
					h[b] += weight * float64(n)
				}
			}
		}
		if ci < len(s.failed) {
			failed += weight * float64(atomic.LoadUint32(&s.failed[ci]))
		}
	}
	for _, c := range s.sparse {
		if ci := int(c.idx) / recentBuckets; cmd < 0 || ci == cmd {
			h[int(c.idx)%recentBuckets] += weight * float64(c.n)
		}
	}
	return failed
}

func sum(h []float64) float64 {
	var t float64
	for _, n := range h {
		t += n
	}
	return t
}

// floatQuantile is the value of the bucket holding the q-th sample of a
// histogram with weighted counts.
func floatQuantile(h []float64, total, q float64) time.Duration {
	rank := max(q*total, math.SmallestNonzeroFloat64)
	var seen float64
	for i, n := range h {
		seen += n
		if seen >= rank-1e-9 && n > 0 {
			return recentValue(i)
		}
	}
	return recentValue(len(h) - 1)
}

// RecentQuantiles are the figures of one window.
type RecentQuantiles struct {
	// Count is the samples in the window (weighted: the oldest minute
	// counts for the part of it still inside the window); Failed the
	// errors and timeouts.
	Count, Failed  uint64
	P50, P99, P999 time.Duration
}

// RecentCommand is one command's figures.
type RecentCommand struct {
	Command        string
	Last1m, Last5m RecentQuantiles
}

// RecentError is one distinct error text and when it was seen.
type RecentError struct {
	Text        string
	First, Last time.Time
	Count       uint64
}

// RecentSnapshot is what the status page shows of a node.
type RecentSnapshot struct {
	Up      UpState
	UpSince time.Time
	// All is every command together.
	All      RecentCommand
	Commands []RecentCommand
	// Spark is the p99 of each of the last RecentSparkPoints whole minutes,
	// oldest first, then of the current minute so far; 0 where a minute
	// had no samples.
	Spark  []time.Duration
	Errors []RecentError
}

// Snapshot reads the history at now. The windows slide by weighting the
// oldest slot by the part of it still inside: the last minute is the
// current slot plus the previous one × (1 - the current one's elapsed
// fraction), the last five minutes likewise.
func (r *Recent) Snapshot(now time.Time) RecentSnapshot {
	snap := RecentSnapshot{Up: UpState(r.up.Load())}
	if ns := r.upSince.Load(); ns != 0 {
		snap.UpSince = time.Unix(0, ns)
	}
	r.mu.Lock()
	frac := min(max(float64(now.Sub(r.headStart))/float64(RecentSlot), 0), 1)
	window := func(cmd, minutes int) RecentQuantiles {
		var h [recentBuckets]float64
		var failed float64
		for back := 0; back <= minutes; back++ {
			w := 1.0
			if back == minutes {
				w = 1 - frac
			}
			failed += r.addSlot(&h, cmd, r.slots[(r.head-back+recentSlots)%recentSlots], w)
		}
		total := sum(h[:])
		q := RecentQuantiles{Count: uint64(math.Round(total)), Failed: uint64(math.Round(failed))}
		if total >= 0.5 {
			q.P50, q.P99, q.P999 = floatQuantile(h[:], total, 0.5), floatQuantile(h[:], total, 0.99), floatQuantile(h[:], total, 0.999)
		}
		return q
	}
	snap.All = RecentCommand{Command: "all", Last1m: window(-1, 1), Last5m: window(-1, 5)}
	snap.Commands = make([]RecentCommand, len(r.commands))
	for ci, name := range r.commands {
		snap.Commands[ci] = RecentCommand{Command: name, Last1m: window(ci, 1), Last5m: window(ci, 5)}
	}
	snap.Spark = make([]time.Duration, RecentSparkPoints+1)
	for i := range RecentSparkPoints {
		snap.Spark[i] = time.Duration(r.spark[(r.sparkHead+1+i)%RecentSparkPoints]) * time.Microsecond
	}
	var h [recentBuckets]float64
	r.addSlot(&h, -1, r.slots[r.head], 1)
	if total := sum(h[:]); total > 0 {
		snap.Spark[RecentSparkPoints] = floatQuantile(h[:], total, 0.99)
	}
	r.mu.Unlock()
	r.emu.Lock()
	snap.Errors = append([]RecentError(nil), r.errors...)
	r.emu.Unlock()
	return snap
}
