package history

import (
	"math"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/nativebucket"
	"github.com/redis-prober/redis-prober/prober"
	"github.com/redis-prober/redis-prober/wire"
)

func TestBucketRuns(t *testing.T) {
	for _, tc := range []struct {
		name     string
		run      bucketRun
		from, to time.Duration
		maxRel   float64 // half a bucket: 2^(2^-s/2) - 1, and a nanosecond's rounding
	}{
		{"window", winRun, 1100 * time.Nanosecond, 29 * time.Second, 0.0444},
		{"recent", recentRun, 4600 * time.Nanosecond, 3300 * time.Millisecond, 0.0906},
	} {
		// Every value in the range reads back as its bucket's middle,
		// within half a bucket.
		for d := tc.from; d < tc.to; d = d*21/20 + 1 {
			got := tc.run.value(tc.run.index(d))
			if rel := math.Abs(float64(got-d)) / float64(d); rel > tc.maxRel {
				t.Fatalf("%s: %v reads back as %v (%.2f%% off)", tc.name, d, got, rel*100)
			}
			// The bucket is the native bucket of the schema, the one the
			// probe's histogram counts d in at schema 3.
			if got, want := tc.run.index(d)+tc.run.first, nativebucket.Index(d.Seconds(), tc.run.schema); got != want {
				t.Fatalf("%s: %v in native bucket %d, want %d", tc.name, d, got, want)
			}
		}
		// Out of range and absurd values are clamped to the ends.
		for _, c := range []struct {
			d    time.Duration
			want int
		}{
			{0, 0}, {-time.Second, 0}, {time.Nanosecond, 0}, {tc.from / 2, 0},
			{time.Hour, tc.run.n - 1}, {math.MaxInt64, tc.run.n - 1}, {tc.to * 2, tc.run.n - 1},
		} {
			if got := tc.run.index(c.d); got != c.want {
				t.Errorf("%s: index(%v) = %d, want %d", tc.name, c.d, got, c.want)
			}
		}
	}
}

func within(t *testing.T, what string, got, want time.Duration) {
	t.Helper()
	if rel := math.Abs(float64(got-want)) / float64(want); rel > 0.07 {
		t.Errorf("%s = %v, want %v ±7%%", what, got, want)
	}
}

func TestChangeWindowBeforeAndAfter(t *testing.T) {
	t0 := time.Unix(1000, 0)
	w := NewChangeWindow([]string{"get", "set"}, 30*time.Minute, t0)
	if w.Before() != nil || w.After() != nil {
		t.Fatal("before and after must be empty until a change is marked")
	}
	// 1000 gets: 990 at 100µs, 10 at 2ms -> p50 100µs, p99 100µs, p99.9 2ms.
	for i := range 1000 {
		d := 100 * time.Microsecond
		if i%100 == 0 {
			d = 2 * time.Millisecond
		}
		w.ObserveSample(0, prober.ResultOK, d)
	}
	w.ObserveSample(7, prober.ResultOK, time.Second)    // unknown command: ignored
	w.ObserveSample(0, prober.ResultError, time.Second) // errors: ignored
	w.Mark(t0.Add(time.Minute))
	if at, ok := w.Changed(); !ok || !at.Equal(t0.Add(time.Minute)) {
		t.Fatalf("Changed() = %v, %v", at, ok)
	}
	// After the change get is three times slower.
	for range 500 {
		w.ObserveSample(0, prober.ResultOK, 300*time.Microsecond)
	}
	before, after := w.Before(), w.After()
	if before[0].Count != 1000 || before[1].Count != 0 {
		t.Fatalf("before counts = %d, %d; want 1000, 0", before[0].Count, before[1].Count)
	}
	within(t, "before p50", before[0].P50, 100*time.Microsecond)
	within(t, "before p99", before[0].P99, 100*time.Microsecond)
	within(t, "before p99.9", before[0].P999, 2*time.Millisecond)
	if after[0].Count != 500 {
		t.Fatalf("after count = %d, want 500", after[0].Count)
	}
	within(t, "after p99", after[0].P99, 300*time.Microsecond)
}

func TestChangeWindowSlides(t *testing.T) {
	t0 := time.Unix(1000, 0)
	w := NewChangeWindow([]string{"ping"}, 30*time.Second, t0) // 1 s slots
	w.ObserveSample(0, prober.ResultOK, time.Millisecond)
	w.Advance(t0.Add(10 * time.Second))
	w.ObserveSample(0, prober.ResultOK, time.Millisecond)
	if got := w.Current()[0].Count; got != 2 {
		t.Fatalf("count within the window = %d, want 2", got)
	}
	w.Advance(t0.Add(30 * time.Second)) // the first sample's slot falls out
	if got := w.Current()[0].Count; got != 1 {
		t.Fatalf("count after sliding = %d, want 1", got)
	}
	w.Advance(t0.Add(time.Hour)) // asleep for longer than the window
	if got := w.Current()[0].Count; got != 0 {
		t.Fatalf("count after a long pause = %d, want 0", got)
	}
	w.ObserveSample(0, prober.ResultOK, time.Millisecond)
	if got := w.Current()[0].Count; got != 1 {
		t.Fatalf("a sample after the pause: count = %d, want 1", got)
	}
}

type countingRecorder struct{ n int }

func (c *countingRecorder) Record(int, prober.Result, time.Duration) { c.n++ }
func (c *countingRecorder) SetUp(bool)                               {}
func (c *countingRecorder) RecordLag(time.Duration)                  {}
func (c *countingRecorder) RecordClientDelay(time.Duration)          {}
func (c *countingRecorder) SetClock(wire.Clock)                      {}
func (c *countingRecorder) ClockFallback()                           {}
func (c *countingRecorder) RecordNetwork(prober.NetworkSample)       {}

func TestTapRecorder(t *testing.T) {
	rec := &countingRecorder{}
	if got := TapRecorder(rec, nil); got != prober.Recorder(rec) {
		t.Fatal("a nil sink must return the recorder itself")
	}
	w := NewChangeWindow([]string{"get"}, time.Minute, time.Now())
	tap := TapRecorder(rec, w)
	tap.Record(0, prober.ResultOK, time.Millisecond)
	if rec.n != 1 || w.Current()[0].Count != 1 {
		t.Fatalf("recorder saw %d, window %d; want 1 and 1", rec.n, w.Current()[0].Count)
	}
}

func TestChangeWindowObserveDoesNotAllocate(t *testing.T) {
	w := NewChangeWindow([]string{"get", "set"}, time.Minute, time.Now())
	tap := TapRecorder(&countingRecorder{}, w)
	if n := testing.AllocsPerRun(1000, func() { tap.Record(1, prober.ResultOK, 250*time.Microsecond) }); n != 0 {
		t.Fatalf("Record through the tap allocates %v times per call", n)
	}
}

func BenchmarkChangeWindowObserve(b *testing.B) {
	w := NewChangeWindow([]string{"get", "set"}, time.Minute, time.Now())
	for i := 0; b.Loop(); i++ {
		w.ObserveSample(i&1, prober.ResultOK, time.Duration(i&0xffff)*time.Microsecond)
	}
}

// A finished slot keeps only its non-empty buckets: each command's samples
// must still be its own after the slot is compacted, and the sliding sum must
// count every slot of the window exactly once.
func TestChangeWindowFinishedSlotsKeepCommandsApart(t *testing.T) {
	t0 := time.Unix(1000, 0)
	w := NewChangeWindow([]string{"get", "set"}, 12*time.Second, t0) // 1 s slots
	for i := range ChangeWindowSlots {
		w.ObserveSample(0, prober.ResultOK, 100*time.Microsecond)
		w.ObserveSample(1, prober.ResultOK, 10*time.Millisecond)
		w.ObserveSample(1, prober.ResultOK, 10*time.Millisecond)
		w.Advance(t0.Add(time.Duration(i+1) * time.Second))
	}
	// 12 slots filled, the window slid by one: the first slot fell out.
	cur := w.Current()
	if cur[0].Count != ChangeWindowSlots-1 || cur[1].Count != 2*(ChangeWindowSlots-1) {
		t.Fatalf("counts get %d, set %d; want %d and %d", cur[0].Count, cur[1].Count, ChangeWindowSlots-1, 2*(ChangeWindowSlots-1))
	}
	within(t, "get p99", cur[0].P99, 100*time.Microsecond)
	within(t, "set p50", cur[1].P50, 10*time.Millisecond)
	if n := len(w.past); n != ChangeWindowSlots-1 {
		t.Errorf("%d finished slots kept, want %d", n, ChangeWindowSlots-1)
	}
	for i, s := range w.past {
		if len(s) > 2 {
			t.Errorf("finished slot %d keeps %d counters, want at most the 2 non-empty buckets", i, len(s))
		}
	}
}
