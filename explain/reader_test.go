package explain

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/internal/host"
	"github.com/redis-prober/redis-prober/internal/redisinfo"
	"github.com/redis-prober/redis-prober/prober"
)

// fakeClient answers INFO with a text and every other command from a
// table; a command missing from it is refused as an ACL would.
type fakeClient struct {
	info    string
	replies map[string]any // "slowlog get" → reply
	sent    []string
	infos   int // INFO commands sent
}

func (c *fakeClient) Info(ctx context.Context, _ ...string) *redis.StringCmd {
	c.infos++
	cmd := redis.NewStringCmd(ctx, "info")
	cmd.SetVal(c.info)
	return cmd
}

func (c *fakeClient) Do(ctx context.Context, args ...any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, args...)
	key := strings.ToLower(args[0].(string) + " " + args[1].(string))
	if len(args) > 3 {
		if typ, ok := args[3].(string); ok {
			key += " " + typ // COMMANDLOG GET count type
		}
	}
	c.sent = append(c.sent, key)
	if r, ok := c.replies[key]; ok {
		cmd.SetVal(r)
	} else {
		cmd.SetErr(replyError("NOPERM User prober has no permissions to run the '" + key + "' command"))
	}
	return cmd
}

// replyError is an error reply of the server (a redis.Error).
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

var _ redis.Error = replyError("")

// syncBuf is a log sink.
type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestReaderRefusedSources: a SLOWLOG and LATENCY refused by an ACL are said
// once, at info level, and not asked again for refusedRetry; INFO alone
// still attributes (here a fork between two reads).
func TestReaderRefusedSources(t *testing.T) {
	before := readFixture(t, "info-7.0-before-bgsave.txt")
	during := readFixture(t, "info-7.0-during-bgsave.txt")
	logs := &syncBuf{}
	n, clk := newTestNode(Config{Threshold: 2 * time.Millisecond})
	c := &fakeClient{info: before}
	r := NewReader(ReaderConfig{Node: n, Client: c, Paths: host.Paths{ProcFS: t.TempDir()},
		Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	r.now = clk.now
	ctx := context.Background()
	r.Tick(ctx)
	// A slow request while the fork happened: the fixtures were written
	// 32 ms apart by the server's clock, which the reader moves onto the
	// prober's by the offset of its reads.
	clk.add(16 * time.Millisecond)
	n.Observe(prober.ResultOK, 8*time.Millisecond)
	c.info = during
	clk.add(time.Second)
	for range 3 {
		r.Tick(ctx)
	}
	got := n.Counts()
	if got[Fork] != 1 || sum(got) != 1 {
		t.Errorf("counts %v: want the one slow request under fork", got)
	}
	out := logs.String()
	if k := strings.Count(out, "is refused"); k != 2 {
		t.Errorf("%d refusals logged, want one for SLOWLOG and one for LATENCY:\n%s", k, out)
	}
	if strings.Contains(out, "level=ERROR") || strings.Contains(out, "level=WARN") {
		t.Errorf("a refused source logged above info:\n%s", out)
	}
	sent := strings.Join(c.sent, ",")
	if strings.Count(sent, "slowlog get") != 1 || strings.Count(sent, "latency latest") != 1 {
		t.Errorf("sent %s: a refused command was asked again within %v", sent, refusedRetry)
	}
}

// TestReaderCommandlogLargeEntries: on a COMMANDLOG server the reader reads
// the large-request and large-reply logs beside the slow one, since the
// last id of each; an entry logged in the second of a slow request that
// nothing else explains names slow_command (a coincidence: the log gives a
// size, not a time), and what a log held at the first read is never
// evidence.
func TestReaderCommandlogLargeEntries(t *testing.T) {
	before := readFixture(t, "info-7.0-before-bgsave.txt")
	n, clk := newTestNode(Config{Threshold: 2 * time.Millisecond})
	// The server's clock runs with the test's, 3 s ahead of it.
	re := regexp.MustCompile(`server_time_usec:\d+`)
	infoNow := func() string {
		return re.ReplaceAllString(before, fmt.Sprintf("server_time_usec:%d", clk.now().Add(3*time.Second).UnixMicro())) +
			"valkey_version:9.1.0\r\n"
	}
	info := infoNow()
	entry := func(id, unix, bytes int64) any {
		return []any{id, unix, bytes, []any{"get", "big"}, "127.0.0.1:5000", ""}
	}
	// In the log before the node's first read: never evidence, even
	// dated (as here) in the second of the later slow request.
	stale := clk.now().Add(3300*time.Millisecond + 3*time.Second).Unix()
	c := &fakeClient{info: info, replies: map[string]any{
		"commandlog get slow": []any{}, "latency latest": []any{},
		"commandlog get large-request": []any{entry(0, stale, 1<<20)},
		"commandlog get large-reply":   []any{},
	}}
	r := NewReader(ReaderConfig{Node: n, Client: c, Paths: host.Paths{ProcFS: t.TempDir()}, NoProc: true})
	r.now = clk.now
	ctx := context.Background()
	r.Tick(ctx)
	for _, typ := range []string{"slow", "large-request", "large-reply"} {
		if !slices.Contains(c.sent, "commandlog get "+typ) {
			t.Fatalf("sent %v: no COMMANDLOG GET of %s", c.sent, typ)
		}
	}
	// A slow request, and a reply of 50 MB logged in its second by the
	// server's clock.
	clk.add(300 * time.Millisecond)
	n.Observe(prober.ResultOK, 8*time.Millisecond)
	serverSec := (clk.now().UnixNano() + r.offset()) / int64(time.Second)
	c.replies["commandlog get large-reply"] = []any{entry(0, serverSec, 50<<20)}
	clk.add(time.Second)
	c.info = infoNow()
	r.Tick(ctx)
	// A second one, two seconds later: the large request in the log at
	// the first read is no evidence for it, the reply two seconds before
	// it neither.
	clk.add(2 * time.Second)
	n.Observe(prober.ResultOK, 8*time.Millisecond)
	clk.add(time.Second)
	for range 2 {
		c.info = infoNow()
		r.Tick(ctx)
		clk.add(100 * time.Millisecond)
	}
	got := n.Counts()
	if got[SlowCommand] != 1 || got[Unexplained] != 1 || sum(got) != 2 {
		t.Errorf("counts %s: want one slow_command (the large reply) and one unexplained", describe(got))
	}
}

func TestInfoStamp(t *testing.T) {
	fixture := readFixture(t, "info-7.0-before-bgsave.txt")
	info, err := redisinfo.Parse(fixture)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, text string
		want       int64
	}{
		{"fixture", fixture, serverMicros(info)},
		{"last line", "# Server\r\nserver_time_usec:1700000000000001", 1700000000000001},
		{"LF only", "# Server\nserver_time_usec:42\nuptime_in_seconds:1\n", 42},
		{"absent", "# Server\r\nredis_version:7.0.15\r\n", 0},
		{"not a number", "# Server\r\nserver_time_usec:soon\r\n", 0},
		{"negative", "# Server\r\nserver_time_usec:-5\r\n", 0},
		{"first line, no section", "server_time_usec:42\r\n", 0}, // INFO always opens with a section
		{"a longer field", "# Server\r\nserver_time_usec_x:42\r\n", 0},
	} {
		if got := infoStamp(tc.text); got != tc.want {
			t.Errorf("%s: infoStamp = %d, want %d", tc.name, got, tc.want)
		}
	}
	if serverMicros(info) == 0 {
		t.Error("the fixture has no server_time_usec: the first case tests nothing")
	}
}

// TestReaderTakesCachedINFOWhileHealthy: with the engine's INFO cache, a
// node with no slow request lately takes INFO from the cache when it is
// fresh and asks Redis only every IdleInfoInterval without it; once a
// request was slow it reads its own every tick, as a node without a cache
// always does.
func TestReaderTakesCachedINFOWhileHealthy(t *testing.T) {
	before := readFixture(t, "info-7.0-before-bgsave.txt")
	during := readFixture(t, "info-7.0-during-bgsave.txt")
	n, clk := newTestNode(Config{Threshold: 2 * time.Millisecond})
	c := &fakeClient{info: before, replies: map[string]any{"slowlog get": []any{}, "latency latest": []any{}}}
	var cached string
	r := NewReader(ReaderConfig{Node: n, Client: c, NoProc: true,
		Cached: func() (string, bool) { return cached, cached != "" }})
	r.now = clk.now
	ctx := context.Background()
	tick := func(wantInfos int, what string) {
		t.Helper()
		clk.add(time.Second)
		r.Tick(ctx)
		if c.infos != wantInfos {
			t.Fatalf("%s: %d INFO sent, want %d", what, c.infos, wantInfos)
		}
	}
	r.Tick(ctx)
	if c.infos != 1 {
		t.Fatalf("the first tick sent %d INFO, want 1 (nothing cached yet)", c.infos)
	}
	for range int(IdleInfoInterval/time.Second) - 1 {
		tick(1, "a healthy node within IdleInfoInterval of its last read, nothing cached")
	}
	tick(2, "a healthy node IdleInfoInterval after its last read, nothing cached")
	cached = during
	tick(2, "a healthy node with a fresh cache")
	if !r.prev.child {
		t.Error("the cached INFO (a BGSAVE child running) was not read")
	}
	took := r.lastRead
	tick(2, "a healthy node whose cache still holds the reply it took")
	if r.lastRead != took {
		t.Error("the cached reply the node had taken was parsed again")
	}
	n.Observe(prober.ResultOK, 8*time.Millisecond)
	tick(3, "a node with a slow request, a fresh cache beside it")
	tick(4, "a node with a slow request a second before")
	// The fixtures' server clock stands still, so no read covers the
	// request: it waits until decideBy, and a waiting request is read for.
	clk.add(procHot)
	tick(5, "a node whose slow request waits for its sources")
	if n.Pending() {
		t.Fatal("the slow request still waits past decideBy")
	}
	tick(5, "a node whose last slow request is past procHot, with a fresh cache")

	// Without a cache (the fault tests' harness, a doctor): every tick.
	n2, clk2 := newTestNode(Config{Threshold: 2 * time.Millisecond})
	c2 := &fakeClient{info: before, replies: c.replies}
	r2 := NewReader(ReaderConfig{Node: n2, Client: c2, NoProc: true})
	r2.now = clk2.now
	for i := range 3 {
		clk2.add(time.Second)
		r2.Tick(ctx)
		if c2.infos != i+1 {
			t.Fatalf("tick %d without a cache sent %d INFO in all, want %d", i+1, c2.infos, i+1)
		}
	}
}
