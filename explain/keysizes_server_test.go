package explain

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/prober"
)

// TestKeySizesRealRedis8: a real Redis 8 with a 3 MB string and a hash of
// 70,000 fields: the reader says nothing of key sizes while no slow
// request waits, and their largest bins once one does, from the INFO it
// reads anyway (the default INFO carries Keysizes).
func TestKeySizesRealRedis8(t *testing.T) {
	srv := startPeer(t, "redis-8", "redis", 8, 0)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	c := srv.Client()
	if err := c.Set(ctx, "big", strings.Repeat("x", 3_000_000), 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Eval(ctx, "for i=1,70000 do redis.call('hset', KEYS[1], i, i) end return 1", []string{"h"}).Err(); err != nil {
		t.Fatal(err)
	}
	n := NewNode(Config{Threshold: 10 * time.Millisecond})
	r := NewReader(ReaderConfig{Node: n, Client: c, NoProc: true})
	r.Tick(ctx)
	if k := n.KeySizes(); !k.Empty() {
		t.Fatalf("no slow request waits, yet key sizes %v", k)
	}
	n.Tap(prober.NopRecorder{}).Record(0, prober.ResultOK, 50*time.Millisecond)
	if !n.Pending() {
		t.Fatal("the slow request does not wait")
	}
	r.Tick(ctx)
	want := KeySizes{Largest: [numKeyKinds]uint64{Strings: 2 << 20, Hashes: 64 << 10}}
	if got := n.KeySizes(); got != want {
		t.Errorf("key sizes %v (%+v), want %v", got, got, want)
	}
}
