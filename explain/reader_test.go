package explain

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/collector"
	"github.com/redis-prober/redis-prober/prober"
)

// fakeClient answers INFO with a text and every other command from a
// table; a command missing from it is refused as an ACL would.
type fakeClient struct {
	info    string
	replies map[string]any // "slowlog get" → reply
	sent    []string
}

func (c *fakeClient) Info(ctx context.Context, _ ...string) *redis.StringCmd {
	cmd := redis.NewStringCmd(ctx, "info")
	cmd.SetVal(c.info)
	return cmd
}

func (c *fakeClient) Do(ctx context.Context, args ...any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, args...)
	key := strings.ToLower(args[0].(string) + " " + args[1].(string))
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
	before, err := os.ReadFile("testdata/info-7.0-before-bgsave.txt")
	if err != nil {
		t.Fatal(err)
	}
	during, err := os.ReadFile("testdata/info-7.0-during-bgsave.txt")
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuf{}
	n, clk := newTestNode(Config{Threshold: 2 * time.Millisecond})
	c := &fakeClient{info: string(before)}
	r := NewReader(ReaderConfig{Node: n, Client: c, Paths: collector.Paths{ProcFS: t.TempDir()},
		Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	r.now = clk.now
	ctx := context.Background()
	r.Tick(ctx)
	// A slow request while the fork happened: the fixtures were written
	// 32 ms apart by the server's clock, which the reader moves onto the
	// prober's by the offset of its reads.
	clk.add(16 * time.Millisecond)
	n.Observe(prober.ResultOK, 8*time.Millisecond)
	c.info = string(during)
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
