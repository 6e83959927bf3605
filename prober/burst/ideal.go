package burst

import (
	"container/heap"
	"sync"
	"time"
)

// idealPool is the ideal client's connections, the one never late that
// the kernel-stamped charge replays (loadWorker.wireTime): when each of
// them would be free of its requests. A batch goes out on the ideal
// connection free first, whichever real connection carries it. Kept per
// real connection instead, a client that fell behind and had one
// connection take slot after slot (the first free again) replayed them
// all on one ideal connection, queued behind each other: at 10,000 ops/s
// on 4 connections the charge's queueing p99 read several times Redis's own
// wire time p99 (docs/performance.md, "Measured reasons"). The ideal client with 4
// connections queues only when all 4 would be busy.
//
// A worker takes an ideal connection when its batch goes out and gives it
// back when the batch lands; at most one batch per real connection is in
// flight, so there is always one to take. The worker's own connection's
// replay bounds it (loadWorker.launch): taken before the wire times in
// flight are known, the pool can be later than the connection itself. The lock is uncontended on the
// event loop and held for a heap step on the goroutine path.
type idealPool struct {
	mu   sync.Mutex
	free durationHeap // since t0; -1: free from the start
	size int
}

func newIdealPool(n int) *idealPool {
	p := &idealPool{free: make(durationHeap, n), size: n}
	for i := range p.free {
		p.free[i] = -1
	}
	return p
}

// take returns when the ideal connection free first is free, and takes it.
func (p *idealPool) take() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) == 0 {
		return -1 // not reached (one per batch in flight); free is safe
	}
	return heap.Pop(&p.free).(time.Duration)
}

// give returns an ideal connection, free from at.
func (p *idealPool) give(at time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) < p.size {
		heap.Push(&p.free, at)
	}
}

type durationHeap []time.Duration

func (h durationHeap) Len() int           { return len(h) }
func (h durationHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h durationHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *durationHeap) Push(x any)        { *h = append(*h, x.(time.Duration)) }
func (h *durationHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
