package burst

import (
	"context"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/redisinfo"
	"github.com/redis-prober/redis-prober/internal/redistest"
)

func TestParseServerStateFromInfo(t *testing.T) {
	b, err := os.ReadFile("testdata/burst-info-7.0.txt")
	if err != nil {
		t.Fatal(err)
	}
	parse := func(text string) redisinfo.Info {
		info, err := redisinfo.Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	s := parseServerState(parse(string(b)))
	if s.Role != "master" || s.Loading || s.Fork != "" || s.Version != "7.0.15" {
		t.Fatalf("parsed %+v", s)
	}
	if s.UsedMemory <= 0 || s.SystemMemory <= 0 || s.MaxMemory != 0 || s.Policy != "noeviction" {
		t.Fatalf("memory fields: %+v", s)
	}
	fork := strings.Replace(string(b), "aof_rewrite_in_progress:0", "aof_rewrite_in_progress:1", 1)
	if s := parseServerState(parse(fork)); s.Fork != "aof" {
		t.Fatalf("aof rewrite not seen: %+v", s)
	}
	// Valkey 9 forks to migrate slots; the field is absent elsewhere.
	if s := parseServerState(parse(string(b) + "slot_migration_fork_in_progress:1\r\n")); s.Fork != "slot migration" {
		t.Fatalf("Valkey 9's slot migration fork not seen: %+v", s)
	}
}

func TestGuardsDecide(t *testing.T) {
	g := Guards{MemoryHeadroom: 0.2, MaxServerOps: 1000, Window: time.Second, ErrorBudget: 0.01, CheckInterval: time.Second}
	writes := testPlan()
	reads := testPlan()
	reads.Mix = []MixEntry{{Op: "get", Weight: 1}}
	healthy := ServerState{Role: "master", UsedMemory: 1 << 20, MaxMemory: 1 << 30}
	for _, tc := range []struct {
		name   string
		g      Guards
		s      ServerState
		plan   Plan
		admit  string
		during string
	}{
		{"healthy", g, healthy, writes, "", ""},
		{"replica", g, ServerState{Role: "slave"}, writes, ReasonReplica, ReasonReplica},
		{"replica allowed, reads", Guards{AllowReplica: true}, ServerState{Role: "slave"}, reads, "", ""},
		{"replica allowed, writes", Guards{AllowReplica: true}, ServerState{Role: "slave"}, writes, ReasonReplica, ReasonReplica},
		{"loading", g, ServerState{Role: "master", Loading: true}, writes, ReasonLoading, ReasonLoading},
		{"fork", g, ServerState{Role: "master", Fork: "rdb"}, writes, ReasonFork, ReasonFork},
		{"fork, reads", g, ServerState{Role: "master", Fork: "rdb"}, reads, ReasonFork, ""},
		{"memory", g, ServerState{Role: "master", UsedMemory: 850, MaxMemory: 1000}, writes, ReasonMemory, ReasonMemory},
		{"system memory", g, ServerState{Role: "master", UsedMemory: 900, SystemMemory: 1000}, reads, ReasonMemory, ReasonMemory},
		{"busy", g, ServerState{Role: "master", OpsPerSec: 5000}, reads, ReasonBusy, ""},
		{"busy check off", Guards{}, ServerState{Role: "master", OpsPerSec: 5000}, reads, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := tc.g.Admit(tc.s, tc.plan); d.Reason != tc.admit || (tc.admit != "" && d.Outcome != OutcomeSkipped) {
				t.Errorf("Admit = %+v, want reason %q", d, tc.admit)
			}
			if d := tc.g.Watch(tc.s, tc.plan); d.Reason != tc.during || (tc.during != "" && d.Outcome != OutcomeAborted) {
				t.Errorf("Watch = %+v, want reason %q", d, tc.during)
			}
		})
	}
	// The planned bytes count: 1 MiB used of 10 MiB, a plan that may add 9.
	big := testPlan()
	big.MaxBytes, big.Rate = 9<<20, 0
	big.Keys.Max = 1 << 20
	d := g.Admit(ServerState{Role: "master", UsedMemory: 1 << 20, MaxMemory: 10 << 20}, big)
	if d.Reason != ReasonMemory {
		t.Errorf("a plan that may write 9 MiB into 1 of 10 MiB used was admitted: %+v", d)
	}
	// Issue 28: sizes as people read them, not raw byte counts.
	if !strings.Contains(d.Detail, "used_memory 1 MiB") || !strings.Contains(d.Detail, "maxmemory 10 MiB") ||
		regexp.MustCompile(`\d{5,}`).MatchString(d.Detail) {
		t.Errorf("detail %q", d.Detail)
	}
}

func TestWindowVerdict(t *testing.T) {
	g := Guards{AbortP99: 10 * time.Millisecond, ErrorBudget: 0.01}
	ms := time.Millisecond
	for _, tc := range []struct {
		name                 string
		p50, p99             time.Duration
		count, total, failed int64
		want                 string
	}{
		{"fast", ms, 5 * ms, 100, 1000, 0, ""},
		{"slow p99 over enough requests", ms, 20 * ms, 100, 1000, 0, ReasonP99},
		{"slow p99 over many requests", ms, 20 * ms, 100000, 1000000, 0, ReasonP99},
		{"nothing in the window", 0, 20 * ms, 0, 1000, 0, ""},
		// Over 7 requests the "p99" is the slowest of them: one hiccup
		// is not a p99 above the threshold.
		{"one hiccup among 7 requests", ms, 23 * ms, 7, 1000, 0, ""},
		{"one hiccup among 99 requests", ms, 23 * ms, minP99Samples - 1, 1000, 0, ""},
		// Most of a small window slow is a stall, not a hiccup.
		{"most of 7 requests slow", 30 * ms, 40 * ms, 7, 1000, 0, ReasonP99},
		{"a stall seen as requests in flight", 200 * ms, 200 * ms, 50, 1000, 0, ReasonP99},
		{"errors beyond the budget", ms, ms, 100, 1000, 11, ReasonErrors},
		{"errors within the budget", ms, ms, 100, 1000, 10, ""},
		{"below the minimum number of errors", ms, ms, 100, 10, 4, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := g.windowVerdict(tc.p50, tc.p99, tc.count, tc.total, tc.failed); d.Reason != tc.want {
				t.Errorf("got %+v, want %q", d, tc.want)
			}
		})
	}
}

// A burst at a low rate sees few requests per window: one request held up
// by a short server hiccup is then the window's "p99" on its own, and must
// not abort the burst.
func TestBurstLowRateHiccupDoesNotAbort(t *testing.T) {
	srv := redistest.Start(t, "enable-debug-command yes")
	c := srv.Client()
	plan := testPlan()
	plan.Clients, plan.Pipeline, plan.Rate, plan.TestTime = 1, 1, 20, 2*time.Second
	b := testRunner(t, srv)
	b.Guards.AbortP99 = 20 * time.Millisecond // the window (400ms) holds about 8 requests
	// A hiccup of two slots: open loop, every slot due while the server
	// sleeps is charged from its due time, so a sleep of 0.1 s at 20/s
	// makes at most two of the window's eight requests slow (a 0.2 s one
	// made four, and the median of the window then sat on the slow side
	// as often as not). It starts once the load has measured requests, not
	// at a fixed time: a slow start on a busy host put it before the load.
	wait := whenUnderWay(t, b, 4, func(ctx context.Context) error {
		return c.Do(ctx, "debug", "sleep", "0.1").Err()
	})
	res := b.Run(t.Context(), plan)
	wait()
	if res.Outcome != OutcomeCompleted {
		t.Fatalf("outcome %s (%s: %s), want completed: a slow request or two of a handful is no p99", res.Outcome, res.Reason, res.Detail)
	}
	// The first slot due in the sleep waits out at least the 50 ms left
	// after it; the test needs only one request past the abort threshold.
	if res.Total.Quantile(1) <= b.Guards.AbortP99 {
		t.Fatalf("no request was slower than the abort threshold %v (max %v): the test proves nothing", b.Guards.AbortP99, res.Total.Quantile(1))
	}
}

// A closed-loop burst on two connections that the server stops answering
// has two requests in its window, both in flight: too few for a p99, but
// all slow, so it aborts within about a window, long before a timeout.
func TestBurstAbortsOnStallWithFewConnections(t *testing.T) {
	srv := redistest.Start(t, "enable-debug-command yes")
	c := srv.Client()
	plan := testPlan()
	plan.Clients, plan.Pipeline, plan.Rate, plan.TestTime, plan.Timeout = 2, 1, 0, 5*time.Second, 5*time.Second
	b := testRunner(t, srv)
	b.Guards.AbortP99 = 50 * time.Millisecond
	const pause = 3 * time.Second
	wait := whenUnderWay(t, b, 100, func(ctx context.Context) error {
		return c.Do(ctx, "client", "pause", pause.Milliseconds(), "all").Err()
	})
	res := b.Run(t.Context(), plan)
	pauseAt := wait()
	if res.Outcome != OutcomeAborted || res.Reason != ReasonP99 {
		t.Fatalf("outcome %s (%s: %s), want aborted for p99", res.Outcome, res.Reason, res.Detail)
	}
	// The cleanup waits for the pause to end; the load, and the INFO check
	// beside it (its 200 ms deadline honoured), end while the server is
	// still paused, not when it answers again.
	if ran := res.End.Sub(res.Start); ran >= pauseAt+pause {
		t.Fatalf("the stalled load ran %v, past the end of the pause (sent %v in)", ran, pauseAt)
	}
}

// runSkip runs a burst on srv with guards g and checks it is skipped for
// reason, without a request sent or a key written.
func runSkip(t *testing.T, srv *redistest.Server, g Guards, plan Plan, reason string) {
	t.Helper()
	b := testRunner(t, srv)
	b.Guards = g
	c := srv.Client()
	sets, gets := commandCalls(t, c, "set"), commandCalls(t, c, "get")
	res := b.Run(t.Context(), plan)
	if res.Outcome != OutcomeSkipped || res.Reason != reason {
		t.Fatalf("outcome %s (%s: %s), want skipped for %s", res.Outcome, res.Reason, res.Detail, reason)
	}
	if res.Total != nil {
		t.Fatalf("a skipped burst has figures: %+v", res.Total)
	}
	if commandCalls(t, c, "set") != sets || commandCalls(t, c, "get") != gets {
		t.Fatal("a skipped burst sent requests")
	}
}

func TestGovernorSkipsReplica(t *testing.T) {
	primary := redistest.Start(t)
	replica := redistest.Start(t, "replicaof 127.0.0.1 "+primary.Addr()[strings.LastIndexByte(primary.Addr(), ':')+1:])
	runSkip(t, replica, testGuards(), testPlan(), ReasonReplica)

	// Allowed, a read-only burst runs on the replica.
	g := testGuards()
	g.AllowReplica = true
	reads := testPlan()
	reads.Mix = []MixEntry{{Op: "get", Weight: 1}}
	b := testRunner(t, replica)
	b.Guards = g
	if res := b.Run(t.Context(), reads); res.Outcome != OutcomeCompleted {
		t.Fatalf("read-only burst on an allowed replica: %s (%s: %s)", res.Outcome, res.Reason, res.Detail)
	}
	runSkip(t, replica, g, testPlan(), ReasonReplica) // writes: never on a replica
}

func TestGovernorSkipsOnMemoryHeadroom(t *testing.T) {
	srv := redistest.Start(t, "maxmemory 2mb")
	plan := testPlan()
	plan.DataSize = 1024
	plan.Keys.Max = 9999
	runSkip(t, srv, testGuards(), plan, ReasonMemory)
}

func TestGovernorSkipsBusyServer(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			pipe := c.Pipeline()
			for range 100 {
				pipe.Ping(ctx)
			}
			_, _ = pipe.Exec(ctx)
			time.Sleep(time.Millisecond)
		}
	}()
	waitUntil(t, 5*time.Second, "instantaneous_ops_per_sec above 1000", func() bool {
		st, err := ReadServerState(t.Context(), c)
		return err == nil && st.OpsPerSec > 1000
	})
	g := testGuards()
	g.MaxServerOps = 1000
	runSkip(t, srv, g, testPlan(), ReasonBusy)
	cancel()
	<-done
}

func TestGovernorSkipsDuringFork(t *testing.T) {
	srv := redistest.Start(t, "rdb-key-save-delay 200000")
	c := srv.Client()
	for i := range 20 {
		c.Set(t.Context(), "user:"+string(rune('a'+i)), "v", 0)
	}
	if err := c.BgSave(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 5*time.Second, "bgsave in progress", func() bool {
		st, err := ReadServerState(t.Context(), c)
		return err == nil && st.Fork == "rdb"
	})
	runSkip(t, srv, testGuards(), testPlan(), ReasonFork)
	// FLUSHALL kills the slow child so no process outlives the test.
	c.FlushAll(t.Context())
	waitUntil(t, 5*time.Second, "bgsave stopped", func() bool {
		st, err := ReadServerState(t.Context(), c)
		return err == nil && st.Fork == ""
	})
}

func TestGovernorSkipsWhileLoading(t *testing.T) {
	srv := redistest.Start(t, "key-load-delay 20000", "loading-process-events-interval-bytes 1024")
	c := srv.Client()
	// Values that do not compress, so the RDB is long and the loading
	// server answers (between every KiB it loads) while it loads.
	rng := rand.New(rand.NewPCG(1, 1))
	value := make([]byte, 2000)
	for i := range 100 {
		for j := range value {
			value[j] = byte(rng.IntN(256))
		}
		c.Set(t.Context(), "user:"+strconv.Itoa(i), value, 0)
	}
	if err := c.Save(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	srv.Restart() // loads 100 keys at 20 ms each
	c2 := srv.Client()
	st, err := ReadServerState(t.Context(), c2)
	if err != nil || !st.Loading {
		t.Fatalf("server not loading after restart: %+v %v", st, err)
	}
	runSkip(t, srv, testGuards(), testPlan(), ReasonLoading)
}

func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
