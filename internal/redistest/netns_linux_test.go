//go:build linux

package redistest

import (
	"context"
	"os/exec"
	"strings"
	"testing"
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
