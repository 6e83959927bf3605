package main

import (
	"errors"
	"net"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A listen port another process holds fails the start with one line that
// names it, before the prober connects to anything: it used to connect to
// Redis, start probing and only then fail to bind (exit 1 after Redis had
// seen it).
func TestBusyListenPortFailsBeforeConnecting(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	// A stand-in for Redis that counts who connects.
	redisL, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer redisL.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := redisL.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			// Hold it a while, as a slow Redis would.
			go func() { time.Sleep(2 * time.Second); c.Close() }()
		}
	}()

	cmd := exec.Command(proberBin, "--web.listen-address="+held.Addr().String(), "--redis.addr="+redisL.Addr().String(),
		"--burst.interval=0", "--log.level=debug")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit %v, want 1; stderr:\n%s", err, stderr.String())
	}
	var errLines []string
	for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if strings.HasPrefix(l, "redis-prober: error:") {
			errLines = append(errLines, l)
		}
	}
	want := "redis-prober: error: --web.listen-address: " + held.Addr().String() + " is already in use"
	if len(errLines) != 1 || !strings.HasPrefix(errLines[0], want) {
		t.Errorf("error lines %q, want one starting %q", errLines, want)
	}
	if strings.Contains(stderr.String(), "starting redis-prober") || strings.Contains(stderr.String(), "msg=probing") {
		t.Errorf("the prober started before it had its port:\n%s", stderr.String())
	}
	time.Sleep(300 * time.Millisecond)
	if n := accepted.Load(); n != 0 {
		t.Errorf("Redis saw %d connections from a prober that could not serve its metrics", n)
	}
}
