package prober

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/redistest"
)

func TestParseServerStateFromInfo(t *testing.T) {
	b, err := os.ReadFile("testdata/burst-info-7.0.txt")
	if err != nil {
		t.Fatal(err)
	}
	s := parseServerState(ParseInfo(string(b)))
	if s.Role != "master" || s.Loading || s.Fork != "" || s.Version != "7.0.15" {
		t.Fatalf("parsed %+v", s)
	}
	if s.UsedMemory <= 0 || s.SystemMemory <= 0 || s.MaxMemory != 0 || s.Policy != "noeviction" {
		t.Fatalf("memory fields: %+v", s)
	}
	fork := strings.Replace(string(b), "aof_rewrite_in_progress:0", "aof_rewrite_in_progress:1", 1)
	if s := parseServerState(ParseInfo(fork)); s.Fork != "aof" {
		t.Fatalf("aof rewrite not seen: %+v", s)
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
		plan   BurstPlan
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
	if d := g.Admit(ServerState{Role: "master", UsedMemory: 1 << 20, MaxMemory: 10 << 20}, big); d.Reason != ReasonMemory {
		t.Errorf("a plan that may write 9 MiB into 1 of 10 MiB used was admitted: %+v", d)
	}
}

func TestWindowVerdict(t *testing.T) {
	g := Guards{AbortP99: 10 * time.Millisecond, ErrorBudget: 0.01}
	for _, tc := range []struct {
		p99                  time.Duration
		count, total, failed int64
		want                 string
	}{
		{5 * time.Millisecond, 100, 1000, 0, ""},
		{20 * time.Millisecond, 100, 1000, 0, ReasonP99},
		{20 * time.Millisecond, 0, 1000, 0, ""}, // nothing in the window: no verdict
		{time.Millisecond, 100, 1000, 11, ReasonErrors},
		{time.Millisecond, 100, 1000, 10, ""},
		{time.Millisecond, 100, 10, 4, ""}, // below the minimum number of errors
	} {
		if d := g.windowVerdict(tc.p99, tc.count, tc.total, tc.failed); d.Reason != tc.want {
			t.Errorf("%+v: got %+v, want %q", tc, d, tc.want)
		}
	}
}

// runSkip runs a burst on srv with guards g and checks it is skipped for
// reason, without a request sent or a key written.
func runSkip(t *testing.T, srv *redistest.Server, g Guards, plan BurstPlan, reason string) {
	t.Helper()
	b := testBurster(t, srv)
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
	b := testBurster(t, replica)
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
