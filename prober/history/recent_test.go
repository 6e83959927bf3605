package history

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/redis-prober/redis-prober/prober"
)

func near(got, want time.Duration) bool {
	return float64(got) >= 0.9*float64(want) && float64(got) <= 1.1*float64(want)
}

func TestRecentQuantilesAndSlidingWindows(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	r := NewRecent([]string{"ping", "get"}, start)
	rec := r.Tap(prober.NopRecorder{})
	// Minute 0: ping at 100µs; 2% of them at 10ms.
	for i := range 1000 {
		d := 100 * time.Microsecond
		if i%50 == 0 {
			d = 10 * time.Millisecond
		}
		rec.Record(0, prober.ResultOK, d)
	}
	rec.Record(1, prober.ResultError, time.Microsecond) // counted as failed only
	rec.Record(1, prober.ResultTimeout, time.Second)
	rec.SetUp(true)

	s := r.Snapshot(start.Add(30 * time.Second))
	if s.Up != UpYes || s.UpSince.IsZero() {
		t.Errorf("up = %v since %v, want up with a time", s.Up, s.UpSince)
	}
	ping := s.Commands[0].Last1m
	if ping.Count != 1000 || !near(ping.P50, 100*time.Microsecond) || !near(ping.P99, 10*time.Millisecond) {
		t.Errorf("ping 1m = %+v, want 1000 samples, p50 ≈ 100µs, p99 ≈ 10ms", ping)
	}
	get := s.Commands[1].Last1m
	if get.Count != 1 || get.Failed != 2 || !near(get.P50, time.Second) {
		t.Errorf("get 1m = %+v, want the timeout as a sample at 1s and 2 failed", get)
	}
	if s.All.Last1m.Count != 1001 {
		t.Errorf("all 1m count = %d, want 1001", s.All.Last1m.Count)
	}

	// Two and a half minutes on: minute 0 is outside the last minute but
	// inside the last five; the sparkline holds minutes 0 and 1.
	r.Advance(start.Add(150 * time.Second))
	rec.Record(0, prober.ResultOK, time.Millisecond)
	s = r.Snapshot(start.Add(150 * time.Second))
	if c := s.Commands[0].Last1m; c.Count != 1 || !near(c.P99, time.Millisecond) {
		t.Errorf("ping 1m after 2.5 min = %+v, want only the new sample", c)
	}
	if c := s.Commands[0].Last5m; c.Count != 1001 {
		t.Errorf("ping 5m after 2.5 min = %+v, want 1001 samples", c)
	}
	n := len(s.Spark)
	if n != RecentSparkPoints+1 || !near(s.Spark[n-3], 10*time.Millisecond) || s.Spark[n-2] != 0 || !near(s.Spark[n-1], time.Millisecond) {
		t.Errorf("sparkline ends %v, want minute 0's p99 (10ms), an empty minute 1, then minute 2 so far (1ms)", s.Spark[n-4:])
	}

	// Six and a half minutes on, the last five minutes are 1.5 to 6.5:
	// minute 0 is gone, the sample of minute 2 is in.
	r.Advance(start.Add(6*time.Minute + 30*time.Second))
	if c := r.Snapshot(start.Add(6*time.Minute + 30*time.Second)).Commands[0].Last5m; c.Count != 1 {
		t.Errorf("ping 5m after 6.5 min = %+v, want minute 0 gone and minute 2's sample in", c)
	}

	// An hour without Advance: everything is stale.
	r.Advance(start.Add(3 * time.Hour))
	s = r.Snapshot(start.Add(3 * time.Hour))
	for _, p := range s.Spark {
		if p != 0 {
			t.Fatalf("sparkline after 3h idle = %v, want empty", s.Spark)
		}
	}
}

func TestRecentErrorsDistinctBoundedAndClipped(t *testing.T) {
	r := NewRecent([]string{"ping"}, time.Now())
	now := time.Now()
	for i := range 20 {
		r.ObserveError(fmt.Errorf("ERR number %d", i%4), now.Add(time.Duration(i)*time.Second))
	}
	r.ObserveError(errors.New("ERR other"), now)
	long := "ERR " + strings.Repeat("é", 400) + "\x1b[31m"
	r.ObserveError(errors.New(long), now)
	s := r.Snapshot(now)
	if len(s.Errors) != recentErrors {
		t.Fatalf("%d errors kept, want %d", len(s.Errors), recentErrors)
	}
	first := s.Errors[0].Text
	if len(first) > RecentErrorLen || !utf8.ValidString(first) || !strings.HasSuffix(first, "…") || strings.Contains(first, "\x1b") {
		t.Errorf("long error kept as %q (%d bytes), want ≤ %d valid bytes, cut with …", first, len(first), RecentErrorLen)
	}
	if e := s.Errors[2]; e.Text != "ERR number 3" || e.Count != 5 {
		t.Errorf("third newest = %+v, want ERR number 3 seen 5 times", e)
	}
	for _, e := range s.Errors {
		if e.Text == "ERR number 0" {
			t.Errorf("the oldest of 6 distinct errors was kept: %+v", s.Errors)
		}
	}
}

func TestRecentHotPathDoesNotAllocate(t *testing.T) {
	r := NewRecent([]string{"ping", "get", "set"}, time.Now())
	rec := r.Tap(prober.NopRecorder{})
	allocs := testing.AllocsPerRun(1000, func() {
		rec.Record(1, prober.ResultOK, 150*time.Microsecond)
		rec.SetUp(true)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per sample, want 0", allocs)
	}
}

func BenchmarkRecentObserve(b *testing.B) {
	r := NewRecent([]string{"ping", "get", "set"}, time.Now())
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r.ObserveSample(2, prober.ResultOK, 200*time.Microsecond)
		}
	})
}

// A closed minute keeps only its non-empty buckets and its failures; the
// 5-minute window still counts every sample of each command once.
func TestRecentClosedMinutesAreSparse(t *testing.T) {
	t0 := time.Unix(10000, 0)
	r := NewRecent([]string{"get", "set"}, t0)
	for m := range 5 {
		r.ObserveSample(0, prober.ResultOK, 100*time.Microsecond)
		r.ObserveSample(1, prober.ResultOK, 2*time.Millisecond)
		r.ObserveSample(1, prober.ResultTimeout, time.Second)
		r.Advance(t0.Add(time.Duration(m+1) * time.Minute))
	}
	for i, s := range r.slots {
		if s.counts == nil && len(s.sparse) > 3 {
			t.Errorf("closed slot %d keeps %d counters, want at most its 3 non-empty buckets", i, len(s.sparse))
		}
	}
	snap := r.Snapshot(t0.Add(5 * time.Minute))
	get, set := snap.Commands[0].Last5m, snap.Commands[1].Last5m
	if get.Count != 5 || set.Count != 10 || set.Failed != 5 || get.Failed != 0 {
		t.Fatalf("5m: get %+v, set %+v; want 5 samples, and 10 with 5 failed", get, set)
	}
}
