//go:build linux

package burst

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/redistest"
	"github.com/redis-prober/redis-prober/prober"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sys/unix"
)

// TestStampedBurstLatency: a paced burst over TCP is timed by the kernel's
// stamps, and a stamped latency is never above the prober's own reading
// of the same request (it would be, were a stamp matched to another write
// or read).
func TestStampedBurstLatency(t *testing.T) {
	srv := redistest.Start(t)
	for _, pipeline := range []int{1, 8} {
		plan := testPlan()
		plan.Pipeline, plan.Rate, plan.TestTime = pipeline, 4000, time.Second
		b := testRunner(t, srv)
		res := b.Run(t.Context(), plan)
		if res.Outcome != OutcomeCompleted || res.Total.Ops < 2000 {
			t.Fatalf("pipeline %d: %s (%s), %d requests", pipeline, res.Outcome, res.Detail, res.Total.Ops)
		}
		if res.Stamped < res.Total.Ops*9/10 || res.Clock() == "user" {
			t.Fatalf("pipeline %d: %d of %d requests stamped (clock %s)", pipeline, res.Stamped, res.Total.Ops, res.Clock())
		}
		if n := b.stampOverUser.Load(); n != 0 {
			t.Fatalf("pipeline %d: %d stamped latencies above the prober's own reading", pipeline, n)
		}
		// Below zero cannot be recorded (wireTime refuses an arrival
		// before its request left); every measured request has its lag.
		if res.Lag.TotalCount() != res.Total.Ops {
			t.Fatalf("pipeline %d: %d lags of %d requests", pipeline, res.Lag.TotalCount(), res.Total.Ops)
		}
	}
}

// TestClientStallIsLagNotLatency is the paced burst whose client falls
// behind (a busy host: here the client stops for 100 ms every 100
// batches, half of its time): the lateness is the burst's schedule lag,
// the client says it did not keep its schedule, and Redis's latency, its
// wire time, does not carry it. Charged on the user clock, a third of the
// requests carried up to 100 ms of it. The check is on the p90, which
// holds only what a real stall of Redis (or of the loopback's softirq)
// charges: on a loaded CI host one such stall of 100 ms or more is
// charged to the requests queued behind it (coordinated omission, as it
// should be), which moved the p99 of this test now and then. The
// governor reads the same latency (its abort has tests of its own).
func TestClientStallIsLagNotLatency(t *testing.T) {
	const stall = 100 * time.Millisecond
	srv := redistest.Start(t)
	plan := testPlan()
	plan.Clients, plan.Pipeline, plan.Rate, plan.TestTime = 1, 1, 1000, 2*time.Second
	b := testRunner(t, srv)
	var batches atomic.Int64
	b.stall = func() {
		if batches.Add(1)%100 == 50 {
			time.Sleep(stall)
		}
	}
	res := b.Run(t.Context(), plan)
	if res.Outcome != OutcomeCompleted {
		t.Fatalf("%s (%s): %s", res.Outcome, res.Reason, res.Detail)
	}
	if res.Stamped < res.Total.Ops*9/10 {
		t.Skipf("%d of %d requests stamped: this kernel gives too few stamps to tell", res.Stamped, res.Total.Ops)
	}
	lag, p90 := res.LagQuantile(0.99), res.Total.Quantile(0.9)
	if lag < stall/2 || res.KeptSchedule() {
		t.Fatalf("schedule lag p99 %v (kept schedule %v): the stalls of %v are not in it", lag, res.KeptSchedule(), stall)
	}
	if p90 >= stall/10 {
		t.Fatalf("latency p90 %v carries the client's stalls (lag p99 %v)", p90, lag)
	}
}

// TestPacedBurstRedialsKilledConnections: the server drops every burst
// connection mid-load (CLIENT KILL, as a failover or a restart does); the
// event loop fails what was in flight on them, dials them again, and the
// load goes on to its end at its rate, leaving no key behind.
func TestPacedBurstRedialsKilledConnections(t *testing.T) {
	srv := redistest.Start(t, "enable-debug-command yes")
	c := srv.Client()
	user := seedUserData(t, c)
	plan := testPlan()
	plan.Clients, plan.Pipeline, plan.Rate, plan.TestTime = 4, 1, 2000, 2*time.Second
	b := testRunner(t, srv)
	b.Guards.ErrorBudget = 1
	kills := 0
	wait := whenUnderWay(t, b, 500, func(ctx context.Context) error {
		// Every burst connection (named redis-prober-burst), three
		// times, while the load runs.
		for range 3 {
			list, err := c.ClientList(ctx).Result()
			if err != nil {
				return err
			}
			for _, line := range strings.Split(list, "\n") {
				if strings.Contains(line, "name=redis-prober-burst") {
					id := strings.TrimPrefix(strings.Fields(line)[0], "id=")
					if err := c.Do(ctx, "client", "kill", "id", id).Err(); err != nil {
						return err
					}
					kills++
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
		return nil
	})
	res := b.Run(t.Context(), plan)
	wait()
	if kills < plan.Clients {
		t.Fatalf("killed %d connections, want every one of %d at least once", kills, plan.Clients)
	}
	if res.Outcome != OutcomeCompleted || res.Bound != "test-time" {
		t.Fatalf("%s (%s: %s), bound %q", res.Outcome, res.Reason, res.Detail, res.Bound)
	}
	// Requests went on after the kills: most of the load's slots were
	// answered (killed connections are back within a redial pause).
	if want := int64(plan.Rate * plan.TestTime.Seconds() * 0.8); res.Total.Ops-res.Total.Errors < want {
		t.Fatalf("%d requests answered (%d errors), want at least %d", res.Total.Ops-res.Total.Errors, res.Total.Errors, want)
	}
	assertNoTrace(t, srv, plan, user)
}

// TestBusyClientCPUIsLagNotLatency: the prober's process shares its one
// CPU with busy loops (a starved sidecar), Redis has its own. The burst's
// client is late on its slots, and says so (its schedule lag, not kept);
// Redis's latency, its wire time, stays far below that lag: the client's
// starvation is not reported as Redis's.
func TestBusyClientCPUIsLagNotLatency(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs a CPU for Redis apart from the prober's")
	}
	srv := redistest.Start(t)
	plan := testPlan()
	plan.Clients, plan.Pipeline, plan.Rate, plan.TestTime = 2, 1, 2000, 2*time.Second
	b := testRunner(t, srv)
	starveThisProcess(t, srv.PID(), 3, 10*time.Second)
	res := b.Run(t.Context(), plan)
	if res.Outcome != OutcomeCompleted {
		t.Fatalf("%s (%s): %s", res.Outcome, res.Reason, res.Detail)
	}
	if res.Stamped < res.Total.Ops*9/10 {
		t.Skipf("%d of %d requests stamped: this kernel gives too few stamps to tell", res.Stamped, res.Total.Ops)
	}
	lag, p99 := res.LagQuantile(0.99), res.Total.Quantile(0.99)
	t.Logf("lag p99 %v, latency p50 %v p99 %v, kept %v", lag, res.Total.Quantile(0.5), p99, res.KeptSchedule())
	if res.KeptSchedule() {
		t.Fatalf("a starved client kept its schedule (lag p99 %v)", lag)
	}
	// The median, not the tail: starved, the loopback's own softirq on
	// this CPU can hold a request for tens of milliseconds, real wire
	// time charged to the requests behind it too (coordinated omission).
	if p50 := res.Total.Quantile(0.5); p50 >= lag/4 {
		t.Fatalf("latency p50 %v (p99 %v) is not far below the client's lag p99 %v: the starvation is charged to Redis", p50, p99, lag)
	}
}

// starveThisProcess pins every thread of the test process to one CPU at
// nice 10, redis-server (pid) off it, and runs loops busy loops (nice 5)
// on that CPU for at
// most d (each under timeout(1), and stopped with the test's process), so
// the burst's client waits for a CPU and Redis does not. It undoes the
// pinning at the test's end.
func starveThisProcess(t *testing.T, pid, loops int, d time.Duration) {
	t.Helper()
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		t.Fatal(err)
	}
	var mine, theirs unix.CPUSet
	cpu := -1
	for i := range 1024 {
		if all.IsSet(i) {
			if cpu < 0 {
				cpu = i
				mine.Set(i)
			} else {
				theirs.Set(i)
			}
		}
	}
	if theirs.Count() == 0 {
		t.Skip("one CPU allowed: nothing to keep Redis apart on")
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	// The threads run at nice 10 and the busy loops at 5, both below the
	// kernel's softirq thread (0): starved alike, the loopback's own
	// packet processing on this CPU held requests for up to a second,
	// which is wire time (and was charged as such), not what this tests.
	pin := func(set *unix.CPUSet, nice int) {
		for _, task := range tasks {
			if tid, err := strconv.Atoi(task.Name()); err == nil {
				_ = unix.SchedSetaffinity(tid, set) // a thread that exited meanwhile
				_ = unix.Setpriority(unix.PRIO_PROCESS, tid, nice)
			}
		}
	}
	pin(&mine, 10)
	if err := unix.SchedSetaffinity(pid, &theirs); err != nil {
		t.Fatalf("pin redis-server: %v", err)
	}
	var cmds []*exec.Cmd
	t.Cleanup(func() {
		for _, c := range cmds {
			// timeout(1) passes a TERM on to its busy loop.
			_ = c.Process.Signal(syscall.SIGTERM)
			_ = c.Wait()
		}
		if tasks, err = os.ReadDir("/proc/self/task"); err == nil {
			pin(&all, 0) // back to 0 needs root; elsewhere the test's end is at 10
		}
	})
	for range loops {
		c := exec.Command("timeout", strconv.Itoa(int(d.Seconds())), "nice", "-n", "5", "sh", "-c", "while :; do :; done")
		c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
		if err := c.Start(); err != nil {
			t.Fatalf("busy loop: %v", err)
		}
		cmds = append(cmds, c)
	}
}

// TestPacedBurstClocks: where the event loop does not go, a paced burst
// still runs and says which clock timed it. Over TLS it keeps a goroutine
// per connection, stamped beneath crypto/tls (the stamps are the
// records'); over a unix socket the kernel gives no stamps, and the
// prober's clock times it. Both leave no key behind.
func TestPacedBurstClocks(t *testing.T) {
	certs := redistest.NewCerts(t)
	tlsSrv := redistest.StartTLS(t, certs)
	sock := filepath.Join(t.TempDir(), "redis.sock")
	unixSrv := redistest.Start(t, "unixsocket "+sock, "unixsocketperm 700")
	for _, tc := range []struct {
		name  string
		srv   *redistest.Server
		ep    prober.Endpoint
		clock string
	}{
		{"tls", tlsSrv, prober.Endpoint{Network: "tcp", Addr: tlsSrv.Addr(), TLS: certs.ClientConfig(t)}, "kernel"},
		{"unix", unixSrv, prober.Endpoint{Network: "unix", Addr: sock}, "user"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := testRunner(t, tc.srv)
			b.Endpoint = tc.ep
			b.Control = tc.ep.NewClient(5*time.Second, 2)
			t.Cleanup(func() { _ = b.Control.(*redis.Client).Close() })
			plan := testPlan()
			plan.Pipeline, plan.Rate, plan.TestTime = 1, 2000, time.Second
			res := b.Run(t.Context(), plan)
			if res.Outcome != OutcomeCompleted || res.Total.Ops < 1500 {
				t.Fatalf("%s (%s: %s), %d requests", res.Outcome, res.Reason, res.Detail, res.Total.Ops)
			}
			// A TLS socket's first replies may come before the kernel
			// turned receive stamps on: mixed is kernel enough.
			if got := res.Clock(); got != tc.clock && (tc.clock != "kernel" || got != "mixed") {
				t.Fatalf("clock %s (%d of %d stamped), want %s", got, res.Stamped, res.Total.Ops, tc.clock)
			}
			if tc.clock == "kernel" && res.Stamped < res.Total.Ops*9/10 {
				t.Fatalf("%d of %d requests stamped over TLS", res.Stamped, res.Total.Ops)
			}
			if res.KeysDeleted != res.KeysWritten || res.CleanupError != "" {
				t.Fatalf("unlinked %d of %d written keys: %s", res.KeysDeleted, res.KeysWritten, res.CleanupError)
			}
		})
	}
}
