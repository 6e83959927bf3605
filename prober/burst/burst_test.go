package burst

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/internal/redisinfo"
	"github.com/redis-prober/redis-prober/internal/redistest"
	"github.com/redis-prober/redis-prober/prober"
)

// testPlan is a small write-and-read burst; tests change what they need.
func testPlan() Plan {
	return Plan{
		Name: "test", Clients: 2, Pipeline: 4,
		Mix:      []MixEntry{{Op: "set", Weight: 1}, {Op: "get", Weight: 4}},
		Keys:     KeySpec{SetPattern: 'R', GetPattern: 'R', Min: 0, Max: 999},
		DataSize: 32, Rate: 2000, TestTime: time.Second, MaxBytes: 1 << 20,
		Timeout: time.Second, KeyTTL: time.Minute,
		Namespace: prober.Namespace{Prefix: "redis-prober:", Tag: "burst-test"},
	}
}

func testGuards() Guards {
	return Guards{MemoryHeadroom: 0.2, AbortP99: 0, Window: 400 * time.Millisecond, ErrorBudget: 0.01,
		CheckInterval: 200 * time.Millisecond}
}

func testRunner(t *testing.T, srv *redistest.Server) *Runner {
	t.Helper()
	return &Runner{
		Endpoint:       prober.Endpoint{Network: "tcp", Addr: srv.Addr()},
		Control:        controlClient(t, srv),
		Guards:         testGuards(),
		Log:            slog.New(slog.NewTextHandler(io.Discard, nil)),
		CleanupTimeout: 5 * time.Second,
	}
}

// controlClient is the control connection the prober gives a burst: the
// endpoint's options, not the test's plain client, so a test sees the
// timeouts the prober has.
func controlClient(t *testing.T, srv *redistest.Server) *redis.Client {
	t.Helper()
	c := prober.Endpoint{Network: "tcp", Addr: srv.Addr()}.NewClient(5*time.Second, 2)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// whenUnderWay runs do on a goroutine of its own once the burst has
// measured minOps requests (Progress is called from the load's watch, which
// must not block). A fault sent after a fixed delay instead raced the
// burst's start: on a busy host it could land before the load began. The
// returned wait gives when, since the load began, do was started, once it
// has returned; it fails the test if the load ended first or do failed.
func whenUnderWay(t *testing.T, b *Runner, minOps int64, do func(ctx context.Context) error) (wait func() time.Duration) {
	t.Helper()
	var (
		once    sync.Once
		started atomic.Pointer[time.Duration] // Progress.Elapsed when do began
	)
	done := make(chan error, 1)
	b.Progress = func(p Progress) {
		if p.Ops < minOps {
			return
		}
		once.Do(func() {
			started.Store(&p.Elapsed)
			go func() { done <- do(context.WithoutCancel(t.Context())) }()
		})
	}
	return func() time.Duration {
		t.Helper()
		at := started.Load()
		if at == nil {
			t.Fatalf("the load ended before it had measured %d requests: the fault was never sent", minOps)
		}
		if err := <-done; err != nil {
			t.Fatalf("the fault: %v", err)
		}
		return *at
	}
}

// commandCalls reads cmdstat_<name> calls from INFO commandstats.
func commandCalls(t *testing.T, c *redis.Client, name string) int64 {
	t.Helper()
	text, err := c.Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	info, err := redisinfo.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	v := info["cmdstat_"+name]
	calls, _, _ := strings.Cut(strings.TrimPrefix(v, "calls="), ",")
	n, _ := strconv.ParseInt(calls, 10, 64)
	return n
}

// seedUserData writes keys a user might hold, of every type, some with a
// TTL, and returns the server's DEBUG DIGEST of them.
func seedUserData(t *testing.T, c *redis.Client) string {
	t.Helper()
	ctx := t.Context()
	for i := range 50 {
		k := "user:" + strconv.Itoa(i)
		c.Set(ctx, k, "value-"+strconv.Itoa(i), 0)
		c.HSet(ctx, k+":h", "f", i)
		c.RPush(ctx, k+":l", i, i+1)
		c.ZAdd(ctx, k+":z", redis.Z{Score: float64(i), Member: "m"})
	}
	c.Set(ctx, "user:ttl", "x", time.Hour)
	// A user key that merely looks like ours, outside the burst namespace.
	c.Set(ctx, "redis-prober-lookalike:1", "x", 0)
	return digest(t, c)
}

func digest(t *testing.T, c *redis.Client) string {
	t.Helper()
	d, err := c.Do(t.Context(), "debug", "digest").Text()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// assertNoTrace checks that the burst left no key of its namespace and
// that the user's data is what it was.
func assertNoTrace(t *testing.T, srv *redistest.Server, plan Plan, userDigest string) {
	t.Helper()
	if keys := srv.Keys(context.WithoutCancel(t.Context()), plan.Namespace.Prefix+"*"); len(keys) != 0 {
		t.Fatalf("%d keys left in the namespace, e.g. %q", len(keys), keys[0])
	}
	if d := digest(t, srv.Client()); d != userDigest {
		t.Fatalf("DEBUG DIGEST changed: %s, was %s", d, userDigest)
	}
}

func TestBurstRatioAccuracy(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	plan := testPlan()
	plan.Rate, plan.Requests, plan.TestTime = 0, 5000, 10*time.Second
	sets0, gets0 := commandCalls(t, c, "set"), commandCalls(t, c, "get")
	res := testRunner(t, srv).Run(t.Context(), plan)
	if res.Outcome != OutcomeCompleted || res.Bound != "requests" {
		t.Fatalf("outcome %s (%s: %s), bound %q", res.Outcome, res.Reason, res.Detail, res.Bound)
	}
	if res.Total.Ops != 5000 {
		t.Fatalf("measured %d requests, want exactly 5000", res.Total.Ops)
	}
	// What the server counted, not what we think we sent.
	sets, gets := commandCalls(t, c, "set")-sets0, commandCalls(t, c, "get")-gets0
	if sets != res.Commands[0].Ops || gets != res.Commands[1].Ops {
		t.Fatalf("server counted %d SET and %d GET, the burst %d and %d", sets, gets, res.Commands[0].Ops, res.Commands[1].Ops)
	}
	// 1:4 exactly per cycle of five on each client; only the last cycle of
	// each client can be cut short.
	if want := int64(1000); sets < want-int64(plan.Clients) || sets > want+int64(plan.Clients) {
		t.Fatalf("%d SETs of 5000 requests at 1:4, want %d", sets, want)
	}
	if res.Total.Errors != 0 || res.Total.Hist.TotalCount() != 5000 {
		t.Fatalf("errors %d, histogram count %d", res.Total.Errors, res.Total.Hist.TotalCount())
	}
	if got := res.Commands[1].Hits + res.Commands[1].Misses; got != res.Commands[1].Ops {
		t.Fatalf("GET hits+misses %d != GETs %d", got, res.Commands[1].Ops)
	}
}

func TestBurstWeightedMixAndKeyShapes(t *testing.T) {
	srv := redistest.Start(t)
	distinct := map[byte]int64{}
	for _, pattern := range []byte{'R', 'Z', 'G', 'S'} {
		plan := testPlan()
		plan.Mix = []MixEntry{{Op: "set", Weight: 1}}
		plan.Keys = KeySpec{SetPattern: pattern, GetPattern: pattern, Min: 0, Max: 9999, ZipfExp: 1.2, Median: 5000, Stddev: 100}
		plan.Rate, plan.Requests, plan.TestTime, plan.Clients = 0, 2000, 10*time.Second, 1
		b := testRunner(t, srv)
		// Keys within 3 and within 8 stddev of the median. A draw falls
		// beyond 8 about once in 10^15; beyond 3, 0.27 % of draws do.
		var within3, within8 int
		b.beforeCleanup = func() {
			for _, k := range srv.Keys(t.Context(), KeyPattern(plan.Namespace)) {
				n, _ := strconv.Atoi(k[strings.LastIndexByte(k, ':')+1:])
				if n >= 4700 && n <= 5300 {
					within3++
				}
				if n >= 4200 && n <= 5800 {
					within8++
				}
			}
		}
		res := b.Run(t.Context(), plan)
		if res.Outcome != OutcomeCompleted {
			t.Fatalf("%c: %s (%s: %s)", pattern, res.Outcome, res.Reason, res.Detail)
		}
		distinct[pattern] = res.KeysWritten
		switch pattern {
		case 'G':
			// About 5 of 2000 draws land beyond 3 stddev, nearly all on
			// keys of their own, against some 455 distinct keys within:
			// 10 % beyond is out of reach by chance, and a uniform draw,
			// or a spread other than the plan's, shows far more.
			if within8 != int(res.KeysWritten) || within3*10 < int(res.KeysWritten)*9 {
				t.Errorf("gaussian: of %d distinct keys, %d within 3 stddev of the median and %d within 8", res.KeysWritten, within3, within8)
			}
		case 'S':
			if res.KeysWritten != 2000 || within8 != 0 {
				t.Errorf("sequential: %d distinct keys of 2000 writes (%d in 4200..5800), want 0..1999", res.KeysWritten, within8)
			}
		}
	}
	// 2000 uniform writes over 10000 keys hit about 1813 distinct keys;
	// skewed patterns far fewer.
	if distinct['R'] < 1700 || distinct['Z'] > distinct['R']/2 || distinct['G'] > distinct['R']/2 {
		t.Fatalf("distinct keys written: %v", distinct)
	}

	plan := testPlan()
	plan.Mix = []MixEntry{{Op: "get", Weight: 3}, {Op: "set", Weight: 1}, {Op: "incr", Weight: 1}, {Op: "hset", Weight: 1},
		{Op: "hgetall", Weight: 1}, {Op: "lpush", Weight: 1}, {Op: "lrange", Weight: 1}, {Op: "zadd", Weight: 1},
		{Op: "zrevrange", Weight: 1}, {Op: "mget", Weight: 1}, {Op: "eval", Weight: 1}}
	plan.Rate, plan.Requests, plan.TestTime = 0, 1300, 10*time.Second
	c := srv.Client()
	before := map[string]int64{}
	for _, m := range plan.Mix {
		before[m.Op] = commandCalls(t, c, m.Op)
	}
	res := testRunner(t, srv).Run(t.Context(), plan)
	if res.Outcome != OutcomeCompleted || res.Total.Errors != 0 {
		t.Fatalf("%s (%s: %s), %d errors", res.Outcome, res.Reason, res.Detail, res.Total.Errors)
	}
	for i, m := range plan.Mix {
		got := commandCalls(t, c, m.Op) - before[m.Op]
		if m.Op == "get" {
			got -= res.Commands[len(plan.Mix)-1].Ops // the script's GETs count as GETs
		}
		want := int64(100 * m.Weight)
		if got != res.Commands[i].Ops || got < want-2 || got > want+2 {
			t.Errorf("%s: server counted %d, burst %d, want about %d", m.Op, got, res.Commands[i].Ops, want)
		}
	}
}

func TestBurstRateLimit(t *testing.T) {
	srv := redistest.Start(t)
	plan := testPlan()
	plan.Rate, plan.TestTime, plan.Pipeline = 500, time.Second, 8
	res := testRunner(t, srv).Run(t.Context(), plan)
	if res.Outcome != OutcomeCompleted {
		t.Fatalf("%s (%s: %s)", res.Outcome, res.Reason, res.Detail)
	}
	// A loose band: the schedule, not the server, sets the pace.
	if n := res.Total.Ops; n < 350 || n > 650 {
		t.Fatalf("%d requests in 1s at 500/s", n)
	}
}

func TestBurstLeavesNoTrace(t *testing.T) {
	srv := redistest.Start(t, "enable-debug-command yes")
	c := srv.Client()
	user := seedUserData(t, c)
	plan := testPlan()
	plan.Mix = []MixEntry{{Op: "set", Weight: 2}, {Op: "get", Weight: 2}, {Op: "incr", Weight: 1}, {Op: "hset", Weight: 1},
		{Op: "lpush", Weight: 1}, {Op: "zadd", Weight: 1}, {Op: "mget", Weight: 1}}
	plan.Rate, plan.Requests = 0, 3000
	b := testRunner(t, srv)
	var burstKeys, noTTL int
	b.beforeCleanup = func() {
		for _, k := range srv.Keys(t.Context(), plan.Namespace.Prefix+"*") {
			burstKeys++
			if ttl := c.PTTL(t.Context(), k).Val(); ttl <= 0 {
				noTTL++
			}
		}
	}
	res := b.Run(t.Context(), plan)
	if res.Outcome != OutcomeCompleted {
		t.Fatalf("%s (%s: %s)", res.Outcome, res.Reason, res.Detail)
	}
	if burstKeys == 0 || int64(burstKeys) != res.KeysWritten || noTTL != 0 {
		t.Fatalf("before cleanup: %d burst keys (%d written), %d without a TTL", burstKeys, res.KeysWritten, noTTL)
	}
	if res.KeysDeleted != res.KeysWritten || res.CleanupError != "" {
		t.Fatalf("unlinked %d of %d written keys: %s", res.KeysDeleted, res.KeysWritten, res.CleanupError)
	}
	assertNoTrace(t, srv, plan, user)
}

func TestBurstAbortsOnP99(t *testing.T) {
	srv := redistest.Start(t, "enable-debug-command yes")
	c := srv.Client()
	user := seedUserData(t, c)
	plan := testPlan()
	plan.TestTime = 5 * time.Second
	b := testRunner(t, srv)
	b.Guards.AbortP99 = 50 * time.Millisecond
	wait := whenUnderWay(t, b, 100, func(ctx context.Context) error {
		return c.Do(ctx, "client", "pause", 1500, "all").Err()
	})
	start := time.Now()
	res := b.Run(t.Context(), plan)
	wait()
	if res.Outcome != OutcomeAborted || res.Reason != ReasonP99 {
		t.Fatalf("outcome %s (%s: %s), want aborted for p99", res.Outcome, res.Reason, res.Detail)
	}
	if took := time.Since(start); took > 4500*time.Millisecond {
		t.Fatalf("the aborted burst took %v of its 5s", took)
	}
	if res.Total.Ops == 0 {
		t.Fatal("no figures from before the stall")
	}
	assertNoTrace(t, srv, plan, user)
}

func TestBurstAbortsOnErrorBudget(t *testing.T) {
	srv := redistest.Start(t, "enable-debug-command yes")
	c := srv.Client()
	user := seedUserData(t, c)
	// A user that may not SET: half the requests fail with NOPERM.
	if err := c.Do(t.Context(), "acl", "setuser", "nosets", "on", ">pw", "~*", "&*", "+@all", "-set").Err(); err != nil {
		t.Fatal(err)
	}
	plan := testPlan()
	plan.Mix = []MixEntry{{Op: "set", Weight: 1}, {Op: "get", Weight: 1}}
	plan.TestTime = 5 * time.Second
	b := testRunner(t, srv)
	b.Endpoint.Username, b.Endpoint.Password = "nosets", "pw"
	res := b.Run(t.Context(), plan)
	if res.Outcome != OutcomeAborted || res.Reason != ReasonErrors {
		t.Fatalf("outcome %s (%s: %s), want aborted for errors", res.Outcome, res.Reason, res.Detail)
	}
	if res.Commands[0].Errors == 0 || res.Commands[1].Errors != 0 {
		t.Fatalf("errors: SET %d, GET %d", res.Commands[0].Errors, res.Commands[1].Errors)
	}
	if strings.Contains(res.Detail, "pw") {
		t.Fatalf("the password shows in %q", res.Detail)
	}
	assertNoTrace(t, srv, plan, user)
}

func TestBurstCancelledMidway(t *testing.T) {
	srv := redistest.Start(t, "enable-debug-command yes")
	user := seedUserData(t, srv.Client())
	plan := testPlan()
	plan.TestTime = 10 * time.Second
	ctx, cancel := context.WithCancel(t.Context())
	b := testRunner(t, srv)
	var cancelled time.Time
	wait := whenUnderWay(t, b, 100, func(context.Context) error {
		cancelled = time.Now()
		cancel()
		return nil
	})
	res := b.Run(ctx, plan)
	wait()
	if res.Outcome != OutcomeAborted || res.Reason != ReasonCancelled {
		t.Fatalf("outcome %s (%s: %s), want aborted for cancelled", res.Outcome, res.Reason, res.Detail)
	}
	if took := time.Since(cancelled); took > 3*time.Second {
		t.Fatalf("cancel took %v to stop the burst", took)
	}
	if res.KeysWritten <= 0 || res.KeysDeleted != res.KeysWritten {
		t.Fatalf("written %d, unlinked %d", res.KeysWritten, res.KeysDeleted)
	}
	assertNoTrace(t, srv, plan, user)
}

func TestBurstBytesBound(t *testing.T) {
	srv := redistest.Start(t)
	plan := testPlan()
	plan.Mix = []MixEntry{{Op: "set", Weight: 1}}
	plan.Rate, plan.MaxBytes, plan.TestTime = 0, 20000, 10*time.Second
	res := testRunner(t, srv).Run(t.Context(), plan)
	if res.Outcome != OutcomeCompleted || res.Bound != "bytes" {
		t.Fatalf("%s (%s), bound %q", res.Outcome, res.Reason, res.Bound)
	}
	if res.BytesWritten > plan.MaxBytes || res.BytesWritten < plan.MaxBytes-200 {
		t.Fatalf("wrote %d bytes under a bound of %d", res.BytesWritten, plan.MaxBytes)
	}
}

func TestBurstFailsWithoutServer(t *testing.T) {
	srv := redistest.Start(t)
	b := testRunner(t, srv)
	b.Endpoint.Addr = "127.0.0.1:" + strconv.Itoa(redistest.FreePort(t))
	res := b.Run(t.Context(), testPlan())
	if res.Outcome != OutcomeFailed || res.Reason != ReasonConnect {
		t.Fatalf("%s (%s: %s)", res.Outcome, res.Reason, res.Detail)
	}
}

func TestPlanValidate(t *testing.T) {
	for _, tc := range []struct {
		change func(*Plan)
		field  string
	}{
		{func(p *Plan) { p.Clients = 0 }, "clients"},
		{func(p *Plan) { p.Clients = 65 }, "clients"},
		{func(p *Plan) { p.Rate = 0 }, "rate"}, // run mode needs a rate
		{func(p *Plan) { p.TestTime = 0 }, "test-time"},
		{func(p *Plan) { p.MaxBytes = 0 }, "max-bytes"},
		{func(p *Plan) { p.KeyTTL = time.Millisecond }, "key-ttl"},
		{func(p *Plan) { p.Namespace.Prefix = "" }, "key-prefix"},
		{func(p *Plan) { p.Namespace.Prefix = "user*" }, "key-prefix"},
		{func(p *Plan) { p.Mix = nil }, "commands"},
		{func(p *Plan) { p.Keys.Max = -5 }, "key-maximum"},
	} {
		p := testPlan()
		tc.change(&p)
		err := p.Validate(RunLimits)
		fe, ok := err.(*FieldError)
		if !ok || fe.Field != tc.field {
			t.Errorf("got %v, want an error about %s", err, tc.field)
		}
	}
	if err := testPlan().Validate(RunLimits); err != nil {
		t.Fatal(err)
	}
}

func TestParseMixAndRatio(t *testing.T) {
	mix, err := ParseRatio("1:10")
	if err != nil || len(mix) != 2 || mix[0] != (MixEntry{"set", 1}) || mix[1] != (MixEntry{"get", 10}) {
		t.Fatalf("ParseRatio(1:10) = %v, %v", mix, err)
	}
	if mix, _ := ParseRatio("0:1"); len(mix) != 1 || mix[0].Op != "get" {
		t.Fatalf("ParseRatio(0:1) = %v", mix)
	}
	for _, bad := range []string{"1", "a:b", "0:0", "-1:2"} {
		if _, err := ParseRatio(bad); err == nil {
			t.Errorf("ParseRatio(%q) accepted", bad)
		}
	}
	mix, err = ParseMix("get:10, SET, hgetall:2")
	if err != nil || len(mix) != 3 || mix[1] != (MixEntry{"set", 1}) {
		t.Fatalf("ParseMix = %v, %v", mix, err)
	}
	for _, bad := range []string{"", "flushall", "get,get", "get:0"} {
		if _, err := ParseMix(bad); err == nil {
			t.Errorf("ParseMix(%q) accepted", bad)
		}
	}
	if seq := mixSequence([]MixEntry{{"set", 1}, {"get", 3}}); len(seq) != 4 || count(seq, 0) != 1 {
		t.Fatalf("mixSequence = %v", seq)
	}
}

func count(s []int, v int) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}
