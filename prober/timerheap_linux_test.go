package prober

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The loop's timer heap gives the earliest timer first through any mix of
// adds, moves and removals (each connection holds at most one timer), and
// each connection's index says where it is, or -1 when it is out.
func TestTimerHeapOrdersThroughMovesAndRemovals(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	h := newTimerHeap()
	conns := make([]*pollConn, 300)
	for i := range conns {
		conns[i] = &pollConn{index: -1}
	}
	in := map[*pollConn]bool{}
	for step := range 20000 {
		pc := conns[rng.IntN(len(conns))]
		switch op := rng.IntN(10); {
		case op < 5: // add or move, ties included
			pc.at = h.base.Add(time.Duration(rng.IntN(1000)) * time.Microsecond)
			h.set(pc)
			in[pc] = true
		case op < 7:
			h.remove(pc)
			delete(in, pc)
		default: // take the earliest, as fire does
			if h.len() == 0 {
				continue
			}
			first := h.first()
			for other := range in {
				if other.at.Before(first.at) {
					t.Fatalf("step %d: first is at %v, but one is at %v", step, first.at.Sub(h.base), other.at.Sub(h.base))
				}
			}
			h.remove(first)
			delete(in, first)
		}
		if h.len() != len(in) {
			t.Fatalf("step %d: %d timers, want %d", step, h.len(), len(in))
		}
	}
	for i, e := range h.e {
		if e.pc.index != i || !in[e.pc] {
			t.Fatalf("entry %d: index %d, in %v", i, e.pc.index, in[e.pc])
		}
	}
	// Drained, the timers come out in order.
	var got []time.Duration
	for h.len() > 0 {
		pc := h.first()
		got = append(got, pc.at.Sub(h.base))
		h.remove(pc)
		if pc.index != -1 {
			t.Fatalf("a removed connection has index %d", pc.index)
		}
	}
	if !slices.IsSorted(got) || len(got) != len(in) {
		t.Errorf("drained %d timers, sorted %v; want %d sorted", len(got), slices.IsSorted(got), len(in))
	}
}
