package collector

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/internal/host"
)

var update = flag.Bool("update", false, "rewrite the golden .prom files in testdata/golden")

// replayDoer answers from fixtures: INFO text from testdata, the other
// replies as go-redis decodes them over RESP2. Parsing tests only.
type replayDoer struct {
	info, commandstats string
	config             map[string]string // nil: CONFIG refused by ACL
	latest, histogram  any
	// other answers any other command, by its lower-case words joined
	// with spaces ("commandlog len slow"): a reply, or an error.
	other map[string]any
	asked []string // commands other was asked for
}

func (d *replayDoer) Do(ctx context.Context, args ...any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, args...)
	name := strings.ToLower(fmt.Sprint(args...))
	switch {
	case name == "info":
		cmd.SetVal(d.info)
	case name == "infocommandstats":
		cmd.SetVal(d.commandstats)
	case name == "latencylatest":
		cmd.SetVal(d.latest)
	case strings.HasPrefix(name, "latencyhistogram"):
		cmd.SetVal(d.histogram)
	case strings.HasPrefix(name, "configget"):
		if d.config == nil {
			cmd.SetErr(replyError("NOPERM User probe has no permissions to run the 'config|get' command"))
			break
		}
		var out []any
		for _, p := range args[2:] {
			if v, ok := d.config[p.(string)]; ok {
				out = append(out, p, v)
			}
		}
		cmd.SetVal(out)
	default:
		key := strings.ToLower(strings.TrimSpace(fmt.Sprintln(args...)))
		d.asked = append(d.asked, key)
		switch v := d.other[key].(type) {
		case nil:
			cmd.SetErr(errors.New("replayDoer: unexpected " + key))
		case error:
			cmd.SetErr(v)
		default:
			cmd.SetVal(v)
		}
	}
	return cmd
}

// replyError is an error reply of the server, as go-redis sees one.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

func hostPaths(name string) host.Paths {
	return host.Paths{ProcFS: filepath.Join("testdata", "hosts", name, "proc"), SysFS: filepath.Join("testdata", "hosts", name, "sys")}
}

func defaultConfig() map[string]string {
	return map[string]string{
		"maxmemory": "0", "maxclients": "10000", "tcp-backlog": "511", "latency-monitor-threshold": "0",
		"appendonly": "no", "appendfsync": "everysec", "no-appendfsync-on-rewrite": "no",
	}
}

// goldenNames lists the metric families of c except the timing ones.
func goldenNames(t *testing.T, c prometheus.Collector) []string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		if mf.GetName() != "redis_prober_collector_duration_seconds" {
			names = append(names, mf.GetName())
		}
	}
	return names
}

// checkGolden compares c's exposition with testdata/golden/<name>.prom.
func checkGolden(t *testing.T, c prometheus.Collector, name string) {
	t.Helper()
	names := goldenNames(t, c)
	got, err := testutil.CollectAndFormat(c, expfmt.TypeTextPlain, names...)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "golden", name+".prom")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run Golden -update to create it)", err)
	}
	if err := testutil.CollectAndCompare(c, bytes.NewReader(want), names...); err != nil {
		t.Errorf("%s: %v", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the collector's output (run with -update after checking):\n%s", path, got)
	}
	lintProblems(t, c)
}

// lintProblems fails on any promlint finding.
func lintProblems(t *testing.T, c prometheus.Collector) {
	t.Helper()
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}

func TestGoldenHost(t *testing.T) {
	for _, host := range []string{"untuned", "tuned", "container"} {
		t.Run(host, func(t *testing.T) {
			checkGolden(t, NewHost(hostPaths(host), AllEnabled(), nil), "host-"+host)
		})
	}
}

func TestGoldenTarget(t *testing.T) {
	histogram := []any{
		"get", []any{"calls", int64(3000), "histogram_usec", []any{int64(1), int64(2100), int64(2), int64(2950), int64(4), int64(2999), int64(8), int64(3000)}},
		"ping", []any{"calls", int64(3000), "histogram_usec", []any{int64(1), int64(2800), int64(2), int64(2990), int64(16), int64(3000)}},
		"set", []any{"calls", int64(3000), "histogram_usec", []any{int64(2), int64(2500), int64(4), int64(2990), int64(33), int64(2999), int64(1057), int64(3000)}},
	}
	commandstats := "# Commandstats\r\ncmdstat_get:calls=3000,usec=2850,usec_per_call=0.95,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_ping:calls=3000,usec=1800,usec_per_call=0.60,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_set:calls=3000,usec=6100,usec_per_call=2.03,rejected_calls=0,failed_calls=0\r\n"
	tests := []struct {
		name, info, host string
		doer             replayDoer
	}{
		{name: "redis-6.2-untuned", info: "redis-6.2.txt", host: "untuned", doer: replayDoer{
			config: defaultConfig(), latest: []any{},
		}},
		{name: "redis-7.0-tuned", info: "redis-7.0.txt", host: "tuned", doer: replayDoer{
			config: defaultConfig(), latest: []any{[]any{"command", int64(1795985850), int64(10), int64(10)}},
			histogram: histogram, commandstats: commandstats,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.doer
			d.info = infoFixture(t, "info", tt.info)
			cfg := TargetConfig{Name: tt.name, Commands: []string{"get", "ping", "set"}, Paths: hostPaths(tt.host)}
			tgt := NewTarget(cfg, &d)
			tgt.Refresh(t.Context())
			checkGolden(t, tgt, "target-"+tt.name)
		})
	}
}
