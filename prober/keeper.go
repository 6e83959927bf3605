package prober

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Keeper owns the probe's keys on one target: it (re)creates them with their
// TTL so reads find data and lists stay bounded, and deletes them on the way
// out. It works on a control client, never on a probe connection.
type Keeper struct {
	client *redis.Client
	keys   keySet
	ns     Namespace
	// seed is built once: at 1,000 targets seeds run 100 times a second
	// in all.
	seed [][]any
}

// NewKeeper returns the keeper of the probe keys of cfg.
func NewKeeper(client *redis.Client, cfg ProbeConfig) *Keeper {
	keys := newKeySet(cfg.Namespace)
	return &Keeper{client: client, keys: keys, ns: cfg.Namespace,
		seed: seedCommands(keys, keysUsed(keys, cfg.Commands), ProbeValue(cfg.DataSize), cfg.KeyTTL)}
}

// Seed writes the probe keys in use afresh, each with its TTL.
func (k *Keeper) Seed(ctx context.Context) error {
	var err error
	switch len(k.seed) {
	case 0: // PING alone uses no key
		return nil
	case 1:
		err = k.client.Do(ctx, k.seed[0]...).Err()
	default:
		_, err = k.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, args := range k.seed {
				p.Do(ctx, args...)
			}
			return nil
		})
	}
	if err != nil {
		return fmt.Errorf("seed probe keys: %w", err)
	}
	return nil
}

// Cleanup deletes the probe keys, then sweeps the namespace tag with SCAN in
// case an older run left something behind.
func (k *Keeper) Cleanup(ctx context.Context) error {
	if err := k.client.Unlink(ctx, k.keys.all()...).Err(); err != nil {
		return fmt.Errorf("delete probe keys: %w", err)
	}
	return SweepKeys(ctx, k.client, k.ns.Pattern())
}

// SweepKeys unlinks every key matching pattern, in SCAN batches.
func SweepKeys(ctx context.Context, c redis.Cmdable, pattern string) error {
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx, cursor, pattern, 500).Result()
		if err != nil {
			return fmt.Errorf("scan %s: %w", pattern, err)
		}
		if len(keys) > 0 {
			if err := c.Unlink(ctx, keys...).Err(); err != nil {
				return fmt.Errorf("unlink: %w", err)
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}
