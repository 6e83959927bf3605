//go:build linux

package redistest

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A server in a namespace of the test's own answers over the veth pair; a
// blackhole stops its replies and restoring lets them through; the
// namespace and its veth pair are gone when the test is.
func TestNetnsServer(t *testing.T) {
	var name, hostIf string
	t.Run("in a namespace", func(t *testing.T) {
		ns := NewNetns(t)
		name, hostIf = ns.Name, ns.HostIf
		srv := StartInNetns(t, ns)
		if pid := srv.PID(); pid <= 0 {
			t.Errorf("pid %d", pid)
		}
		c := srv.Client()
		ctx := context.Background()
		if err := c.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		restore := ns.Blackhole()
		if err := srv.ping(); err == nil {
			t.Error("a PING answered through the blackhole")
		}
		restore()
		// The client's connection waits out its retransmissions; a new
		// one answers at once.
		if err := srv.ping(); err != nil {
			t.Errorf("no answer once restored: %v", err)
		}
	})
	if name == "" {
		return // skipped
	}
	ip := sbinTool(t, "ip")
	out, err := exec.Command(ip, "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), name) {
		t.Errorf("namespace %s left behind", name)
	}
	if exec.Command(ip, "link", "show", hostIf).Run() == nil {
		t.Errorf("veth %s left behind", hostIf)
	}
}

// A throttle slows what the server sends to the rate asked, and restoring
// it lets replies through at the veth's own speed again.
func TestNetnsThrottle(t *testing.T) {
	ns := NewNetns(t)
	srv := StartInNetns(t, ns)
	c := srv.Client()
	ctx := context.Background()
	const size = 256 << 10
	if err := c.Set(ctx, "bulk", strings.Repeat("x", size), 0).Err(); err != nil {
		t.Fatal(err)
	}
	get := func() time.Duration {
		t.Helper()
		start := time.Now()
		v, err := c.Get(ctx, "bulk").Result()
		if err != nil || len(v) != size {
			t.Fatalf("GET: %d bytes, %v", len(v), err)
		}
		return time.Since(start)
	}
	get() // the connection's first use
	// 256 KiB at 8 Mbit/s take 262 ms (the bucket's first burst aside).
	restore := ns.Throttle(8_000_000, 150*time.Millisecond)
	if d := get(); d < 200*time.Millisecond {
		t.Errorf("256 KiB read in %v through a throttle of 8 Mbit/s, want at least 200 ms", d)
	}
	restore()
	if d := get(); d > 100*time.Millisecond {
		t.Errorf("256 KiB read in %v once restored, want well under 100 ms", d)
	}
}
