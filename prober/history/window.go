package history

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis-prober/redis-prober/prober"
)

// SampleSink sees every probe sample of one node beside the histograms. The
// change watcher feeds a ChangeWindow with it, so it can tell the latency
// before the last change from the latency since, without PromQL offsets.
// ObserveSample is on the probe's hot path: it must not block or allocate.
type SampleSink interface {
	ObserveSample(cmd int, res prober.Result, d time.Duration)
}

// TapRecorder records into rec and hands every request sample to sink as
// well. A nil sink returns rec itself.
func TapRecorder(rec prober.Recorder, sink SampleSink) prober.Recorder {
	if sink == nil {
		return rec
	}
	return tapRecorder{Recorder: rec, sink: sink}
}

type tapRecorder struct {
	prober.Recorder
	sink SampleSink
}

func (t tapRecorder) Record(cmd int, res prober.Result, d time.Duration) {
	t.Recorder.Record(cmd, res, d)
	t.sink.ObserveSample(cmd, res, d)
}

// The window's buckets are native buckets of schema 3, 8 per power of two
// (the probe histograms' own): bucket 0 holds everything up to 2^(-159/8) s
// ≈ 1.04µs, the last everything above 2^(39/8) s ≈ 29 s. A quantile read
// from them is within ±4.5% of the truth.
const winBuckets = 200

var winRun = bucketRun{schema: 3, first: -159, n: winBuckets}

func winIndex(d time.Duration) int { return winRun.index(d) }

// winValue is the geometric middle of bucket i.
func winValue(i int) time.Duration { return winRun.value(i) }

// ChangeWindowSlots is how many slots a window is cut into: the sliding
// "after" window moves on in steps of window/ChangeWindowSlots (5 minutes
// of the default hour).
const ChangeWindowSlots = 12

// ChangeWindow keeps the probe latency of one node over a sliding window,
// per command, and freezes it when a change is marked: "before" is the
// window that ended at the last change, "after" the samples since it (at
// most one window's worth, sliding).
//
// Only the slot being filled is dense (commands × 200 counters of 4 bytes,
// written with one atomic add and no lock); a finished slot keeps only its
// non-empty buckets, which for a node's latency are a few dozen. Twelve
// dense slots were the prober's largest memory at 1,000 targets
// (docs/performance.md, "Measured reasons").
type ChangeWindow struct {
	commands []string
	slotLen  time.Duration
	cur      []uint32 // command i's buckets at [i*winBuckets, (i+1)*winBuckets)

	mu        sync.Mutex   // guards everything below; ObserveSample never takes it
	past      []sparseSlot // finished slots, oldest first, at most ChangeWindowSlots-1
	headStart time.Time    // when cur's slot began
	marked    bool
	markedAt  time.Time
	before    []WindowQuantiles
}

// sparseSlot is a finished slot: its non-zero counters by index, in order.
type sparseSlot []winCount

type winCount struct {
	idx uint32 // cmd*winBuckets + bucket
	n   uint32
}

// NewChangeWindow returns a window of length window over the commands (in
// the probe's command order), starting at now.
func NewChangeWindow(commands []string, window time.Duration, now time.Time) *ChangeWindow {
	return &ChangeWindow{
		commands:  commands,
		slotLen:   max(window/ChangeWindowSlots, time.Millisecond),
		cur:       make([]uint32, len(commands)*winBuckets),
		headStart: now,
	}
}

// Commands are the command names of the window, in index order.
func (w *ChangeWindow) Commands() []string { return w.commands }

// ObserveSample counts one probe sample: one atomic add.
// Replies and timeouts count; errors do not, since a refused connection
// answers in microseconds and would flatter the figures.
func (w *ChangeWindow) ObserveSample(cmd int, res prober.Result, d time.Duration) {
	if cmd < 0 || cmd >= len(w.commands) || res == prober.ResultError {
		return
	}
	atomic.AddUint32(&w.cur[cmd*winBuckets+winIndex(d)], 1)
}

// takeCur empties the dense slot into a sparse one. Each counter is swapped
// with 0, so a sample added while this runs is counted in one slot or the
// next, never twice or lost.
func (w *ChangeWindow) takeCur() sparseSlot {
	var out sparseSlot
	for i := range w.cur {
		if atomic.LoadUint32(&w.cur[i]) == 0 {
			continue
		}
		if n := atomic.SwapUint32(&w.cur[i], 0); n > 0 {
			out = append(out, winCount{idx: uint32(i), n: n})
		}
	}
	return out
}

// Advance moves the sliding window on to now, dropping the slots that
// fell out of it. The owner calls it at least once per slot length.
func (w *ChangeWindow) Advance(now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if now.Sub(w.headStart) >= w.slotLen*ChangeWindowSlots {
		// Not advanced for a whole window: everything in it is stale.
		w.takeCur()
		w.past, w.headStart = nil, now
		return
	}
	for now.Sub(w.headStart) >= w.slotLen {
		w.past = append(w.past, w.takeCur())
		if len(w.past) > ChangeWindowSlots-1 {
			w.past[0] = nil
			w.past = w.past[1:]
		}
		w.headStart = w.headStart.Add(w.slotLen)
	}
}

// Mark records a change at now: the window so far becomes "before" and
// "after" starts empty.
func (w *ChangeWindow) Mark(now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.before = w.quantilesLocked()
	w.takeCur()
	w.past, w.headStart, w.marked, w.markedAt = nil, now, true, now
}

// WindowQuantiles are one command's figures over a window.
type WindowQuantiles struct {
	Command string
	Count   uint64
	// Sum is the total of the samples as their buckets' middles (±4.5%).
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
		lo, hi := uint32(ci*winBuckets), uint32((ci+1)*winBuckets)
		for _, s := range w.past {
			for _, c := range s {
				if c.idx >= lo && c.idx < hi {
					sum[c.idx-lo] += uint64(c.n)
					total += uint64(c.n)
				}
			}
		}
		for b := range winBuckets {
			n := uint64(atomic.LoadUint32(&w.cur[ci*winBuckets+b]))
			sum[b] += n
			total += n
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
