package engine

import (
	"fmt"
	"github.com/redis-prober/redis-prober/internal/logtest"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestCheckNodeAddr(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"10.0.0.1:7000", true},
		{"[2001:db8::1]:7000", true},
		{"redis-0.redis.svc.cluster.local:6379", true},
		{"localhost:6379", true},
		{"\xff\xfe:7000", false},
		{"10.0.0.1:70000", false},
		{"10.0.0.1:0", false},
		{"10.0.0.1:+80", false},
		{"10.0.0.1", false},
		{"0.0.0.0:6379", false},
		{"[::]:6379", false},
		{"224.0.0.1:6379", false},
		{"host\x1b[2J:6379", false},
		{"bad_host!:6379", false},
		{"-lead.example:6379", false},
		{"h\u00e9te:6379", false},
		{strings.Repeat("a.", 200) + "b:6379", false},
		{"[2001:db8::1%eth0]:7000", true},
		{"[10.0.0.1]:7000", false},
		{"2001:db8::1:7000", false},
	} {
		_, _, err := checkNodeAddr(tc.addr)
		if (err == nil) != tc.ok {
			t.Errorf("checkNodeAddr(%q) = %v, want ok=%v", tc.addr, err, tc.ok)
		}
	}
}

func TestDiscoveryAllowList(t *testing.T) {
	open := DiscoveryOptions{}
	fenced := DiscoveryOptions{
		AllowedNetworks:  []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")},
		AllowedHostnames: []string{".redis.internal", "cache.example"},
	}
	for _, tc := range []struct {
		addr         string
		open, fenced bool
	}{
		{"10.1.2.3:7000", true, true},
		{"[::ffff:10.1.2.3]:7000", true, true},
		{"[fd00::1]:7000", true, true},
		{"192.0.2.1:7000", true, false},
		{"a.redis.internal:7000", true, true},
		{"A.REDIS.INTERNAL.:7000", true, true},
		{"cache.example:7000", true, true},
		{"evilcache.example:7000", true, false},
		{"redis.internal.evil.example:7000", true, false},
	} {
		host, ip, err := checkNodeAddr(tc.addr)
		if err != nil {
			t.Fatalf("%s: %v", tc.addr, err)
		}
		if got := open.allows(host, ip); got != tc.open {
			t.Errorf("no allow-list: allows(%s) = %v", tc.addr, got)
		}
		if got := fenced.allows(host, ip); got != tc.fenced {
			t.Errorf("allow-list: allows(%s) = %v, want %v", tc.addr, got, tc.fenced)
		}
	}
}

func bufferLogger() (*slog.Logger, *logtest.Buffer) { return logtest.Logger(slog.LevelInfo) }

func TestNodeGuardCapsSortsAndCounts(t *testing.T) {
	log, buf := bufferLogger()
	stats := &discoveryStats{}
	g := newNodeGuard(DiscoveryOptions{MaxNodes: 3}, stats, newSpellLog(log))
	cands := []candidate{
		{addr: "10.0.0.9:7000", replica: true},
		{addr: "10.0.0.5:7000"},
		{addr: "\xff:7000"},
		{addr: "10.0.0.5:7000"}, // twice
		{addr: "10.0.0.1:7000"},
		{addr: "10.0.0.3:7000"},
	}
	for range 5 {
		got := g.admit(cands)
		var addrs []string
		for _, c := range got {
			addrs = append(addrs, c.addr)
		}
		if fmt.Sprint(addrs) != "[10.0.0.1:7000 10.0.0.3:7000 10.0.0.5:7000]" {
			t.Fatalf("admitted %v: want the three primaries in address order", addrs)
		}
	}
	if stats.counts != [numNodeOutcomes]int{3, 1, 2, 0} {
		t.Errorf("counts %v, want probed 3, over_limit 1, invalid 2", stats.counts)
	}
	if n := buf.Lines("level=WARN"); n != 2 {
		t.Errorf("%d warnings after five refreshes, want 2 (invalid, over limit):\n%s", n, buf.String())
	}
}

func TestSpellLogOncePerSpell(t *testing.T) {
	log, buf := bufferLogger()
	s := newSpellLog(log)
	now := time.Unix(0, 0)
	s.now = func() time.Time { return now }
	for i := range 100 {
		s.warn([]string{"a", "b"}[i%2], "problem", "i", i) // alternating problems
		now = now.Add(time.Second)
	}
	if n := buf.Lines("problem"); n != 2 {
		t.Fatalf("%d lines for two alternating problems, want 2", n)
	}
	now = now.Add(spellQuiet)
	s.warn("a", "problem")
	if n := buf.Lines("problem"); n != 3 {
		t.Errorf("a problem back after a quiet spell was not logged again (%d lines)", n)
	}
	for i := range 1000 {
		s.warn(fmt.Sprint("distinct-", i), "problem")
	}
	if n := buf.Lines("problem"); n > 3+maxProblems {
		t.Errorf("%d lines for 1000 distinct problems, want at most %d", n, 3+maxProblems)
	}
}
