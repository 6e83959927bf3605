package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis-prober/redis-prober/internal/redistest"
)

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// run's periodic bursts take the plan --burst.plan names from the config
// file: its rate (300, not the default 2000) is the one the bursts run at.
func TestPeriodicBurstsUseTheFilePlan(t *testing.T) {
	srv := redistest.Start(t)
	cfg := writeFile(t, "prober.yml", `targets:
  - {name: cache, addr: "`+srv.URL()+`"}
burst_plans:
  quick:
    clients: 2
    rate: 300
    test_time: 1s
    warmup: 0s
    keys: {maximum: 99}
    bounds: {abort_p99: 0s, max_bytes: 1MiB}
`)
	p := startProber(t, nil, "--config.file="+cfg, "--burst.plan=quick", "--burst.interval=3s")
	m := p.waitMetric(t, "a completed burst of the plan quick", func(m string) bool {
		return sum(m, "redis_prober_burst_runs_total", `plan="quick"`, `outcome="completed"`, `target="cache"`) >= 1
	})
	if ops := sum(m, "redis_prober_burst_last_ops_per_second", `plan="quick"`, `target="cache"`); ops < 200 || ops > 400 {
		t.Errorf("the burst ran at %v ops/s, want the plan's 300:\n%s", ops, grepLines(m, "burst_last"))
	}
	log := p.stderr.String()
	if !strings.Contains(log, "periodic bursts on: 300 ops/s for 1s every 3s") {
		t.Errorf("the start-up warning does not describe the plan:\n%s", grepLines(log, "periodic bursts"))
	}
	if strings.Contains(log, "deprecated flag") {
		t.Errorf("a deprecation warning without a deprecated flag:\n%s", grepLines(log, "deprecated"))
	}
}

// burst --plan takes a plan of a file of plans alone; the flags given win
// over its fields.
func TestBurstCommandTakesAPlan(t *testing.T) {
	srv := redistest.Start(t)
	plans := writeFile(t, "plans.yml", `burst_plans:
  small:
    clients: 3
    rate: 500
    test_time: 1s
    warmup: 0s
    ratio: "1:1"
    keys: {maximum: 99}
    bounds: {abort_p99: 0s}
`)
	for _, tc := range []struct {
		name    string
		extra   []string
		clients int
	}{
		{"plan", nil, 3},
		{"plan and a flag", []string{"--clients=2"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "burst.json")
			args := append([]string{"--redis.addr=" + srv.URL(), "--config.file=" + plans, "--plan=small", "--json-out-file=" + out}, tc.extra...)
			code, stdout, stderr := runBurst(t, args...)
			if code != 0 {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			rep, err := readReport(out)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Plan.Name != "small" {
				t.Errorf("report names plan %q, want the one given, small", rep.Plan.Name)
			}
			if rep.Plan.Clients != tc.clients || rep.Plan.Rate != 500 {
				t.Errorf("plan clients %d rate %v, want %d and the plan's 500", rep.Plan.Clients, rep.Plan.Rate, tc.clients)
			}
		})
	}
}

// A plan that does not fit where it is used exits 2 with one line naming
// its field; so does a plan that does not exist.
func TestBadPlansExit2(t *testing.T) {
	target := "targets:\n  - {name: cache, addr: 127.0.0.1:1}\n"
	big := writeFile(t, "big.yml", target+"burst_plans:\n  big: {clients: 100}\n  huge: {clients: 2000}\n")
	typo := writeFile(t, "typo.yml", target+"burst_plans:\n  big: {clinets: 100}\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		// 100 clients suit the one-shot command, not run's bounds.
		{[]string{"run", "--web.listen-address=127.0.0.1:0", "--config.file=" + big, "--burst.plan=big"},
			"burst_plans.big.clients: 100 must be from 1 to 64"},
		{[]string{"run", "--config.file=" + big, "--config.check"}, "burst_plans.huge.clients: 2000 must be from 1 to 1000"},
		{[]string{"run", "--web.listen-address=127.0.0.1:0", "--config.file=" + big, "--burst.plan=nope"}, `--burst.plan: no burst plan "nope" (plans: big, default, huge`},
		{[]string{"run", "--web.listen-address=127.0.0.1:0", "--config.file=" + typo}, `burst_plans.big: unknown field "clinets" (did you mean clients?)`},
		{[]string{"run", "--web.listen-address=127.0.0.1:0", "--burst.plan=big"}, `--burst.plan: no burst plan "big" (plans: default;`},
		{[]string{"burst", "--config.file=" + big, "--plan=huge"}, "burst_plans.huge.clients: 2000 must be from 1 to 1000"},
		{[]string{"burst", "--config.file=" + big, "--plan=huge", "--clients=2000"}, "--clients: 2000 must be from 1 to 1000"},
		{[]string{"burst", "--config.file=" + big}, "--config.file: give --plan=NAME"},
		{[]string{"burst", "--plan=big"}, `--plan: no burst plan "big"`},
		{[]string{"burst", "--max-bytes=16MB"}, `--max-bytes: "16MB": unit "MB"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := realMain(tc.args, &stdout, &stderr)
			out := strings.TrimSpace(stderr.String())
			if code != 2 || strings.Contains(out, "\n") || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and one line with %q", code, out, tc.want)
			}
		})
	}
}
