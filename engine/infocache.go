package engine

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// infoTTL is how long one INFO reply serves a node's services: the
// collectors (every --collector.refresh-interval), change detection (every
// --changes.interval) and the burst governor all ask for the whole INFO,
// mostly within the same second; a second is fresh enough for each.
const infoTTL = time.Second

// infoCache is a go-redis hook on a node's control client that answers
// INFO (with no section) from the last reply younger than its ttl, so the
// node is read once where three services asked.
type infoCache struct {
	ttl  time.Duration
	now  func() time.Time
	mu   sync.Mutex
	at   time.Time
	text string
	ok   bool
	// release lets a stale text go; one timer a cache, moved on by every
	// store, not one a read.
	release *time.Timer
}

var _ redis.Hook = (*infoCache)(nil)

func newInfoCache(ttl time.Duration) *infoCache { return &infoCache{ttl: ttl, now: time.Now} }

func (c *infoCache) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *infoCache) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (c *infoCache) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if len(cmd.Args()) != 1 || !strings.EqualFold(cmd.Name(), "info") {
			return next(ctx, cmd)
		}
		if text, ok := c.fresh(); ok && setText(cmd, text) {
			return nil
		}
		now := c.now()
		if err := next(ctx, cmd); err != nil {
			return err
		}
		if s, ok := textOf(cmd); ok {
			c.mu.Lock()
			c.text, c.at, c.ok = s, now, true
			// A stale text serves nobody: let it go once its ttl is
			// over rather than keep a few KiB a node until the next INFO.
			if c.release == nil {
				c.release = time.AfterFunc(c.ttl, c.drop)
			} else {
				c.release.Reset(c.ttl)
			}
			c.mu.Unlock()
		}
		return nil
	}
}

// fresh is the last INFO text while it is younger than the ttl, without
// asking Redis.
func (c *infoCache) fresh() (string, bool) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ok && now.Sub(c.at) < c.ttl && !now.Before(c.at) {
		return c.text, true
	}
	return "", false
}

// drop lets the text go if it is past its ttl (a store since the timer
// was set moved it on).
func (c *infoCache) drop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ok && c.now().Sub(c.at) >= c.ttl {
		c.text, c.ok = "", false
	}
}

// setText answers cmd with an INFO text, for the command types go-redis
// returns for INFO (client.Info) and for Do("info").
func setText(cmd redis.Cmder, text string) bool {
	switch c := cmd.(type) {
	case *redis.StringCmd:
		c.SetVal(text)
	case *redis.Cmd:
		c.SetVal(text)
	default:
		return false
	}
	return true
}

func textOf(cmd redis.Cmder) (string, bool) {
	switch c := cmd.(type) {
	case *redis.StringCmd:
		return c.Val(), true
	case *redis.Cmd:
		s, ok := c.Val().(string)
		return s, ok
	}
	return "", false
}
