package prober

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// SampleSink sees every probe sample of one node beside the histograms. The
// change watcher feeds a ChangeWindow with it, so it can tell the latency
// before the last change from the latency since, without PromQL offsets.
// ObserveSample is on the probe's hot path: it must not block or allocate.
type SampleSink interface {
	ObserveSample(cmd int, res Result, d time.Duration)
}

// TapRecorder records into rec and hands every request sample to sink as
// well. A nil sink returns rec itself.
func TapRecorder(rec Recorder, sink SampleSink) Recorder {
	if sink == nil {
		return rec
	}
	return tapRecorder{Recorder: rec, sink: sink}
}

type tapRecorder struct {
	Recorder
	sink SampleSink
}

func (t tapRecorder) Record(cmd int, res Result, d time.Duration) {
	t.Recorder.Record(cmd, res, d)
	t.sink.ObserveSample(cmd, res, d)
}

// The window's buckets are log-linear: 8 per power of two from 1µs to
// about 34 s, so a quantile read from them is within ±6.5% of the truth
// (the native histograms' factor of 1.1 is about as fine). Faster samples
// land in the first bucket, slower ones in the last.
const (
	winSubBits = 3
	winSub     = 1 << winSubBits
	winMinExp  = 10 // 2^10 ns ≈ 1µs
	winMaxExp  = 35 // 2^35 ns ≈ 34 s
	winBuckets = (winMaxExp - winMinExp) * winSub
)

func winIndex(d time.Duration) int { return logBucket(d, winSubBits, winMinExp, winMaxExp) }

// winValue is the geometric middle of bucket i.
func winValue(i int) time.Duration { return logBucketValue(i, winSubBits, winMinExp) }

// ChangeWindowSlots is how many slots a window is cut into: the sliding
// "after" window moves on in steps of window/ChangeWindowSlots (5 minutes
// of the default hour). Each slot is 200 counters a command: at 30 slots
// the windows were the prober's largest memory at 1,000 targets (81 MB).
const ChangeWindowSlots = 12

// ChangeWindow keeps the probe latency of one node over a sliding window,
// per command, and freezes it when a change is marked: "before" is the
// window that ended at the last change, "after" the samples since it (at
// most one window's worth, sliding). Memory is fixed: slots × commands ×
// 200 counters of 4 bytes.
type ChangeWindow struct {
	commands []string
	slotLen  time.Duration
	cur      atomic.Pointer[winSlot]

	mu        sync.Mutex // guards everything below; ObserveSample never takes it
	slots     []*winSlot
	head      int
	headStart time.Time
	marked    bool
	markedAt  time.Time
	before    []WindowQuantiles
}

type winSlot struct {
	counts []uint32 // command i's buckets at [i*winBuckets, (i+1)*winBuckets)
}

func newWinSlot(n int) *winSlot { return &winSlot{counts: make([]uint32, n*winBuckets)} }

func (s *winSlot) zero() {
	for i := range s.counts {
		atomic.StoreUint32(&s.counts[i], 0)
	}
}

// NewChangeWindow returns a window of length window over the commands (in
// the probe's command order), starting at now.
func NewChangeWindow(commands []string, window time.Duration, now time.Time) *ChangeWindow {
	w := &ChangeWindow{
		commands:  commands,
		slotLen:   max(window/ChangeWindowSlots, time.Millisecond),
		slots:     make([]*winSlot, ChangeWindowSlots),
		headStart: now,
	}
	for i := range w.slots {
		w.slots[i] = newWinSlot(len(commands))
	}
	w.cur.Store(w.slots[0])
	return w
}

// Commands are the command names of the window, in index order.
func (w *ChangeWindow) Commands() []string { return w.commands }

// ObserveSample counts one probe sample: two loads and an atomic add.
// Replies and timeouts count; errors do not, since a refused connection
// answers in microseconds and would flatter the figures.
func (w *ChangeWindow) ObserveSample(cmd int, res Result, d time.Duration) {
	if cmd < 0 || cmd >= len(w.commands) || res == ResultError {
		return
	}
	s := w.cur.Load()
	atomic.AddUint32(&s.counts[cmd*winBuckets+winIndex(d)], 1)
}

// Advance moves the sliding window on to now, dropping the slots that
// fell out of it. The owner calls it at least once per slot length.
func (w *ChangeWindow) Advance(now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if now.Sub(w.headStart) >= w.slotLen*time.Duration(len(w.slots)) {
		// Not advanced for a whole window: everything in it is stale.
		for _, s := range w.slots {
			s.zero()
		}
		w.head, w.headStart = 0, now
		w.cur.Store(w.slots[0])
		return
	}
	for now.Sub(w.headStart) >= w.slotLen {
		w.head = (w.head + 1) % len(w.slots)
		// The oldest slot: no writer has held it for a whole window.
		w.slots[w.head].zero()
		w.headStart = w.headStart.Add(w.slotLen)
		w.cur.Store(w.slots[w.head])
	}
}

// Mark records a change at now: the window so far becomes "before" and
// "after" starts empty.
func (w *ChangeWindow) Mark(now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.before = w.quantilesLocked()
	for _, s := range w.slots {
		s.zero()
	}
	w.head, w.headStart, w.marked, w.markedAt = 0, now, true, now
	w.cur.Store(w.slots[0])
}

// WindowQuantiles are one command's figures over a window.
type WindowQuantiles struct {
	Command string
	Count   uint64
	// Sum is the total of the samples as their buckets' middles (±6.5%).
	Sum            time.Duration
	P50, P99, P999 time.Duration
}

// Changed reports whether a change was marked, and when.
func (w *ChangeWindow) Changed() (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.markedAt, w.marked
}

// Before is the per-command latency over the window that ended at the last
// change; nil before the first change.
func (w *ChangeWindow) Before() []WindowQuantiles {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.before
}

// After is the per-command latency since the last change (at most one
// window); nil before the first change.
func (w *ChangeWindow) After() []WindowQuantiles {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.marked {
		return nil
	}
	return w.quantilesLocked()
}

// Current is the per-command latency over the sliding window, whether or
// not a change was marked.
func (w *ChangeWindow) Current() []WindowQuantiles {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.quantilesLocked()
}

func (w *ChangeWindow) quantilesLocked() []WindowQuantiles {
	out := make([]WindowQuantiles, len(w.commands))
	sum := make([]uint64, winBuckets)
	for ci, name := range w.commands {
		clear(sum)
		var total uint64
		for _, s := range w.slots {
			for b := range winBuckets {
				n := uint64(atomic.LoadUint32(&s.counts[ci*winBuckets+b]))
				sum[b] += n
				total += n
			}
		}
		q := WindowQuantiles{Command: name, Count: total}
		for b, n := range sum {
			q.Sum += time.Duration(n) * winValue(b)
		}
		if total > 0 {
			q.P50, q.P99, q.P999 = bucketQuantile(sum, total, 0.5), bucketQuantile(sum, total, 0.99), bucketQuantile(sum, total, 0.999)
		}
		out[ci] = q
	}
	return out
}

// bucketQuantile is the value of the bucket holding the q-th sample (by
// rank, nearest-rank method).
func bucketQuantile(counts []uint64, total uint64, q float64) time.Duration {
	rank := uint64(math.Ceil(q * float64(total)))
	rank = max(rank, 1)
	var seen uint64
	for i, n := range counts {
		seen += n
		if seen >= rank {
			return winValue(i)
		}
	}
	return winValue(len(counts) - 1)
}
