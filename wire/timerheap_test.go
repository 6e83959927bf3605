package wire

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// A loop's timer heap gives the earliest timer first through any mix of
// adds, moves and removals (each owner holds at most one timer), and each
// timer knows whether it is armed.
func TestTimerHeapOrdersThroughMovesAndRemovals(t *testing.T) {
	t.Parallel()
	type owner struct {
		id int
		t  Timer
	}
	rng := rand.New(rand.NewPCG(1, 2))
	h := NewTimerHeap[*owner]()
	owners := make([]*owner, 300)
	for i := range owners {
		owners[i] = &owner{id: i}
	}
	in := map[*owner]bool{}
	for step := range 20000 {
		o := owners[rng.IntN(len(owners))]
		switch op := rng.IntN(10); {
		case op < 5: // add or move, ties included
			h.Set(&o.t, o, h.base.Add(time.Duration(rng.IntN(1000))*time.Microsecond))
			in[o] = true
		case op < 7:
			h.Remove(&o.t)
			delete(in, o)
		default: // take the earliest, as a loop does
			if h.Len() == 0 {
				continue
			}
			first, ft := h.First()
			if ft != &first.t {
				t.Fatalf("step %d: First's timer is not its owner's", step)
			}
			for other := range in {
				if other.t.At.Before(first.t.At) {
					t.Fatalf("step %d: first is at %v, but one is at %v", step, first.t.At.Sub(h.base), other.t.At.Sub(h.base))
				}
			}
			h.Remove(ft)
			delete(in, first)
		}
		if h.Len() != len(in) {
			t.Fatalf("step %d: %d timers, want %d", step, h.Len(), len(in))
		}
	}
	for i, e := range h.e {
		if e.t.index != i+1 || !in[e.v] || !e.t.Armed() {
			t.Fatalf("entry %d: index %d, in %v", i, e.t.index, in[e.v])
		}
	}
	// Drained, the timers come out in order.
	var got []time.Duration
	for h.Len() > 0 {
		o, ot := h.First()
		got = append(got, ot.At.Sub(h.base))
		h.Remove(ot)
		if o.t.Armed() {
			t.Fatalf("a removed timer is armed at %d", o.t.index)
		}
	}
	if !slices.IsSorted(got) || len(got) != len(in) {
		t.Errorf("drained %d timers, sorted %v; want %d sorted", len(got), slices.IsSorted(got), len(in))
	}
}
