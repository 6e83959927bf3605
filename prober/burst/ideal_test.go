package burst

import (
	"testing"
	"time"
)

// TestIdealReplay: the charge replays each request on the ideal client (one
// never late, with as many connections as the burst): its wait is queueing
// only when every ideal connection would still be busy with Redis.
func TestIdealReplay(t *testing.T) {
	const us = time.Microsecond
	type req struct {
		intended, tx, wire time.Duration
		conn               int // the real connection that sends it
		// landAfter: the reply lands once request landAfter has gone
		// out (0: at once), so batches of different connections overlap.
		landAfter int
	}
	for _, tc := range []struct {
		name  string
		conns int
		reqs  []req // sent one after another
		want  []time.Duration
	}{
		{
			// A client 5 ms behind drains its backlog on the connection
			// free first: Redis took 150 µs a request, slots are 100 µs
			// apart, and 4 ideal connections keep up, so no request
			// waited for Redis. (Replayed on one ideal connection, the
			// fifth was charged 350 µs.)
			name: "a backlog on one connection", conns: 4,
			reqs: []req{{0, 5000 * us, 150 * us, 0, 0}, {100 * us, 5150 * us, 150 * us, 0, 0}, {200 * us, 5300 * us, 150 * us, 0, 0},
				{300 * us, 5450 * us, 150 * us, 0, 0}, {400 * us, 5600 * us, 150 * us, 0, 0}},
			want: []time.Duration{150 * us, 150 * us, 150 * us, 150 * us, 150 * us},
		},
		{
			// One ideal connection: the same requests queue behind each
			// other, 50 µs more each.
			name: "one connection queues", conns: 1,
			reqs: []req{{0, 5000 * us, 150 * us, 0, 0}, {100 * us, 5150 * us, 150 * us, 0, 0}, {200 * us, 5300 * us, 150 * us, 0, 0}},
			want: []time.Duration{150 * us, 200 * us, 250 * us, 0, 0},
		},
		{
			// A took slot 0 and was idle from 10 µs; B's slot 1 took
			// 500 µs. Late, the client sends slot 2 on B and slot 3 on A:
			// B takes A's ideal connection, the pool's first. A's own
			// (free at 10 µs) still bounds A's: slot 3 waited for
			// nothing, as A itself did not.
			name: "a connection's own replay bounds the pool's", conns: 2,
			reqs: []req{{0, 0, 10 * us, 0, 0}, {100 * us, 100 * us, 500 * us, 1, 0}, {200 * us, 700 * us, 50 * us, 1, 3},
				{300 * us, 700 * us, 50 * us, 0, 0}},
			want: []time.Duration{10 * us, 500 * us, 50 * us, 50 * us},
		},
		{
			// Redis stalled 10 ms on both ideal connections' requests:
			// the third, due during the stall, waited for a connection
			// (charged from its due time, against coordinated omission).
			name: "a stall that held every connection", conns: 2,
			reqs: []req{{0, 0, 10000 * us, 0, 0}, {100 * us, 100 * us, 9900 * us, 1, 0}, {200 * us, 10000 * us, 50 * us, 0, 0}},
			want: []time.Duration{10000 * us, 9900 * us, 9850 * us, 0, 0},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &burstLoad{ideal: newIdealPool(tc.conns)}
			workers := make([]*loadWorker, tc.conns)
			for c := range workers {
				workers[c] = &loadWorker{l: l, lc: &loadClient{}, intended: make([]time.Duration, 1), vFree: -1}
			}
			land := func(i int) {
				r := tc.reqs[i]
				w := workers[r.conn]
				w.sentAt, w.tx, w.txOK = r.tx, r.tx, true
				w.rxAt, w.rxOK = r.tx+r.wire, true
				w.intended[0] = r.intended
				lat, lag, stamped, ok := w.wireTime(0, nil, r.tx+r.wire+time.Millisecond)
				w.landed()
				if !ok || !stamped {
					t.Fatalf("request %d: not charged by its stamps", i)
				}
				if lat != tc.want[i] {
					t.Errorf("request %d: charged %v, want %v (lag %v)", i, lat, tc.want[i], lag)
				}
				// What is not Redis's is the client's lag: the two add
				// up to the time from the due time to the reply.
				if lag < 0 || lat+lag != r.tx+r.wire-r.intended {
					t.Errorf("request %d: charged %v and lag %v, which do not add up to %v", i, lat, lag, r.tx+r.wire-r.intended)
				}
			}
			var held []int
			for i, r := range tc.reqs {
				w := workers[r.conn]
				w.intended[0], w.now = r.intended, r.tx
				w.launch(1)
				if r.landAfter == 0 {
					land(i)
				} else {
					held = append(held, i)
				}
				for len(held) > 0 && tc.reqs[held[0]].landAfter <= i {
					land(held[0])
					held = held[1:]
				}
			}
			if len(held) > 0 {
				t.Fatalf("requests %v never landed", held)
			}
		})
	}
}
