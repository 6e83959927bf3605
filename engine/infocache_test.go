package engine

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/internal/redistest"
)

// infoCalls is how many INFO commands the server has run.
func infoCalls(t *testing.T, c *redis.Client) int {
	t.Helper()
	s, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(s, "\r\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_info:calls="); ok {
			n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			return n
		}
	}
	return 0
}

func TestInfoCacheSharesOneRead(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	check := srv.Client()
	defer check.Close()

	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), Protocol: 2, DisableIdentity: true})
	defer c.Close()
	// An hour's ttl on a fake clock: the real-time release of a stale text
	// (below) can never fire within the test, however slow the host.
	cache := newInfoCache(time.Hour)
	clock := time.Now()
	cache.now = func() time.Time { return clock }
	c.AddHook(cache)

	if text, ok := cache.fresh(); ok || text != "" {
		t.Fatalf("an empty cache gave %q as fresh", text)
	}
	before := infoCalls(t, check)
	a := c.Info(ctx).Val()           // the collectors
	b, _ := c.Do(ctx, "info").Text() // the same asked through Do
	_ = c.Info(ctx, "server").Val()  // a section is never cached
	if a == "" || a != b || !strings.Contains(a, "redis_version") {
		t.Fatalf("cached reply differs or is empty: %q vs %q", a, b)
	}
	if text, ok := cache.fresh(); !ok || text != a {
		t.Errorf("fresh() = %q, %v within the ttl, want the reply the collectors got", text, ok)
	}
	clock = clock.Add(90 * time.Minute) // past the ttl: read again
	if _, ok := cache.fresh(); ok {
		t.Error("fresh() past the ttl says the text is fresh")
	}
	_ = c.Info(ctx).Val()
	// The server ran: the first INFO, INFO server, the second INFO, and
	// the check's own first INFO commandstats.
	if got := infoCalls(t, check) - before; got != 4 {
		t.Errorf("server ran %d INFO commands, want 4 (two shared reads, a section, the check)", got)
	}
}

// A text past its ttl serves nobody: the cache lets it go instead of
// keeping a few KiB a node until the next INFO (that a fresh one is served
// is TestInfoCacheSharesOneRead's).
func TestInfoCacheLetsAStaleTextGo(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), Protocol: 2, DisableIdentity: true})
	defer c.Close()
	cache := newInfoCache(20 * time.Millisecond)
	c.AddHook(cache)
	if c.Info(context.Background()).Val() == "" {
		t.Fatal("no INFO reply")
	}
	held := func() bool {
		cache.mu.Lock()
		defer cache.mu.Unlock()
		return cache.text != ""
	}
	deadline := time.Now().Add(5 * time.Second)
	for held() {
		if time.Now().After(deadline) {
			t.Fatal("the text is still held 5 s after its 20 ms ttl")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
