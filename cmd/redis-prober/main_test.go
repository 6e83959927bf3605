package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/faultlog"
	"github.com/redis-prober/redis-prober/internal/redistest"
)

// proberBin is built once for the tests that run the real binary.
var proberBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "redis-prober-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	proberBin = filepath.Join(dir, "redis-prober")
	build := exec.Command("go", "build", "-race", "-o", proberBin, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestBadFlagsExit2WithOneLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--probe.rate=abc"}, "--probe.rate"},
		{[]string{"--probe.rate=0"}, "--probe.rate"},
		{[]string{"--probe.timeout=fast"}, "--probe.timeout"},
		{[]string{"--probe.commands=ping,flushall"}, "--probe.commands"},
		{[]string{"--probe.key-prefix="}, "--probe.key-prefix"},
		{[]string{"--probe.key-prefix=nosep"}, "--probe.key-prefix"},
		{[]string{"--probe.connections=0"}, "--probe.connections"},
		{[]string{"--redis.addr=http://x:1"}, "--redis.addr"},
		{[]string{"--redis.addr=redis://:s3cret@x:1"}, "--redis.addr"},
		{[]string{"--redis.password-file=/nonexistent/file"}, "--redis.password-file"},
		{[]string{"--redis.addr=a:1", "--redis.addr=a:1"}, "given twice"},
		{[]string{"--web.telemetry-path=metrics"}, "--web.telemetry-path"},
		{[]string{"--no-such-flag"}, "no-such-flag"},
		{[]string{"--web.listen-address=127.0.0.1:99999"}, "--web.listen-address"},
		{[]string{"--web.listen-address=127.0.0.1"}, "--web.listen-address"},
		{[]string{"--web.listen-address=:9379", "--web.listen-address=:-1"}, "--web.listen-address"},
		{[]string{"--web.config.file=/nonexistent/web.yml"}, "--web.config.file"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := realMain(tc.args, &stdout, &stderr)
			if code != 2 {
				t.Fatalf("exit code %d, want 2 (stderr %q)", code, stderr.String())
			}
			out := strings.TrimSpace(stderr.String())
			if strings.Count(out, "\n") != 0 || !strings.Contains(out, tc.want) {
				t.Errorf("stderr %q: want one line naming %q", out, tc.want)
			}
			if strings.Contains(out, "s3cret") {
				t.Errorf("stderr leaks the password: %q", out)
			}
		})
	}
}

func TestVersionAndHelpExit0(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"--help"}} {
		var stdout, stderr bytes.Buffer
		if code := realMain(args, &stdout, &stderr); code != 0 {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr.String())
		}
	}
}

// runningProber is the real binary against a real redis-server.
type runningProber struct {
	cmd    *exec.Cmd
	url    string
	stderr *syncBuffer
	done   chan error
}

// syncBuffer is a bytes.Buffer the child process writes while tests read.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func startProber(t *testing.T, env []string, args ...string) *runningProber {
	t.Helper()
	port := redistest.FreePort(t)
	args = append([]string{fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port), "--log.level=debug"}, args...)
	cmd := exec.Command(proberBin, args...)
	cmd.Env = append(os.Environ(), env...)
	p := launchProber(t, cmd, fmt.Sprintf("http://127.0.0.1:%d", port))
	waitReady(t, p, func() bool { code, _ := p.get(t, "/-/ready"); return code == 200 })
	return p
}

// launchProber starts cmd, capturing its stderr, and kills it at test end.
func launchProber(t *testing.T, cmd *exec.Cmd, url string) *runningProber {
	t.Helper()
	p := &runningProber{cmd: cmd, url: url, stderr: &syncBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	return p
}

// waitReady polls ready for up to 10 s.
func waitReady(t *testing.T, p *runningProber, ready func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ready() {
		if time.Now().After(deadline) {
			t.Fatalf("prober not ready within 10s; stderr: %s", p.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *runningProber) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(p.url + path)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// stop sends SIGTERM and returns the exit error and how long the exit took.
func (p *runningProber) stop(t *testing.T) (time.Duration, error) {
	t.Helper()
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		p.done <- err
		return time.Since(start), err
	case <-time.After(10 * time.Second):
		t.Fatalf("prober still running 10s after SIGTERM; stderr: %s", p.stderr)
	}
	return 0, nil
}

func TestRunEndToEnd(t *testing.T) {
	const secret = "s3cret-Pa55-never-shown"
	srv := redistest.Start(t, "requirepass "+secret)
	ctx := context.Background()
	p := startProber(t, []string{"REDIS_PASSWORD=" + secret}, "--redis.addr="+srv.URL(),
		"--probe.rate=50", "--probe.commands=ping,get,set,hgetall,eval", "--probe.connect-interval=200ms")

	var metrics string
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, metrics = p.get(t, "/metrics")
		if strings.Contains(metrics, `redis_prober_up{node="",target="`+srv.Addr()+`"} 1`) &&
			strings.Contains(metrics, "redis_prober_connect_latency_seconds_count") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no up=1 within 10s; metrics:\n%s\nstderr: %s", metrics, p.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, want := range []string{
		`redis_prober_latency_seconds_bucket{command="hgetall",node="",phase="probe",target="` + srv.Addr() + `",le="0.0001"}`,
		`redis_prober_requests_total{command="eval",node="",phase="probe",result="ok",target="` + srv.Addr() + `"}`,
		`redis_prober_objective_seconds{target="` + srv.Addr() + `"} 0.005`,
		"redis_prober_build_info{",
		"redis_prober_intrinsic_latency_seconds_count",
		"process_resident_memory_bytes",
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if promtool, err := exec.LookPath("promtool"); err == nil {
		check := exec.Command(promtool, "check", "metrics")
		check.Stdin = strings.NewReader(metrics)
		if out, err := check.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics: %v\n%s", err, out)
		}
	} else if os.Getenv("CI") == "true" {
		t.Error("promtool not installed under CI")
	}
	for _, path := range []string{"/", "/-/healthy"} {
		code, body := p.get(t, path)
		if code != 200 {
			t.Errorf("%s: status %d", path, code)
		}
		if strings.Contains(body, secret) {
			t.Errorf("%s shows the password", path)
		}
	}

	took, err := p.stop(t)
	if err != nil {
		t.Errorf("exit after SIGTERM: %v; stderr: %s", err, p.stderr)
	}
	t.Logf("stopped %v after SIGTERM", took)
	keys := redistest.ClientWithPassword(srv, secret).Keys(ctx, "redis-prober:*").Val()
	if len(keys) != 0 {
		t.Errorf("probe keys left after SIGTERM: %v", keys)
	}
	for what, text := range map[string]string{"/metrics": metrics, "logs": p.stderr.String()} {
		if strings.Contains(text, secret) {
			t.Errorf("%s contain the password", what)
		}
	}
}

// Redis down at start: the prober runs, says up=0 with one log line, and
// picks Redis up when it appears.
func TestRunRedisDownAtStart(t *testing.T) {
	srv := redistest.Start(t)
	srv.Kill()
	p := startProber(t, nil, "--redis.addr="+srv.URL(), "--probe.rate=50", "--probe.connect-interval=0s")
	time.Sleep(time.Second)
	if _, m := p.get(t, "/metrics"); !strings.Contains(m, `redis_prober_up{node="",target="`+srv.Addr()+`"} 0`) {
		t.Fatalf("up is not 0 with Redis down:\n%s", m)
	}
	srv.Restart()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, m := p.get(t, "/metrics"); strings.Contains(m, `redis_prober_up{node="",target="`+srv.Addr()+`"} 1`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("up never became 1 after Redis started; stderr: %s", p.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The node's spell is over once it has answered for a grace
	// (faultlog.Grace), and its line waits a window for others.
	deadline = time.Now().Add(faultlog.Grace + faultlog.Window + 5*time.Second)
	for !strings.Contains(p.stderr.String(), `msg="redis recovered"`) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := p.stop(t); err != nil {
		t.Errorf("exit: %v", err)
	}
	// About 50 failed probes, logged once (plus the recovery line).
	if n := strings.Count(p.stderr.String(), `msg="redis down"`); n != 1 {
		t.Errorf("%d 'redis down' log lines for one outage; want 1\n%s", n, p.stderr)
	}
	if n := strings.Count(p.stderr.String(), "probe failing"); n != 0 {
		t.Errorf("%d 'probe failing' lines for an outage: it is the node's spell\n%s", n, p.stderr)
	}
	if !strings.Contains(p.stderr.String(), `msg="redis recovered"`) {
		t.Errorf("no recovery line logged:\n%s", p.stderr)
	}
}
