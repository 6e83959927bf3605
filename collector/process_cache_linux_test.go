package collector

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/host"
	"github.com/redis-prober/redis-prober/internal/redisinfo"
)

// Targets naming one server share its /proc read within the ttl; another
// port, another start time or an older read go to /proc again.
func TestProcessCacheSharesReads(t *testing.T) {
	// A copy of the fixture, so the test can see whether a read happened
	// by changing the file underneath.
	dir := t.TempDir()
	src := "testdata/hosts/untuned/proc"
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	paths := host.Paths{ProcFS: dir, SysFS: "testdata/hosts/untuned/sys"}
	status := filepath.Join(dir, "1021", "status")
	orig, err := os.ReadFile(status)
	if err != nil {
		t.Fatal(err)
	}
	c := NewProcessCache(time.Second)
	t0 := time.Now()
	id := redisinfo.Identity{PID: 1021, TCPPort: 6379}
	first, err := c.Read(paths, id, t0)
	if err != nil {
		t.Fatal(err)
	}
	// The process file changes (here: vanishes): a read within the ttl is
	// still served from the cache.
	if err := os.Remove(status); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		id     redisinfo.Identity
		at     time.Duration
		cached bool
	}{
		{"same server, within the ttl", id, 500 * time.Millisecond, true},
		{"start time within the slack", redisinfo.Identity{PID: 1021, TCPPort: 6379, Started: 1}, 500 * time.Millisecond, true},
		{"another port", redisinfo.Identity{PID: 1021, TCPPort: 6380}, 500 * time.Millisecond, false},
		{"after the ttl", id, 1500 * time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.Read(paths, tc.id, t0.Add(tc.at))
			if tc.cached && (err != nil || got != first) {
				t.Fatalf("not from the cache: %v, %v", got, err)
			}
			if !tc.cached && err == nil {
				t.Fatalf("served %v from the cache; want a fresh read (which fails: the file is gone)", got)
			}
		})
	}
	if err := os.WriteFile(status, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	// A nil cache reads every time.
	var none *ProcessCache
	if _, err := none.Read(paths, id, t0); err != nil {
		t.Fatal(err)
	}
}

func TestHostFactsCacheSharesReads(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/hosts/untuned")); err != nil {
		t.Fatal(err)
	}
	paths := host.Paths{ProcFS: filepath.Join(dir, "proc"), SysFS: filepath.Join(dir, "sys")}
	c := NewHostFactsCache(time.Second)
	t0 := time.Now()
	first, err := c.Read(paths, t0)
	if err != nil || first.THPEnabled == "" {
		t.Fatalf("first read: %+v, %v", first, err)
	}
	thp := filepath.Join(dir, "sys/kernel/mm/transparent_hugepage/enabled")
	if err := os.WriteFile(thp, []byte("always madvise [never]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Read(paths, t0.Add(500*time.Millisecond)); got.THPEnabled != first.THPEnabled {
		t.Errorf("within the ttl: THP %q, want the cached %q", got.THPEnabled, first.THPEnabled)
	}
	if got, _ := c.Read(paths, t0.Add(1500*time.Millisecond)); got.THPEnabled != "never" {
		t.Errorf("after the ttl: THP %q, want a fresh read (never)", got.THPEnabled)
	}
}
