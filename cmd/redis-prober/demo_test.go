package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/promtest"
	"github.com/redis-prober/redis-prober/internal/redistest"
)

// demoRun is scripts/demo.sh running against a Redis of the test's, with
// this test's build of the prober.
type demoRun struct {
	stdout []string // up to the "Ctrl-C stops" line
	stderr *syncBuffer
	port   int
}

// runDemo starts the demo script with env added, reads what it prints and
// leaves it running until the test ends (or stop is called).
func runDemo(t *testing.T, env ...string) (*demoRun, func()) {
	t.Helper()
	port := redistest.FreePort(t)
	cmd := exec.Command("bash", "../../scripts/demo.sh")
	cmd.Env = append(os.Environ(), append(env, "PROBER_BIN="+proberBin, "WEB_PORT="+strconv.Itoa(port))...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	d := &demoRun{stderr: &syncBuffer{}, port: port}
	cmd.Stderr = d.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		// The script's trap stops the prober; then the group, in case.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	t.Cleanup(stop)
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("demo.sh ended early:\n%s\nstderr:\n%s", strings.Join(d.stdout, "\n"), d.stderr.String())
			}
			d.stdout = append(d.stdout, l)
			if strings.Contains(l, "Ctrl-C stops") {
				go func() {
					for range lines {
					}
				}()
				return d, stop
			}
		case <-deadline:
			t.Fatalf("demo.sh printed no banner in 30s:\n%s\nstderr:\n%s", strings.Join(d.stdout, "\n"), d.stderr.String())
		}
	}
}

// query is the PromQL line the demo prints below its "PromQL" heading.
func (d *demoRun) query(t *testing.T) string {
	t.Helper()
	for i, l := range d.stdout {
		if strings.Contains(l, "PromQL") && i+1 < len(d.stdout) {
			return strings.TrimSpace(d.stdout[i+1])
		}
	}
	t.Fatalf("no PromQL in the demo's banner:\n%s", strings.Join(d.stdout, "\n"))
	return ""
}

// checkP99Query: a p99 query works on a Prometheus with native histograms
// and on one without (the classic _bucket series, through "or"), and
// leaves burst traffic out.
func checkP99Query(t *testing.T, where, q string) {
	t.Helper()
	for _, want := range []string{
		`rate(redis_prober_latency_seconds{phase="probe"}`,
		" or ",
		`sum by (target, command, le) (rate(redis_prober_latency_seconds_bucket{phase="probe"}`,
	} {
		if !strings.Contains(strings.Join(strings.Fields(q), " "), want) {
			t.Errorf("%s query lacks %q:\n%s", where, want, q)
		}
	}
}

// TestDemoQueryAndBursts is issue 14's demo: its PromQL returned nothing on
// a Prometheus without native histograms and mixed burst traffic into the
// p99, and `REDIS_ADDR=prod make demo` load-tested prod with periodic
// bursts nobody mentioned. Against a user's REDIS_ADDR bursts are off
// unless BURSTS=1; the banner says which; the printed query has both forms
// and the phase filter, and returns data on a Prometheus without native
// histograms when one is installed.
func TestDemoQueryAndBursts(t *testing.T) {
	srv := redistest.Start(t)
	d, stop := runDemo(t, "REDIS_ADDR="+srv.URL())
	banner := strings.Join(d.stdout, "\n")
	if !strings.Contains(banner, "bursts:    off against your REDIS_ADDR (BURSTS=1 make demo turns them on)") {
		t.Errorf("the banner does not say bursts are off:\n%s", banner)
	}
	q := d.query(t)
	checkP99Query(t, "demo", q)

	if _, err := exec.LookPath("prometheus"); err == nil || os.Getenv("CI") == "true" {
		prom := promtest.Start(t, promtest.Config{Targets: []string{fmt.Sprintf("127.0.0.1:%d", d.port)}, ClassicOnly: true})
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		for {
			res, err := prom.Query(ctx, q)
			if err != nil && ctx.Err() == nil {
				t.Fatalf("the demo's query on Prometheus: %v", err)
			}
			if len(res) > 0 {
				if res[0].Metric["command"] == "" || res[0].Histogram {
					t.Errorf("unexpected sample: %+v", res[0])
				}
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("the demo's query returned nothing on a Prometheus without native histograms within 60s:\n%s", q)
			}
			time.Sleep(time.Second)
		}
	} else {
		t.Log("prometheus not installed: the query was not run")
	}
	stop()
	if strings.Contains(d.stderr.String(), "periodic bursts on") {
		t.Errorf("bursts ran against the user's REDIS_ADDR without BURSTS=1:\n%s", d.stderr.String())
	}

	on, stopOn := runDemo(t, "REDIS_ADDR="+srv.URL(), "BURSTS=1")
	stopOn()
	if !strings.Contains(on.stderr.String(), "periodic bursts on") {
		t.Errorf("BURSTS=1: no bursts:\n%s", on.stderr.String())
	}
}

// TestReadmeP99Query: the README's p99 query is the same kind.
func TestReadmeP99Query(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "```promql\n")
	if !ok {
		t.Fatal("README has no promql block")
	}
	block, _, _ := strings.Cut(rest, "```")
	checkP99Query(t, "README", block)
}
