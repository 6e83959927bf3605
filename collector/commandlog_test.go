package collector

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/internal/faulttest"
)

// capturedServer answers over the wire with the replies captured from a
// real server in testdata/servers/<name> (see its README.md), byte for
// byte: INFO, INFO commandstats, LATENCY LATEST and HISTOGRAM, CONFIG GET,
// COMMANDLOG LEN and GET. COMMANDLOG GET answers commandlog-get-slow-<n>
// on the n-th call, the last capture after that. A command with no capture
// gets the error reply of a server that lacks it. edit, when set, may change
// a capture before it is sent. asked counts the commands by their first two
// words.
type capturedServer struct {
	t    *testing.T
	name string
	edit func(file, reply string) string

	mu    sync.Mutex
	gets  int
	asked map[string]int
}

func (s *capturedServer) file(name string) (string, bool) {
	b, err := os.ReadFile(filepath.Join("testdata", "servers", s.name, name))
	if errors.Is(err, os.ErrNotExist) {
		return "", false
	}
	if err != nil {
		s.t.Error(err)
		return "", false
	}
	reply := string(b)
	if s.edit != nil {
		reply = s.edit(name, reply)
	}
	return reply, true
}

func (s *capturedServer) handle(args []string) faulttest.Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	words := strings.ToLower(strings.Join(args, " "))
	key := strings.Join(strings.Fields(words)[:min(2, len(args))], " ")
	s.asked[key]++
	var file string
	switch {
	case words == "info":
		info := infoFixture(s.t, "info", s.name+".txt")
		if s.edit != nil {
			info = s.edit("info.txt", info)
		}
		return faulttest.Bytes(respBulk(info))
	case words == "info commandstats":
		reply, _ := s.file("info-commandstats.txt")
		return faulttest.Bytes(respBulk(reply))
	case words == "ping":
		return faulttest.Bytes("+PONG\r\n")
	case key == "latency latest", key == "latency histogram", key == "config get":
		file = strings.ReplaceAll(key, " ", "-") + ".resp"
	case key == "commandlog len" && len(args) == 3:
		file = "commandlog-len-" + strings.ToLower(args[2]) + ".resp"
	case key == "commandlog get":
		s.gets++
		file = "commandlog-get-slow-" + itoa(int64(s.gets)) + ".resp"
		if _, ok := s.file(file); !ok {
			file = "commandlog-get-slow-" + itoa(int64(s.gets-1)) + ".resp"
			s.gets--
		}
	}
	if reply, ok := s.file(file); ok {
		return faulttest.Bytes(reply)
	}
	return faulttest.Bytes("-ERR unknown command '" + args[0] + "', with args beginning with: \r\n")
}

// startCaptured serves the captures of name to a go-redis client.
func startCaptured(t *testing.T, name string, edit func(file, reply string) string) (*capturedServer, *redis.Client) {
	s := &capturedServer{t: t, name: name, edit: edit, asked: map[string]int{}}
	srv := faulttest.RESP(t, faulttest.Handshake(s.handle))
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), Protocol: 2, DisableIdentity: true, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return s, c
}

// moduleGIL adds a Redis 8 module-acquire-GIL event to a captured LATENCY
// LATEST: the packaged Redis 8.0 loads no module that takes the GIL from a
// thread, so no capture can show one.
func moduleGIL(file, reply string) string {
	if file == "info.txt" {
		return onTunedHost(reply)
	}
	if file != "latency-latest.resp" {
		return reply
	}
	head, rest, _ := strings.Cut(strings.TrimPrefix(reply, "*"), "\r\n")
	n, err := strconv.Atoi(head)
	if err != nil {
		panic("latency-latest.resp is not an array: " + head)
	}
	return "*" + strconv.Itoa(n+1) + "\r\n" + rest +
		"*4\r\n" + respBulk("module-acquire-GIL") + ":1796135652\r\n:3\r\n:7\r\n"
}

// onTunedHost moves a captured INFO onto testdata/hosts/tuned: its
// redis-server is pid 7, listening on port 6379.
func onTunedHost(info string) string {
	info = regexp.MustCompile(`(?m)^process_id:\d+\r$`).ReplaceAllString(info, "process_id:7\r")
	return regexp.MustCompile(`(?m)^tcp_port:\d+\r$`).ReplaceAllString(info, "tcp_port:6379\r")
}

// TestGoldenCapturedServers: the /metrics of targets whose every reply was
// captured from a real Redis 8.0 (8.0.2, 8.0.6), Valkey 8.0, 8.1 and 9.1 (two refreshes:
// the slow log's new entries show in the histogram), replayed over the
// wire through go-redis. Valkey 8.0 refuses CONFIG, as an ACL would.
func TestGoldenCapturedServers(t *testing.T) {
	tests := []struct {
		name, host string
		edit       func(file, reply string) string
		commandlog bool
	}{
		{name: "redis-8.0", host: "tuned", edit: moduleGIL},
		{name: "valkey-8.0", host: "container", edit: func(file, reply string) string {
			if file == "config-get.resp" {
				return "-NOPERM User probe has no permissions to run the 'config|get' command\r\n"
			}
			return reply
		}},
		{name: "valkey-8.1", host: "untuned", commandlog: true},
		{name: "valkey-9.1", host: "tuned", edit: func(file, reply string) string {
			if file == "info.txt" {
				return onTunedHost(reply)
			}
			return reply
		}, commandlog: true},
		{name: "redis-8.0.6", host: "untuned"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, c := startCaptured(t, tt.name, tt.edit)
			cfg := TargetConfig{Name: tt.name + "-" + tt.host, Commands: []string{"get", "ping", "set"}, Paths: hostPaths(tt.host)}
			tgt := NewTarget(cfg, c)
			tgt.Refresh(t.Context())
			tgt.Refresh(t.Context())
			errs := tgt.Snapshot().Errors
			for _, name := range []string{"info", "latency", "process", "commandlog"} {
				if err := errs[name]; err != nil && !errors.Is(err, ErrNoData) {
					t.Errorf("%s: %v", name, err)
				}
			}
			if _, ran := errs["commandlog"]; ran != tt.commandlog {
				t.Errorf("commandlog ran: %v, want %v", ran, tt.commandlog)
			}
			if got := s.asked["commandlog len"] + s.asked["commandlog get"]; (got > 0) != tt.commandlog {
				t.Errorf("COMMANDLOG asked %d times", got)
			}
			checkGolden(t, tgt, "target-"+tt.name+"-"+tt.host)
		})
	}
}

// TestCommandlogArgumentsStayOut: what a slow entry says of its command
// and client (captured: DEBUG SLEEP 0.05 from 127.0.0.1) is nowhere in
// /metrics; here the client name and arguments carry a secret.
func TestCommandlogArgumentsStayOut(t *testing.T) {
	secret := func(file, reply string) string {
		if strings.HasPrefix(file, "commandlog-get-slow-") {
			reply = strings.ReplaceAll(reply, respBulk("debug"), respBulk("s3cret"))
			reply = strings.ReplaceAll(reply, "$0\r\n\r\n", respBulk("s3cret-client"))
		}
		return reply
	}
	_, c := startCaptured(t, "valkey-8.1", secret)
	tgt := NewTarget(TargetConfig{Name: "t", Paths: hostPaths("tuned")}, c)
	tgt.Refresh(t.Context())
	tgt.Refresh(t.Context())
	out, err := testutil.CollectAndFormat(tgt, expfmt.TypeTextPlain, goldenNames(t, tgt)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{"s3cret", "127.0.0.1", "sleep"} {
		if bytes.Contains(out, []byte(leak)) {
			t.Errorf("%q in /metrics:\n%s", leak, out)
		}
	}
	if !bytes.Contains(out, []byte(`redis_prober_server_commandlog_slow_seconds_count{node="",target="t"} 2`)) {
		t.Errorf("the two new slow entries are not observed:\n%s", out)
	}
}

func TestCommandlogTracker(t *testing.T) {
	e := func(ids ...int64) []commandlogEntry {
		var out []commandlogEntry
		for _, id := range ids {
			out = append(out, commandlogEntry{id: id, micros: 1000 * (id + 1)})
		}
		return out
	}
	var c commandlogTracker
	steps := []struct {
		run  string
		ids  []int64
		want []float64
	}{
		{"a", []int64{4, 3, 2}, nil},                      // the baseline: logged before we looked
		{"a", []int64{4, 3, 2}, nil},                      // nothing new
		{"a", []int64{6, 5, 4, 3}, []float64{.007, .006}}, // two new
		{"a", nil, nil},                                   // COMMANDLOG RESET: ids go on
		{"a", []int64{7}, []float64{.008}},
		{"b", []int64{1, 0}, []float64{.002, .001}}, // a restart: all new
		{"b", []int64{1, 0}, nil},
		{"b", []int64{0}, []float64{.001}}, // ids went back without a new run_id
	}
	for i, s := range steps {
		if got := c.next(s.run, e(s.ids...)); !slices.Equal(got, s.want) {
			t.Errorf("step %d: %v, want %v", i, got, s.want)
		}
	}
}

// commandlogDoer answers like Valkey 8.1 with the given COMMANDLOG replies.
func commandlogDoer(t *testing.T, lens [3]any, get any) *replayDoer {
	return &replayDoer{info: infoFixture(t, "info", "valkey-8.1.txt"), config: defaultConfig(), latest: []any{},
		other: map[string]any{
			"commandlog len slow": lens[0], "commandlog len large-request": lens[1], "commandlog len large-reply": lens[2],
			"commandlog get 128 slow": get,
		}}
}

// TestCommandlogAbsentIsSilent: on a server without COMMANDLOG the
// command is never sent and the target has no commandlog series at all.
func TestCommandlogAbsentIsSilent(t *testing.T) {
	for _, name := range []string{"redis-6.2.txt", "redis-7.0.txt", "redis-8.0.txt", "valkey-8.0.txt"} {
		d := &replayDoer{info: infoFixture(t, "info", name), config: defaultConfig(), latest: []any{}, commandstats: "# Commandstats\r\n", histogram: []any{}}
		logs := &syncBuffer{}
		tgt := NewTarget(TargetConfig{Name: "t", Paths: hostPaths("tuned"),
			Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}, d)
		tgt.Refresh(t.Context())
		tgt.Refresh(t.Context())
		if len(d.asked) > 0 {
			t.Errorf("%s: asked %v", name, d.asked)
		}
		out, err := testutil.CollectAndFormat(tgt, expfmt.TypeTextPlain, goldenNames(t, tgt)...)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(out, []byte("commandlog")) || strings.Contains(logs.String(), "commandlog") {
			t.Errorf("%s: commandlog series or logs on a server without it:\n%s\n%s", name, out, logs.String())
		}
	}
}

// TestCommandlogRefusedIsNotAskedAgain: an ACL that refuses COMMANDLOG
// makes the collector "no data here", logged once at debug, and the
// command is not sent again on the next refreshes (each would add to the
// server's ACL LOG).
func TestCommandlogRefusedIsNotAskedAgain(t *testing.T) {
	noperm := replyError("NOPERM User probe has no permissions to run the 'commandlog|len' command")
	d := commandlogDoer(t, [3]any{noperm, noperm, noperm}, noperm)
	logs := &syncBuffer{}
	tgt := NewTarget(TargetConfig{Name: "t", Paths: hostPaths("tuned"),
		Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}, d)
	for range 3 {
		tgt.Refresh(t.Context())
		if err := tgt.Snapshot().Errors["commandlog"]; !errors.Is(err, ErrNoData) {
			t.Fatalf("commandlog error %v, want ErrNoData", err)
		}
	}
	if len(d.asked) != 1 {
		t.Errorf("asked %v, want one COMMANDLOG LEN", d.asked)
	}
	if n := strings.Count(logs.String(), "collector=commandlog"); n != 1 || strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("logged %d times:\n%s", n, logs.String())
	}
	out, err := testutil.CollectAndFormat(tgt, expfmt.TypeTextPlain, "redis_prober_collector_success", "redis_prober_server_commandlog_length")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte(`redis_prober_collector_success{collector="commandlog",node="",target="t"} 0`)) || bytes.Contains(out, []byte("commandlog_length{")) {
		t.Errorf("series:\n%s", out)
	}
	if n, _ := seriesOf(gatherTarget(t, tgt), "redis_prober_server_commandlog_slow_seconds"); n != 0 {
		t.Errorf("%d slow histograms for a refused COMMANDLOG", n)
	}
}
