package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/redis-prober/redis-prober/internal/redistest"
	"github.com/redis-prober/redis-prober/prober/burst"
	"github.com/redis-prober/redis-prober/prober/report"
)

func runBurst(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := realMain(append([]string{"burst"}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestBurstCommandEndToEnd(t *testing.T) {
	srv := redistest.Start(t)
	out := filepath.Join(t.TempDir(), "burst.json")
	code, stdout, stderr := runBurst(t, "--redis.addr="+srv.URL(), "--trials=1", "--test-time=1", "--warmup=0", "--clients=2",
		"--pipeline=4", "--ratio=1:3", "--rate=2000", "--key-maximum=999", "--abort-p99=0", "--json-out-file="+out,
		"--print-percentiles=50,99,99.9,99.99")
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	for _, want := range []string{"ALL STATS", "Sets", "Gets", "Totals", "p99.99 Latency", "KB/sec"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if strings.ContainsAny(stdout, "\r\x1b") {
		t.Error("a progress bar was drawn on a stdout that is not a terminal")
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep report.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Schema != report.Schema || rep.Outcome != burst.OutcomeCompleted || len(rep.Trials) < 1 {
		t.Fatalf("report: schema %q, outcome %s, %d trials", rep.Schema, rep.Outcome, len(rep.Trials))
	}
	tr := rep.Trials[0]
	if tr.Totals.Ops < 1000 || len(tr.Commands) != 2 || tr.Commands[0].Command != "set" {
		t.Fatalf("trial: %+v", tr)
	}
	if rep.Plan.Clients != 2 || rep.Plan.Rate != 2000 || rep.Environment == nil || rep.Environment.Redis.Version == "" ||
		rep.Environment.Redis.Config["maxmemory-policy"] == "" || rep.Environment.Host.CPUs < 1 {
		t.Fatalf("plan or environment missing: %+v %+v", rep.Plan, rep.Environment)
	}
	h, err := report.DecodeHistogram(tr.Totals.Latency.Histogram)
	if err != nil || h.TotalCount() != tr.Totals.Ops {
		t.Fatalf("histogram: %v", err)
	}
	if keys := srv.Keys(t.Context(), "redis-prober:*"); len(keys) != 0 {
		t.Fatalf("keys left: %v", keys)
	}
}

func TestBurstCommandStepReport(t *testing.T) {
	srv := redistest.Start(t)
	dir := t.TempDir()
	code, stdout, stderr := runBurst(t, "--redis.addr="+srv.URL(), "--step", "--step-start=500", "--step-factor=2",
		"--step-duration=1", "--step-max-steps=2", "--objective=1s", "--abort-p99=0", "--warmup=0", "--clients=2",
		"--report="+filepath.Join(dir, "capacity.md"), "--json-out-file="+filepath.Join(dir, "capacity.json"))
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	// Both steps met 1s (a loaded host must not fail a test of the report: the
	// governor's p99 abort is off too, and 1 s steps are saturated only by a
	// stall of 111 ms at their end): the answer is the search's own bound, a lower bound.
	if !strings.Contains(stdout, "STEP LOAD") || !strings.Contains(stdout, "Capacity: at least ") ||
		!strings.Contains(stdout, "not at the server's knee") || !strings.Contains(stdout, "lag p99 ms") {
		t.Fatalf("stdout:\n%s", stdout)
	}
	var rep report.Report
	if b, err := os.ReadFile(filepath.Join(dir, "capacity.json")); err != nil || json.Unmarshal(b, &rep) != nil ||
		rep.Capacity == nil || !rep.Capacity.LowerBound {
		t.Fatalf("JSON report: %v, capacity %+v", err, rep.Capacity)
	}
	md, err := os.ReadFile(filepath.Join(dir, "capacity.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "(capacity.svg)") || !strings.Contains(string(md), "| 2 | 1,000 |") {
		t.Fatalf("report:\n%s", md)
	}
	if svg, err := os.ReadFile(filepath.Join(dir, "capacity.svg")); err != nil || !strings.HasPrefix(string(svg), "<svg") {
		t.Fatalf("chart: %v", err)
	}
}

func TestBurstCommandSkipExitsOne(t *testing.T) {
	srv := redistest.Start(t, "maxmemory 2mb")
	code, _, stderr := runBurst(t, "--redis.addr="+srv.URL(), "--test-time=1", "--warmup=0", "--ratio=1:0",
		"--data-size=4096", "--key-maximum=100000")
	if code != 1 || !strings.Contains(stderr, "skipped (memory)") {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
}

func TestBurstBadFlagsExit2(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"burst", "--clients=0"}, "--clients"},
		{[]string{"burst", "--ratio=x"}, "--ratio"},
		{[]string{"burst", "--commands=get,flushall"}, "--commands"},
		{[]string{"burst", "--key-pattern=Q:R"}, "--key-pattern"},
		{[]string{"burst", "--key-pattern=Z:Z", "--key-zipf-exp=9"}, "--key-zipf-exp"},
		{[]string{"burst", "--key-minimum=10", "--key-maximum=5"}, "--key-maximum"},
		{[]string{"burst", "--test-time=soon"}, "--test-time"},
		{[]string{"burst", "--data-size-range=9-3"}, "--data-size-range"},
		{[]string{"burst", "--print-percentiles=200"}, "--print-percentiles"},
		{[]string{"burst", "--key-prefix=nosep"}, "--key-prefix"},
		{[]string{"burst", "--report=x.md"}, "--report"},
		{[]string{"burst", "--step", "--step-start=0"}, "--step-start"},
		{[]string{"burst", "--memory-headroom=1"}, "--memory-headroom"},
		{[]string{"burst", "--redis.addr=a:1", "--redis.addr=b:1"}, "--redis.addr"},
		{[]string{"run", "--burst.clients=0"}, "--burst.clients"},
		{[]string{"run", "--burst.rate=0"}, "--burst.rate"},
		{[]string{"run", "--burst.interval=10s"}, "--burst.interval"},
		{[]string{"run", "--burst.abort-p99=-1s"}, "--burst.abort-p99"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := realMain(tc.args, &stdout, &stderr)
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if code != 2 || !strings.Contains(lines[len(lines)-1], tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit 2 naming %s", code, stderr.String(), tc.want)
			}
		})
	}
}

// With nothing listening, burst fails at once with one line that names the
// server, and writes no report: a report of a search that never ran would
// read as a verdict on the server.
func TestBurstCommandUnreachableServer(t *testing.T) {
	addr := "127.0.0.1:" + strconv.Itoa(redistest.FreePort(t))
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"burst", nil},
		{"step", []string{"--step", "--report=capacity.md"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"--redis.addr=redis://" + addr, "--test-time=1", "--json-out-file=" + filepath.Join(dir, "out.json")}
			for _, a := range tc.args {
				args = append(args, strings.Replace(a, "capacity.md", filepath.Join(dir, "capacity.md"), 1))
			}
			code, stdout, stderr := runBurst(t, args...)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if code == 0 || len(lines) != 1 || !strings.Contains(lines[0], "cannot reach Redis at "+addr) {
				t.Fatalf("exit %d, stderr %q; want exit 1 and one line naming %s", code, stderr, addr)
			}
			if strings.Contains(stdout, "STEP LOAD") || strings.Contains(stdout, "ALL STATS") {
				t.Errorf("figures printed for a server that was never reached:\n%s", stdout)
			}
			if files, _ := os.ReadDir(dir); len(files) != 0 {
				t.Errorf("files written for a server that was never reached: %v", files)
			}
		})
	}
}

// The default ramp has no fixed ceiling of its own (it was 20 steps of
// 1000, so 20k ops/s): it rises until a step misses the objective, within
// the one-shot command's longest test time.
func TestBurstStepDefaultRamp(t *testing.T) {
	app := kingpin.New("test", "")
	flags := addPlanFlags(app, "", memtierDefaults(), func(planField) bool { return false })
	if _, err := app.Parse(nil); err != nil {
		t.Fatal(err)
	}
	p, err := oneShotPlan(flags, "", "")
	if err != nil {
		t.Fatal(err)
	}
	_, sf := flags.values("", p)
	sp, err := sf.Plan(burst.CLILimits, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Issue 24: a geometric ramp (×2 from 1,000) reaches a million ops/s in
	// ten steps, and the whole search is bounded by 2 minutes.
	if sp.Factor != 2 || sp.MaxTime != 2*time.Minute || sp.Precision != 0.05 {
		t.Fatalf("default search: %+v", sp)
	}
	if n, bound := sp.Steps(time.Second); n < 30 || bound != "time" {
		t.Fatalf("the default search has %d steps (%s)", n, bound)
	}
	if d := sp.Duration(time.Second); d > burst.CLILimits.MaxTestTime {
		t.Fatalf("the default ramp may run %v, beyond %v", d, burst.CLILimits.MaxTestTime)
	}
}

// One run by default, as memtier's --run-count; with --trials a line per
// trial as it ends (stdout is not a terminal here, so no progress bar) and a
// summary across them: median and range of ops/s, p50, p99 and p99.9.
func TestBurstCommandTrials(t *testing.T) {
	srv := redistest.Start(t)
	dir := t.TempDir()
	// The governor's p99 abort is off: one stall of a busy host would
	// abort a trial, and the governor has tests of its own.
	base := []string{"--redis.addr=" + srv.URL(), "--test-time=0.3", "--warmup=0", "--clients=2", "--rate=2000", "--key-maximum=999",
		"--abort-p99=0"}

	code, stdout, stderr := runBurst(t, append(base, "--json-out-file="+filepath.Join(dir, "one.json"))...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	var rep report.Report
	if b, err := os.ReadFile(filepath.Join(dir, "one.json")); err != nil || json.Unmarshal(b, &rep) != nil {
		t.Fatalf("report: %v", err)
	}
	if len(rep.Trials) != 1 || strings.Count(stdout, "ALL STATS") != 1 || strings.Contains(stdout, "ACROSS") {
		t.Fatalf("default run: %d trials in the report, stdout:\n%s", len(rep.Trials), stdout)
	}

	code, stdout, stderr = runBurst(t, append(base, "--trials=3")...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	lineOf := regexp.MustCompile(`(?m)^trial (\d) of 3: completed, [\d,]+ ops/s, p50 [\d.]+ ms, p99 [\d.]+ ms, p99\.9 [\d.]+ ms \((kernel|mixed|user) clock\); client: lag p99 [\d.]+ ms, [\d.]+ CPU`)
	lines := lineOf.FindAllStringSubmatch(stdout, -1)
	if len(lines) != 3 || lines[0][1] != "1" || lines[2][1] != "3" {
		t.Fatalf("want a line per trial, got %q in:\n%s", lines, stdout)
	}
	// Each line comes as its trial ends, before the next trial's table.
	if i, j, k := strings.Index(stdout, "trial 1 of 3:"), strings.Index(stdout, "ALL STATS"), strings.Index(stdout, "trial 2 of 3:"); i < 0 || j < i || k < j {
		t.Fatalf("trial 1's line is not printed before trial 2:\n%s", stdout)
	}
	sum := stdout[strings.Index(stdout, "ACROSS 3 TRIALS")+1:]
	if !strings.Contains(stdout, "ACROSS 3 TRIALS") {
		t.Fatalf("no summary across trials:\n%s", stdout)
	}
	for _, want := range []string{"median", "min", "max", "Ops/sec", "p50 Latency", "p99 Latency", "p99.9 Latency"} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}
}
