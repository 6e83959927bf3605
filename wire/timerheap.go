package wire

import "time"

// Timer is one entry's place in a TimerHeap: its due time and where it
// sits. The zero Timer is not in any heap.
type Timer struct {
	At    time.Time
	index int // 1 + its index in the heap; 0 when it is not in one
}

// Armed tells whether the timer is in its heap.
func (t *Timer) Armed() bool { return t.index > 0 }

// TimerHeap orders a loop's timers, the earliest first: a 4-ary heap of
// (key, timer, owner) entries, the key the timer's monotonic nanoseconds
// since the heap's base. With container/heap every comparison was two
// interface calls and two time.Time comparisons through pointers; at
// 1,000 probe targets the heap moves 30,000 times a second, and its Less
// alone showed in the prober's profile (docs/performance.md, "Measured
// reasons"). Four children a node halve the
// depth, and the keys sit next to each other. T is the owner a loop gets
// back (its connection); no method of it is called.
type TimerHeap[T any] struct {
	base time.Time
	e    []timerEntry[T]
}

type timerEntry[T any] struct {
	key int64
	t   *Timer
	v   T
}

// NewTimerHeap returns an empty heap.
func NewTimerHeap[T any]() TimerHeap[T] { return TimerHeap[T]{base: time.Now()} }

// Len is how many timers are armed.
func (h *TimerHeap[T]) Len() int { return len(h.e) }

// First is the owner of the earliest timer and that timer; the heap is
// not empty.
func (h *TimerHeap[T]) First() (T, *Timer) { return h.e[0].v, h.e[0].t }

// Set arms t, owned by v, at at: it is added or moved.
func (h *TimerHeap[T]) Set(t *Timer, v T, at time.Time) {
	t.At = at
	key := int64(at.Sub(h.base))
	if i := t.index - 1; i >= 0 {
		h.e[i].key = key
		h.fix(i)
		return
	}
	h.e = append(h.e, timerEntry[T]{key, t, v})
	t.index = len(h.e)
	h.up(len(h.e) - 1)
}

// Remove disarms t, if it is armed.
func (h *TimerHeap[T]) Remove(t *Timer) {
	i := t.index - 1
	if i < 0 {
		return
	}
	last := len(h.e) - 1
	if i != last {
		h.swap(i, last)
	}
	h.e[last] = timerEntry[T]{}
	h.e = h.e[:last]
	t.index = 0
	if i < last {
		h.fix(i)
	}
}

func (h *TimerHeap[T]) fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h *TimerHeap[T]) up(i int) {
	for i > 0 {
		p := (i - 1) / 4
		if h.e[p].key <= h.e[i].key {
			return
		}
		h.swap(i, p)
		i = p
	}
}

// down sifts i towards the leaves; false when it did not move.
func (h *TimerHeap[T]) down(i int) bool {
	start, n := i, len(h.e)
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c
		for j := c + 1; j < min(c+4, n); j++ {
			if h.e[j].key < h.e[m].key {
				m = j
			}
		}
		if h.e[m].key >= h.e[i].key {
			break
		}
		h.swap(i, m)
		i = m
	}
	return i != start
}

func (h *TimerHeap[T]) swap(i, j int) {
	h.e[i], h.e[j] = h.e[j], h.e[i]
	h.e[i].t.index, h.e[j].t.index = i+1, j+1
}
