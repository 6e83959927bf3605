package collector

import (
	"sync"
	"time"

	"github.com/redis-prober/redis-prober/internal/host"
	"github.com/redis-prober/redis-prober/internal/redisinfo"
)

// ProcessCache shares reads of a redis-server's /proc files between the
// targets that point at the same server: many targets (and every Cluster
// node the prober reaches twice) can name one process, and reading its
// smaps_rollup is the dearest file of a refresh, once a target for the
// same few servers (docs/performance.md, "Measured reasons"). An entry serves reads for
// ttl; the zero ProcessCache reads every time.
type ProcessCache struct {
	ttl     time.Duration
	mu      sync.Mutex
	entries map[procKey]procEntry
}

type procKey struct{ pid, port int }

type procEntry struct {
	id    redisinfo.Identity
	at    time.Time
	stats *ProcessStats
	err   error
}

// maxProcessCacheEntries bounds the cache: more distinct servers than this
// on one host are read without it.
const maxProcessCacheEntries = 1024

// NewProcessCache returns a cache whose entries live for ttl.
func NewProcessCache(ttl time.Duration) *ProcessCache {
	return &ProcessCache{ttl: ttl, entries: map[procKey]procEntry{}}
}

// Read returns the process stats of id, from the cache when a read of the
// same process (same PID and port, a start time within host.StartSlack) is
// younger than the ttl.
func (c *ProcessCache) Read(paths host.Paths, id redisinfo.Identity, now time.Time) (*ProcessStats, error) {
	if c == nil || c.ttl <= 0 || id.PID <= 0 {
		return ReadProcess(paths, id)
	}
	k := procKey{id.PID, id.TCPPort}
	c.mu.Lock()
	e, ok := c.entries[k]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < c.ttl && now.Sub(e.at) >= 0 && sameStart(e.id, id) {
		return e.stats, e.err
	}
	stats, err := ReadProcess(paths, id)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= maxProcessCacheEntries {
		for key, old := range c.entries {
			if now.Sub(old.at) >= c.ttl {
				delete(c.entries, key)
			}
		}
	}
	if len(c.entries) < maxProcessCacheEntries {
		c.entries[k] = procEntry{id: id, at: now, stats: stats, err: err}
	}
	return stats, err
}

func sameStart(a, b redisinfo.Identity) bool {
	d := a.Started - b.Started
	return d <= host.StartSlack && d >= -host.StartSlack
}

// HostFactsCache shares one read of the host's kernel state (THP,
// sysctls, meminfo, governors) between every target's refresh within ttl:
// the host is the same for all of them. The nil HostFactsCache reads every
// time.
type HostFactsCache struct {
	ttl   time.Duration
	mu    sync.Mutex
	at    time.Time
	valid bool
	facts HostFacts
	err   error
}

// NewHostFactsCache returns a cache whose read lives for ttl.
func NewHostFactsCache(ttl time.Duration) *HostFactsCache { return &HostFactsCache{ttl: ttl} }

// Read returns the host facts of paths, from the cache when younger than
// the ttl. One cache serves one set of paths.
func (c *HostFactsCache) Read(paths host.Paths, now time.Time) (HostFacts, error) {
	if c == nil || c.ttl <= 0 {
		return ReadHostFacts(paths)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.valid && now.Sub(c.at) < c.ttl && now.Sub(c.at) >= 0 {
		return c.facts, c.err
	}
	c.facts, c.err = ReadHostFacts(paths)
	c.at, c.valid = now, true
	return c.facts, c.err
}
