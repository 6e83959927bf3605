package prober

import (
	"testing"
	"time"
)

func TestIntervalFor(t *testing.T) {
	for _, tc := range []struct {
		rate float64
		want time.Duration
	}{
		{10, 100 * time.Millisecond},
		{100, 10 * time.Millisecond},
		{3, 333333333 * time.Nanosecond},
		{0.5, 2 * time.Second},
		{0, 0},
		{-1, 0},
	} {
		if got := IntervalFor(tc.rate); got != tc.want {
			t.Errorf("IntervalFor(%v) = %v, want %v", tc.rate, got, tc.want)
		}
	}
}

func TestScheduleSlotsNeverSkip(t *testing.T) {
	start := time.Now()
	s := NewTimetable(start, 10*time.Millisecond)
	for want := int64(0); want < 5; want++ {
		k, due := s.Claim()
		if k != want {
			t.Fatalf("slot %d claimed as %d", want, k)
		}
		if got := due.Sub(start); got != time.Duration(want)*10*time.Millisecond {
			t.Fatalf("slot %d due at +%v", k, got)
		}
	}
}

func TestChargeFrom(t *testing.T) {
	due := time.Unix(1000, 0)
	ms := time.Millisecond
	for _, tc := range []struct {
		name        string
		claimed     time.Time
		woke        time.Time
		wantStart   time.Time
		wantLag     time.Duration
		wantOverdue bool
	}{
		{"idle worker on time", due.Add(-5 * ms), due, due, 0, false},
		{"idle worker, timer late: lateness is ours, not Redis's", due.Add(-5 * ms), due.Add(2 * ms), due.Add(2 * ms), 2 * ms, false},
		{"idle worker woke early", due.Add(-5 * ms), due.Add(-1 * ms), due.Add(-1 * ms), 0, false},
		{"busy worker: slot overdue, charged from due time", due.Add(300 * ms), due.Add(300 * ms), due, 0, true},
		{"claimed exactly at due time", due, due, due, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start, lag, overdue := chargeFrom(tc.claimed, due, tc.woke)
			if !start.Equal(tc.wantStart) || lag != tc.wantLag || overdue != tc.wantOverdue {
				t.Errorf("chargeFrom = (%v, %v, %v), want (%v, %v, %v)",
					start.Sub(due), lag, overdue, tc.wantStart.Sub(due), tc.wantLag, tc.wantOverdue)
			}
		})
	}
}

// TestHeldOnWire: an overdue request is charged the part of its wait that
// its connection spent on Redis (until the previous reply arrived), not the
// prober's lateness in reading that reply.
func TestHeldOnWire(t *testing.T) {
	due := time.Unix(1000, 0)
	ms := time.Millisecond
	for _, tc := range []struct {
		name              string
		freeAt, woke      time.Time
		wantHeld, wantLag time.Duration
	}{
		{"reply came after the due time, read at once", due.Add(30 * ms), due.Add(30 * ms), 30 * ms, 0},
		{"reply came after the due time, read late", due.Add(30 * ms), due.Add(50 * ms), 30 * ms, 20 * ms},
		{"reply came in time, read late", due.Add(-2 * ms), due.Add(40 * ms), 0, 40 * ms},
		{"reply came exactly at the due time", due, due.Add(5 * ms), 0, 5 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			held, lag := heldOnWire(due, tc.freeAt, tc.woke)
			if held != tc.wantHeld || lag != tc.wantLag {
				t.Errorf("heldOnWire = (%v, %v), want (%v, %v)", held, lag, tc.wantHeld, tc.wantLag)
			}
		})
	}
}
