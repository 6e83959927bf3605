package burst

import (
	"context"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/redis-prober/redis-prober/internal/resp"
	"github.com/redis-prober/redis-prober/prober"
)

// loadWorker is one client of a running load: it claims the slots that
// are due, encodes them as one pipeline, exchanges it with the server and
// records every reply. It owns one connection at a time; a broken one is
// replaced on the next batch.
type loadWorker struct {
	l     *burstLoad
	lc    *loadClient
	conn  *burstConn // nil after a failure, until the next dial
	shard *statShard
	seq   []int // the mix's request cycle
	pos   int   // where this client is in seq
	rng   *rand.Rand
	lim   resp.Limits

	readGen, writeGen KeyGen
	shared            []byte // every value is a prefix of it
	args              reqArgs
	ops               []*burstOp // per mix entry
	prefixes          [][]byte   // per mix entry
	keyBufs           [mgetKeys][]byte

	batch    []sample
	intended []time.Duration // per request of the batch, since t0
	timer    *time.Timer
	now      time.Duration // when the batch was claimed, since t0
	idleFrom time.Duration // when this client began waiting for a slot; -1 when it did not
	redial   time.Duration // pause before the next dial

	// The kernel's stamps and the ideal schedule, since t0: tx is when the
	// batch's write left (txOK); vFree is when this connection would have
	// been free of its previous requests had this client never been late
	// (their due times plus Redis's wire time; -1 on a new connection);
	// batchFree is when the ideal client had a connection free for the
	// batch (the earlier of vFree and the idealPool's first), vEnd when it
	// will be free of this batch's.
	tx, vFree, batchFree, vEnd time.Duration
	txOK                       bool
	// rxAt is when the read that completed the reply being recorded
	// arrived, by its kernel stamp, since t0 (rxOK).
	rxAt time.Duration
	rxOK bool
	// sentAt is when the batch's write began, since t0 (-1 before one).
	sentAt time.Duration
}

func newLoadWorker(l *burstLoad, ci int, lc *loadClient, conn *burstConn, shard *statShard, seq []int) *loadWorker {
	plan := l.plan
	w := &loadWorker{l: l, lc: lc, conn: conn, shard: shard, seq: seq,
		pos:      (ci * 7) % len(seq), // clients start at different points of the cycle
		rng:      rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(ci))),
		lim:      burstLimits(plan),
		readGen:  plan.Keys.Gen(plan.Keys.GetPattern),
		writeGen: plan.Keys.Gen(plan.Keys.SetPattern),
		shared:   valueBytes(max(plan.DataSize, plan.DataMax)),
		args:     reqArgs{ttl: resp.BulkString(strconv.FormatInt(plan.KeyTTL.Milliseconds(), 10))},
		ops:      make([]*burstOp, len(plan.Mix)),
		prefixes: make([][]byte, len(plan.Mix)),
		batch:    make([]sample, plan.Pipeline),
		intended: make([]time.Duration, plan.Pipeline),
		idleFrom: -1,
		vFree:    -1,
		sentAt:   -1,
	}
	if plan.Keys.GetPattern == 'S' && plan.Keys.SetPattern == 'S' {
		w.writeGen = w.readGen // one walk for both, as memtier's S:S
	}
	for m, e := range plan.Mix {
		w.ops[m] = &burstOps[burstOpIndex(e.Op)]
		w.prefixes[m] = []byte(burstKeyPrefix(plan.Namespace, w.ops[m].kind))
	}
	return w
}

// run loops over batches until a bound, an abort or ctx ends the load.
func (w *loadWorker) run(ctx context.Context) {
	w.timer = time.NewTimer(time.Hour)
	defer w.timer.Stop()
	defer func() {
		if w.conn != nil {
			w.conn.Close()
		}
	}()
	l := w.l
	for !l.stopped.Load() {
		n, ok := w.claim()
		if !ok {
			return
		}
		if n == 0 {
			continue // waited for a slot
		}
		dialErr, ok := w.connect(ctx)
		if !ok {
			return
		}
		var buf []byte
		if w.conn != nil {
			buf = w.conn.w[:0]
		}
		buf, n = w.encode(buf, n)
		if n == 0 {
			return
		}
		ioErr := w.exchange(buf, n, dialErr)
		w.shard.add(w.batch[:n])
		switch {
		case ioErr == nil:
			w.redial = 0
		case w.conn != nil:
			w.conn.Close()
			w.conn = nil
			w.redial = nextRedialPause(w.redial)
		}
	}
}

// claim takes up to a pipeline of due slots and sets their intended start
// times; paced, it waits for the dispatcher's next slot. It trims
// the batch to the requests bound (which counts measured requests only).
// ok is false when the load is over.
func (w *loadWorker) claim() (n int, ok bool) {
	l, plan := w.l, w.l.plan
	if l.b.stall != nil {
		l.b.stall()
	}
	now := time.Since(l.t0)
	if now >= l.end {
		l.stop(Decision{}, "test-time")
		return 0, false
	}
	if l.slots != nil {
		if n, ok = w.takeSlots(now); !ok {
			return 0, false
		}
		now = time.Since(l.t0)
	} else {
		_, n, _ = l.pacer.ClaimDue(now, plan.Pipeline) // unpaced: every slot is due
	}
	w.now = now
	if l.slots == nil {
		for j := range n {
			w.intended[j] = now
		}
	}
	return w.bound(n), true
}

// bound trims a batch of n requests, their due times in w.intended, to
// the requests bound (which counts measured requests only) and says how
// many are left.
func (w *loadWorker) bound(n int) int {
	l, plan := w.l, w.l.plan
	measuredFrom := n
	for j := range n {
		if w.intended[j] >= l.warmEnd {
			measuredFrom = j
			break
		}
	}
	if plan.Requests > 0 && measuredFrom < n {
		want := int64(n - measuredFrom)
		if over := l.requests.Add(want) - plan.Requests; over > 0 {
			n -= int(min(over, want))
			if n <= measuredFrom {
				l.stop(Decision{}, "requests")
			}
		}
	}
	return n
}

// connect dials again when the last connection failed, after the redial
// pause; a failed dial fails the batch (dialErr). ok is false when the load
// stopped during the pause.
func (w *loadWorker) connect(ctx context.Context) (dialErr error, ok bool) {
	if w.conn != nil {
		return nil, true
	}
	l := w.l
	if w.redial > 0 {
		w.timer.Reset(w.redial)
		select {
		case <-w.timer.C:
		case <-l.stopCh:
			return nil, false
		}
	}
	w.vFree = -1
	if w.conn, dialErr = dialBurst(ctx, l.b.Endpoint, l.plan.Timeout, w.lim, l.plan.Rate > 0, l.register); dialErr != nil {
		w.conn = nil
		w.redial = nextRedialPause(w.redial)
	}
	return dialErr, true
}

// encode writes the batch's n requests into the connection's buffer: the
// next commands of the cycle, their keys drawn from the generators, every
// written key marked before it is sent. The bytes bound may end the batch
// (and the load) early: it returns the buffer and how many requests it holds.
func (w *loadWorker) encode(buf []byte, n int) ([]byte, int) {
	l, plan := w.l, w.l.plan
	for j := range n {
		m := w.seq[w.pos]
		w.pos = (w.pos + 1) % len(w.seq)
		op := w.ops[m]
		gen := w.readGen
		if op.write {
			gen = w.writeGen
		}
		idx := gen.Next(w.rng)
		for k := range op.keys {
			v := idx
			if k > 0 {
				v = gen.Next(w.rng)
			}
			w.keyBufs[k] = strconv.AppendInt(append(w.keyBufs[k][:0], w.prefixes[m]...), v, 10)
			w.args.keys[k] = w.keyBufs[k]
		}
		s := &w.batch[j]
		*s = sample{op: m, measured: w.intended[j] >= l.warmEnd}
		wireStart := len(buf)
		if op.write {
			size := plan.DataSize
			if plan.DataMax > plan.DataSize {
				size += w.rng.IntN(plan.DataMax - plan.DataSize + 1)
			}
			w.args.value = w.shared[:size]
			payload := int64(len(w.keyBufs[0]) + size)
			if l.bytes.Add(payload) > plan.MaxBytes {
				l.bytes.Add(-payload)
				l.stop(Decision{}, "bytes")
				return buf, j
			}
			w.args.elem = w.rng.IntN(hashFields * zsetMembers)
			// Marked before it is sent: cleanup deletes it even if
			// the reply never comes.
			first := l.written.mark(op.kind, idx)
			buf = op.encode(buf, &w.args)
			if first && !op.ttlInline {
				buf = encodeExpire(buf, &w.args)
				s.extra = true
			}
		} else {
			buf = op.encode(buf, &w.args)
		}
		s.out = int64(len(buf) - wireStart)
	}
	return buf, n
}

// exchange sends the batch as one pipeline and reads its replies in
// order, recording each as it comes. A lost stream (or a failed dial,
// dialErr) fails the rest of the batch alike; it returns that error.
func (w *loadWorker) exchange(buf []byte, n int, dialErr error) error {
	w.launch(n)
	ioErr := dialErr
	if w.conn != nil {
		w.conn.w = buf
		w.sentAt = time.Since(w.l.t0)
		ioErr = w.conn.flush()
		if ioErr == nil && w.conn.stamps != nil {
			if tx, _, ok := w.conn.stamps.LastWrite(); ok {
				w.tx, w.txOK = tx.Sub(w.l.t0), true
			}
		}
	}
	for j := range n {
		s := &w.batch[j]
		var err error
		var rn, nils int64
		if ioErr == nil {
			rn, nils, err = w.conn.r.Reply()
			if s.extra && (err == nil || requestResult(err) == prober.ResultError) {
				if _, _, xerr := w.conn.r.Reply(); xerr != nil {
					if _, ok := xerr.(resp.ErrorReply); !ok {
						err = xerr
					}
				}
			}
			if err != nil {
				if _, ok := err.(resp.ErrorReply); !ok {
					ioErr = err // the stream is lost: the rest fail alike
				}
			}
		} else {
			err = ioErr
		}
		w.rxOK = false
		if ioErr == nil && w.conn.stamps != nil {
			if rx, _, ok := w.conn.stamps.LastRead(); ok {
				w.rxAt, w.rxOK = rx.Sub(w.l.t0), true
			}
		}
		w.record(s, j, rn, nils, err)
	}
	w.landed()
	return ioErr
}

// launch marks a batch of n requests as going out now: the governor sees
// it in flight, and the ideal client's replay takes the ideal connection
// free first: the pool's first, or this connection's own when that is
// earlier (the pool is taken from at each launch, before the wire times
// of the batches in flight are known, so another connection may hold the
// ideal connection this one left: this one's own replay is never later
// than itself, and the charge never above the client's own reading).
func (w *loadWorker) launch(n int) {
	w.batchFree = min(w.l.ideal.take(), w.vFree)
	from := w.intended[0]
	if w.batchFree <= from {
		// The ideal client had a connection free at the due time: a late
		// send is this client's lag, which the governor must not take
		// for Redis's.
		from = max(from, w.now)
	}
	w.lc.inflightFrom.Store(int64(from))
	w.lc.inflightN.Store(int64(n))
	w.txOK, w.vEnd = false, w.batchFree
}

// landed marks the batch as answered (or failed), and gives its ideal
// connection back.
func (w *loadWorker) landed() {
	w.lc.inflightN.Store(0)
	w.idleFrom = -1
	w.l.ideal.give(w.vEnd)
	w.vFree = w.vEnd
}

// record finishes request j of the batch: its latency, its result, hits
// and misses, and the recorder when measured.
func (w *loadWorker) record(s *sample, j int, rn, nils int64, err error) {
	l := w.l
	end := time.Since(l.t0)
	start := w.intended[j]
	if w.idleFrom >= 0 && start > w.idleFrom {
		// This client sat idle waiting for the slot: its timer's
		// lateness is host jitter, not Redis latency (as the probe
		// charges it, see prober's chargeFrom).
		start = max(start, w.now)
	}
	s.lat, s.lag = end-start, max(w.now-w.intended[j], 0)
	if lat, lag, stamped, ok := w.wireTime(j, err, end); ok {
		if stamped && lat > s.lat {
			l.b.stampOverUser.Add(1)
		}
		s.lat, s.lag, s.stamped = lat, lag, stamped
	}
	s.res = requestResult(err)
	s.hit, s.miss = w.ops[s.op].hitsOf(rn, nils, err)
	if w.ops[s.op].hits == hitsBulk && rn > 0 {
		s.in = rn
	}
	s.end = end
	if s.res != prober.ResultOK && l.isAborted() {
		s.interrupted = true
		l.interrupted.Add(1)
	}
	if s.measured && !s.interrupted && l.b.Recorder != nil {
		l.b.Recorder.Record(s.op, s.res, s.lat)
	}
}

// wireTime charges request j of the batch by the kernel's stamps, and
// gives the client's own lateness apart (the schedule lag). It replays the
// request on an ideal client, one never late: it goes at its due time, or
// when the connection's previous requests would have been answered if that
// is later (all its connections were busy with Redis: that wait is Redis's,
// charged from the due time, against coordinated omission), and takes
// what Redis took on the wire (its write's departure to the arrival of
// the read that completed its reply). What the real client took beyond
// the ideal one's start to send it (a late wake-up, a busy host, a backlog
// of its own making) is lag, never Redis latency.
//
// Without trustworthy stamps (a unix socket, the first replies of a
// socket before the kernel turned receive stamps on) the replay runs on
// the prober's clock: from the write's start to the read at end, which
// then holds this host's delay in reading, but still not the client's
// lateness in sending (stamped is false). ok is false for a request that
// got no reply (it is charged from its due time).
func (w *loadWorker) wireTime(j int, err error, end time.Duration) (lat, lag time.Duration, stamped, ok bool) {
	if err != nil && !isErrorReply(err) || w.sentAt < 0 {
		return 0, 0, false, false
	}
	tx, rx := w.sentAt, end
	if stamped = w.txOK && w.rxOK && w.rxAt >= w.tx; stamped {
		tx, rx = w.tx, w.rxAt
	}
	wire := rx - tx
	if wire < 0 {
		return 0, 0, false, false
	}
	intended := w.intended[j]
	start := max(intended, w.batchFree)
	lag = max(tx-start, 0)
	w.vEnd = max(w.vEnd, start+wire)
	return start + wire - intended, lag, stamped, true
}

func isErrorReply(err error) bool {
	_, ok := err.(resp.ErrorReply)
	return ok
}

// takeSlots waits for the next paced slot, and takes as many more as are
// already due, up to a pipeline; their due times go to w.intended. ok is
// false when the load is over.
func (w *loadWorker) takeSlots(now time.Duration) (n int, ok bool) {
	l := w.l
	var k int64
	select {
	case k = <-l.slots:
	default:
		w.idleFrom = now
		select {
		case k = <-l.slots:
		case <-l.stopCh:
			return 0, false
		}
	}
	w.intended[0] = l.pacer.Due(k, 0)
	for n = 1; n < l.plan.Pipeline; n++ {
		select {
		case k = <-l.slots:
			w.intended[n] = l.pacer.Due(k, 0)
		default:
			return n, true
		}
	}
	return n, true
}
