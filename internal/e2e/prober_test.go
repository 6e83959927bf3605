package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/redistest"
)

// repoRoot is the module root, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found at %s: %v", root, err)
	}
	return root
}

// buildProber compiles cmd/redis-prober into a temp dir.
func buildProber(t *testing.T, root string) string {
	t.Helper()
	// go test puts its own GOROOT/bin first on the PATH of the tests.
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command on PATH: %v", err)
	}
	out := filepath.Join(t.TempDir(), "redis-prober")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", out, "./cmd/redis-prober")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/redis-prober: %v\n%s", err, b)
	}
	return out
}

// prober is one running redis-prober process.
type prober struct {
	addr string // host:port of /metrics
	log  string
	// stop stops it (SIGTERM, then SIGKILL after 10 s) and waits; once
	// is enough, the test's end calls it too.
	stop func()
}

// startProber runs `redis-prober run` with args (which name the targets:
// --redis.addr or --config.file) and waits until /-/ready answers. It is stopped (SIGTERM, so it deletes its keys) when the
// test ends.
func startProber(t *testing.T, bin string, args ...string) *prober {
	t.Helper()
	port := redistest.FreePort(t)
	p := &prober{
		addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		log:  filepath.Join(t.TempDir(), "prober.log"),
	}
	logFile, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	argv := append([]string{"run", "--web.listen-address=" + p.addr}, args...)
	cmd := exec.Command(bin, argv...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("start prober: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logFile.Close() }()
	p.stop = sync.OnceFunc(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			b, _ := os.ReadFile(p.log)
			t.Logf("prober log:\n%s", tailBytes(b, 4000))
		}
	})

	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			exited <- err
			b, _ := os.ReadFile(p.log)
			t.Fatalf("prober exited: %v\n%s", err, tailBytes(b, 4000))
		default:
		}
		if code, _ := p.get("/-/ready"); code == http.StatusOK {
			return p
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("prober on %s not ready within 20s", p.addr)
	return nil
}

func (p *prober) get(path string) (int, string) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + p.addr + path)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	return resp.StatusCode, string(b)
}

// waitForMetric polls /metrics until a line starts with name.
func (p *prober) waitForMetric(t *testing.T, name string, within time.Duration) bool {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		_, body := p.get("/metrics")
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(line, name+"{") || strings.HasPrefix(line, name+" ") {
				return true
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return false
}

func tailBytes(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
