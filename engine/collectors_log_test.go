package engine

import (
	"log/slog"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/collector"
	"github.com/redis-prober/redis-prober/internal/host"
	"github.com/redis-prober/redis-prober/internal/logtest"
	"github.com/redis-prober/redis-prober/internal/nodeid"
	"github.com/redis-prober/redis-prober/internal/redistest"
	"github.com/redis-prober/redis-prober/prober"
)

// A Redis restart under many nodes is one "collector failed" line a node
// and one "collector recovered" line a node, however many collectors read
// the node's shared INFO and however the failure reads on the way (the
// collectors' LATENCY refused while INFO still came from the node's cache,
// then INFO refused). The nodes' refreshes are driven by hand, and the
// INFO cache's clock too, so every step is the same each run.
func TestCollectorsLogARestartOnceANode(t *testing.T) {
	srv := redistest.Start(t)
	logs := &logtest.Buffer{}
	s := NewCollectors(CollectorsConfig{
		Log:      slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Paths:    host.DefaultPaths(),
		Enabled:  collector.AllEnabled(),
		Interval: time.Second,
	})
	_, ep, err := ParseAddr(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := prober.ParseCommands("ping,get")
	if err != nil {
		t.Fatal(err)
	}
	var clock atomic.Int64 // the INFO caches' time, moved on by the test
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	// Nodes a to c read INFO through the node's cache, as runNode's do;
	// d reads it afresh each time, so its first failure is INFO's.
	names := []string{"a", "b", "c", "d"}
	var refreshes []func()
	for _, name := range names {
		control := ep.NewClient(time.Second, 2)
		t.Cleanup(func() { _ = control.Close() })
		if name != "d" {
			cache := newInfoCache(infoTTL)
			cache.now = now
			control.AddHook(cache)
		}
		h := s.Attach(Node{Target: Target{Name: name, Endpoint: ep, Probe: prober.ProbeConfig{Commands: cmds}}, Control: control})
		t.Cleanup(h.Done)
		refreshes = append(refreshes, func() { h.Tasks[0].Run(t.Context()) })
	}
	round := func() {
		for _, r := range refreshes {
			r()
		}
	}
	// lines counts the lines of msg at level for target name since mark.
	lines := func(mark int, level, msg, name string) int {
		re := regexp.MustCompile(`level=` + level + ` msg="` + msg + `" target=` + name + `( |$)`)
		n := 0
		for _, l := range strings.Split(logs.String()[mark:], "\n") {
			if re.MatchString(l) {
				n++
			}
		}
		return n
	}

	round() // healthy, and every cache holds a fresh INFO
	before := len(logs.String())
	srv.Kill()
	round() // INFO from the cache, everything else refused (d: INFO refused)
	clock.Add(int64(2 * infoTTL))
	round() // INFO refused
	round()
	down := logs.String()[before:]
	for _, name := range names {
		if n := lines(before, "WARN", "collector failed", name); n != 1 {
			t.Errorf("node %s: %d 'collector failed' lines while its Redis is down, want 1", name, n)
		}
	}
	srv.Restart()
	// go-redis answers a dial with the last refused one until its own
	// retry, a second apart, gets through: refresh until every node reads.
	healthy := func() bool {
		s.checks.mu.Lock()
		defer s.checks.mu.Unlock()
		for _, name := range names {
			for _, err := range s.checks.nodes[nodeid.ID{Target: name}].Snapshot().Errors {
				if err != nil {
					return false
				}
			}
		}
		return true
	}
	waitFor(t, 10*time.Second, "every node read after the restart", func() bool {
		clock.Add(int64(2 * infoTTL))
		round()
		return healthy()
	})
	round()
	for _, name := range names {
		if n := lines(before, "INFO", "collector recovered", name); n != 1 {
			t.Errorf("node %s: %d 'collector recovered' lines at info after the restart, want 1", name, n)
		}
	}
	if n := strings.Count(logs.String()[before:], "level=WARN"); n != len(names) {
		t.Errorf("%d warnings in all, want %d (one a node):\n%s", n, len(names), logs.String()[before:])
	}
	if t.Failed() {
		t.Logf("while down:\n%s\nafter the restart:\n%s", down, logs.String()[before+len(down):])
	}
}
