//go:build linux

package burst

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/redistest"
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
// behind (a busy host: here the client stops for 60 ms every 100 batches):
// the lateness is the burst's schedule lag, the client says it did not
// keep its schedule, and Redis's latency, its wire time, does not carry
// it; the governor, with a 20 ms abort threshold, does not abort on it.
// On the user clock every slot a stall delayed was charged up to 60 ms.
func TestClientStallIsLagNotLatency(t *testing.T) {
	const stall = 60 * time.Millisecond
	srv := redistest.Start(t)
	plan := testPlan()
	plan.Clients, plan.Pipeline, plan.Rate, plan.TestTime = 1, 1, 1000, 2*time.Second
	b := testRunner(t, srv)
	b.Guards.AbortP99 = 20 * time.Millisecond
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
	lag, p99 := res.LagQuantile(0.99), res.Total.Quantile(0.99)
	if lag < stall/2 || res.KeptSchedule() {
		t.Fatalf("schedule lag p99 %v (kept schedule %v): the stalls of %v are not in it", lag, res.KeptSchedule(), stall)
	}
	// A stall puts dozens of slots behind (a tenth of all requests, lag up
	// to 60 ms); the wire time of Redis's replies is far below that.
	if p99 >= stall/2 {
		t.Fatalf("latency p99 %v carries the client's stalls (lag p99 %v)", p99, lag)
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
	if p99 >= lag/2 {
		t.Fatalf("latency p99 %v is not far below the client's lag p99 %v: the starvation is charged to Redis", p99, lag)
	}
}

// starveThisProcess pins every thread of the test process to one CPU,
// redis-server (pid) off it, and runs loops busy loops on that CPU for at
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
	pin := func(set *unix.CPUSet) {
		for _, task := range tasks {
			if tid, err := strconv.Atoi(task.Name()); err == nil {
				_ = unix.SchedSetaffinity(tid, set) // a thread that exited meanwhile
			}
		}
	}
	pin(&mine)
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
			pin(&all)
		}
	})
	for range loops {
		c := exec.Command("timeout", strconv.Itoa(int(d.Seconds())), "sh", "-c", "while :; do :; done")
		c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
		if err := c.Start(); err != nil {
			t.Fatalf("busy loop: %v", err)
		}
		cmds = append(cmds, c)
	}
}
