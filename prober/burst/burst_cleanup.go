package burst

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/prober"
)

// maxTrackedKeys bounds the written-key bitsets (8 MiB per key space);
// beyond it every write carries its TTL and cleanup relies on the SCAN
// sweep.
const maxTrackedKeys = 64 << 20

// unlinkBatch is how many keys one UNLINK names; unlinkPipeline how many
// UNLINKs go in one round trip.
const (
	unlinkBatch    = 1000
	unlinkPipeline = 8
)

// writtenKeys remembers which keys of each key space a burst wrote, set
// before the write is sent, so cleanup deletes exactly those, whether the
// burst completed, was aborted or was cancelled.
type writtenKeys struct {
	min   int64
	sets  map[byte][]atomic.Uint64
	count atomic.Int64
}

func newWrittenKeys(plan Plan) *writtenKeys {
	if plan.Keys.Size() > maxTrackedKeys {
		return nil
	}
	w := &writtenKeys{min: plan.Keys.Min, sets: map[byte][]atomic.Uint64{}}
	words := (plan.Keys.Size() + 63) / 64
	for _, m := range plan.Mix {
		if op := burstOps[burstOpIndex(m.Op)]; op.write && w.sets[op.kind] == nil {
			w.sets[op.kind] = make([]atomic.Uint64, words)
		}
	}
	return w
}

// mark records a write of key i of kind and reports whether it is the
// first. Without tracking, every write counts as a first.
func (w *writtenKeys) mark(kind byte, i int64) bool {
	if w == nil {
		return true
	}
	off := i - w.min
	bit := uint64(1) << (off % 64)
	old := w.sets[kind][off/64].Or(bit)
	if old&bit != 0 {
		return false
	}
	w.count.Add(1)
	return true
}

// Count is the number of distinct keys written.
func (w *writtenKeys) Count() int64 {
	if w == nil {
		return -1
	}
	return w.count.Load()
}

// unlinkAll deletes every written key with batched UNLINKs and returns how
// many keys it named.
func (w *writtenKeys) unlinkAll(ctx context.Context, c redis.Cmdable, ns prober.Namespace) (int64, error) {
	if w == nil {
		return 0, nil
	}
	var named int64
	pipe := c.Pipeline()
	batch := make([]any, 0, unlinkBatch+1)
	flush := func(force bool) error {
		if len(batch) > 1 {
			pipe.Do(ctx, batch...)
			named += int64(len(batch) - 1)
			batch = make([]any, 0, unlinkBatch+1)
		}
		if pipe.Len() >= unlinkPipeline || (force && pipe.Len() > 0) {
			if _, err := pipe.Exec(ctx); err != nil {
				return fmt.Errorf("unlink burst keys: %w", err)
			}
		}
		return nil
	}
	for kind, set := range w.sets {
		prefix := burstKeyPrefix(ns, kind)
		for wi := range set {
			bits := set[wi].Load()
			for b := 0; bits != 0; b++ {
				if bits&1 != 0 {
					if len(batch) == 0 {
						batch = append(batch, "unlink")
					}
					batch = append(batch, prefix+strconv.FormatInt(w.min+int64(wi)*64+int64(b), 10))
					if len(batch) > unlinkBatch {
						if err := flush(false); err != nil {
							return named, err
						}
					}
				}
				bits >>= 1
			}
		}
	}
	return named, flush(true)
}
