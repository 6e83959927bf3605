package prober

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/redistest"
)

// The keeper seeds the keys the probed commands use, each with its TTL and
// its bounded size, and no other: a key no command touches is not written.
// Then every probed command finds its key, and Cleanup leaves nothing.
func TestKeeperSeedsOnlyTheKeysInUse(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	ctx := context.Background()
	for _, tc := range []struct {
		cmds string
		want []string // key kinds, sorted
	}{
		{"ping", nil},
		{"ping,get,set", []string{"string"}},
		{"mget", []string{"string", "string2"}},
		{"incr,hgetall", []string{"counter", "hash"}},
		{"lrange,zrevrange,eval", []string{"list", "string", "zset"}},
		{"ping,get,set,incr,hset,hgetall,lpush,lrange,zadd,zrevrange,eval,mget",
			[]string{"counter", "hash", "list", "string", "string2", "zset"}},
	} {
		t.Run(tc.cmds, func(t *testing.T) {
			cfg := testProbeConfig(t, 10, time.Second, tc.cmds)
			k := NewKeeper(c, cfg)
			if err := k.Seed(ctx); err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := k.Cleanup(ctx); err != nil {
					t.Error(err)
				}
				if n := c.DBSize(ctx).Val(); n != 0 {
					t.Errorf("%d keys left after Cleanup", n)
				}
			}()
			keys := c.Keys(ctx, "*").Val()
			var kinds []string
			for _, key := range keys {
				kind, ok := strings.CutPrefix(key, cfg.Namespace.Key(""))
				if !ok {
					t.Errorf("seeded %q, outside the namespace", key)
					continue
				}
				kinds = append(kinds, kind)
				if ttl := c.PTTL(ctx, key).Val(); ttl <= 0 || ttl > cfg.KeyTTL {
					t.Errorf("%s: PTTL %v, want within (0, %v]", key, ttl, cfg.KeyTTL)
				}
			}
			slices.Sort(kinds)
			if !slices.Equal(kinds, tc.want) {
				t.Errorf("seeded %v, want %v", kinds, tc.want)
			}
			ks := newKeySet(cfg.Namespace)
			for key, n := range map[string]int64{ks.list: c.LLen(ctx, ks.list).Val(),
				ks.hash: c.HLen(ctx, ks.hash).Val(), ks.zset: c.ZCard(ctx, ks.zset).Val()} {
				if slices.Contains(keys, key) && n != seedFields {
					t.Errorf("%s holds %d elements, want %d", key, n, seedFields)
				}
			}
			// Every command's reply is a real one: no nil for a key it
			// reads that was not seeded.
			for _, cmd := range cfg.Commands {
				if cmd.Write {
					continue
				}
				if err := c.Do(ctx, cmd.args(ks, "v", cfg.KeyTTL)...).Err(); err != nil {
					t.Errorf("%s after the seed: %v", cmd.Name, err)
				}
			}
		})
	}
}
