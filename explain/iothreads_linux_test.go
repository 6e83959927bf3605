package explain

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/redisinfo"
)

// TestIOThreadsRealValkey: a real Valkey 9.1 with io-threads 2 and 4 under
// load from many connections: INFO reads as one and three io threads whose
// active time moves, and what two reads give as evidence is at most one
// redis_cpu span over the interval, no longer than it, and, all io threads
// together, no more than /proc says they waited for a CPU (a lower bound).
func TestIOThreadsRealValkey(t *testing.T) {
	for _, threads := range []int{2, 4} {
		t.Run(fmt.Sprint("io-threads ", threads), func(t *testing.T) {
			srv := startPeer(t, "valkey-9.1", "valkey", 9, 1, fmt.Sprint("io-threads ", threads))
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			c := srv.Client()
			read := func() infoSnap {
				t.Helper()
				text, err := c.Info(ctx).Result()
				if err != nil {
					t.Fatal(err)
				}
				info, err := redisinfo.Parse(text)
				if err != nil {
					t.Fatal(err)
				}
				return snapOf(info, time.Now().UnixNano())
			}
			pid := srv.PID()
			waitedBefore := ioRunDelay(t, pid)
			first := read()
			if first.ioThreads != threads-1 {
				t.Fatalf("io-threads %d read as %d io threads", threads, first.ioThreads)
			}
			load(ctx, t, srv.Addr(), 32, 1500*time.Millisecond)
			second := read()
			waited := ioRunDelay(t, pid) - waitedBefore
			if second.ioThreads != threads-1 || second.ioActiveNs <= first.ioActiveNs {
				t.Fatalf("after load: %d io threads, active %d → %d ns; want %d threads, active time that moved",
					second.ioThreads, first.ioActiveNs, second.ioActiveNs, threads-1)
			}
			ev := ioOffCPUEvidence(first, second)
			if len(ev) > 1 || len(ev) == 1 && (ev[0].Cause != RedisCPU || ev[0].Dur > time.Duration(second.at-first.at)) {
				t.Errorf("evidence %+v", ev)
			}
			if len(ev) == 1 {
				// INFO and /proc are read a moment apart: a little slack.
				if all := ev[0].Dur * time.Duration(second.ioThreads); all > waited+waited/10+10*time.Millisecond {
					t.Errorf("io threads off a CPU %v by INFO, but they waited %v for one by /proc", all, waited)
				}
			}
			t.Logf("io threads: %v active, others' CPU %v, %v waiting for a CPU (/proc); evidence %+v",
				time.Duration(second.ioActiveNs-first.ioActiveNs), time.Duration(second.otherCPUNs-first.otherCPUNs), waited, ev)
		})
	}
}

// load keeps n connections of its own busy for d with pipelines of PINGs
// written and their replies read raw (a client cheap enough, even under
// the race detector, to have many connections ready at once: the server
// turns its io threads on by the events a cycle).
func load(ctx context.Context, t *testing.T, addr string, n int, d time.Duration) {
	t.Helper()
	const batch = 64
	req := bytes.Repeat([]byte("PING\r\n"), batch)
	replyLen := int64(len("+PONG\r\n") * batch)
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for range n {
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(deadline.Add(5 * time.Second))
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close()
			for time.Now().Before(deadline) && ctx.Err() == nil {
				if _, err := conn.Write(req); err != nil {
					return
				}
				if _, err := io.CopyN(io.Discard, conn, replyLen); err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
}

// ioRunDelay is the io threads' (io_thd_*) run delay so far, by /proc.
func ioRunDelay(t *testing.T, pid int) time.Duration {
	t.Helper()
	dirs, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("tasks of %d: %v", pid, err)
	}
	var sum time.Duration
	for _, d := range dirs {
		comm, err := os.ReadFile(d + "/comm")
		if err != nil || !strings.HasPrefix(string(comm), "io_thd") {
			continue
		}
		b, err := os.ReadFile(d + "/schedstat")
		f := strings.Fields(string(b))
		if err != nil || len(f) < 2 {
			t.Fatalf("%s/schedstat: %q, %v", d, b, err)
		}
		ns, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		sum += time.Duration(ns)
	}
	return sum
}
