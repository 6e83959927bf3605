package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/redistest"
)

// hostileFiles makes the paths a secret or config file must never be: a
// FIFO nobody writes to, /dev/zero and a directory.
func hostileFiles(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	mkfifo(t, fifo)
	sub := filepath.Join(dir, "a-directory")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	return map[string]string{"fifo": fifo, "dev zero": "/dev/zero", "directory": sub}
}

// runSplit runs the binary with a deadline and returns its exit code and
// stderr; a run still going at the deadline fails the test.
func runSplit(t *testing.T, limit time.Duration, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, proberBin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%v still running after %v (a file read blocked or grew without bound)", args, limit)
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

func TestHostileSecretAndConfigFilesExit2(t *testing.T) {
	for kind, path := range hostileFiles(t) {
		cfgDir := t.TempDir()
		config := func(name, text string) string {
			p := filepath.Join(cfgDir, name+".yml")
			writeConfig(t, p, text)
			return p
		}
		for _, tc := range []struct {
			name string
			args []string
		}{
			{"--redis.password-file", []string{"--redis.password-file=" + path}},
			{"--redis.password-file --config.check", []string{"--redis.password-file=" + path, "--config.check"}},
			{"doctor --redis.password-file", []string{"doctor", "--redis.password-file=" + path, "--measure.duration=0s"}},
			{"burst --redis.password-file", []string{"burst", "--redis.password-file=" + path, "--test-time=1"}},
			{"--config.file", []string{"--config.file=" + path, "--config.check"}},
			{"password_file", []string{"--config.check", "--config.file=" + config("pw",
				"targets:\n  - {name: a, addr: 127.0.0.1:1, password_file: "+path+"}\n")}},
			{"sentinel password_file", []string{"--config.check", "--config.file=" + config("sentinel",
				"targets:\n  - name: a\n    sentinel: {master_name: m, addrs: [127.0.0.1:1], password_file: "+path+"}\n")}},
			{"tls ca_file", []string{"--config.check", "--config.file=" + config("ca",
				"targets:\n  - {name: a, addr: rediss://127.0.0.1:1, tls: {ca_file: "+path+"}}\n")}},
			{"tls cert_file", []string{"--config.check", "--config.file=" + config("cert",
				"targets:\n  - {name: a, addr: rediss://127.0.0.1:1, tls: {cert_file: "+path+", key_file: "+path+"}}\n")}},
		} {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				code, stderr := runSplit(t, 30*time.Second, tc.args...)
				if code != 2 {
					t.Fatalf("exit code %d, want 2 (stderr %q)", code, stderr)
				}
				out := strings.TrimSpace(stderr)
				if strings.Count(out, "\n") != 0 || !strings.Contains(out, path) {
					t.Errorf("stderr %q: want one line naming %s", out, path)
				}
			})
		}
	}
}

func TestOversizedPasswordFileRefusedWithoutItsContent(t *testing.T) {
	p := filepath.Join(t.TempDir(), "pw")
	writeConfig(t, p, "Canary-s3cret"+strings.Repeat("x", 64<<10))
	code, stderr := runSplit(t, 30*time.Second, "--redis.password-file="+p, "--config.check")
	if code != 2 || !strings.Contains(stderr, p) || !strings.Contains(stderr, "4096 bytes") {
		t.Fatalf("exit %d, stderr %q: want 2 and a line naming the file and the bound", code, stderr)
	}
	if strings.Contains(stderr, "Canary") {
		t.Errorf("stderr shows the file's content: %q", stderr)
	}
}

// postReload returns the status and body of POST /-/reload.
func postReload(t *testing.T, p *runningProber) (int, string) {
	t.Helper()
	resp, err := http.Post(p.url+"/-/reload", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestReloadEndpointNeedsEnableLifecycle(t *testing.T) {
	srv := redistest.Start(t)
	cfgPath := filepath.Join(t.TempDir(), "prober.yml")
	writeConfig(t, cfgPath, fmt.Sprintf("targets:\n  - {name: a, addr: %s}\n", srv.URL()))

	off := startProber(t, nil, "--config.file="+cfgPath, "--probe.connect-interval=0s")
	if code, body := postReload(t, off); code != http.StatusForbidden || len(body) > 100 {
		t.Errorf("without --web.enable-lifecycle: status %d body %q, want 403 and a short body", code, body)
	}
	// SIGHUP works either way: a broken file shows in the gauge.
	writeConfig(t, cfgPath, "targets:\n  - name: a\n    adr: typo\n")
	if err := off.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	off.waitMetric(t, "SIGHUP reload failed", func(m string) bool {
		v, ok := value(m, "redis_prober_config_last_reload_successful")
		return ok && v == 0
	})
	off.stopWithin5s(t)

	writeConfig(t, cfgPath, fmt.Sprintf("targets:\n  - {name: a, addr: %s}\n", srv.URL()))
	on := startProber(t, nil, "--config.file="+cfgPath, "--probe.connect-interval=0s", "--web.enable-lifecycle")
	if code, body := postReload(t, on); code != http.StatusOK {
		t.Errorf("with --web.enable-lifecycle: status %d body %q, want 200", code, body)
	}
	// A failed reload tells the caller little: no path, no YAML.
	writeConfig(t, cfgPath, "targets:\n  - name: a\n    adr: typo\n")
	code, body := postReload(t, on)
	if code != http.StatusInternalServerError || strings.Contains(body, cfgPath) || strings.Contains(body, "adr") ||
		strings.TrimSpace(body) != "reload failed, see the prober's log" {
		t.Errorf("failed reload: status %d body %q, want 500 and the short line", code, body)
	}
	if !on.waitLogLine(t, "reload failed", "adr") {
		t.Errorf("the log does not say why the reload failed: %s", on.stderr)
	}
	on.stopWithin5s(t)
}

func TestReloadToHostileSecretFileFailsAndKeepsServing(t *testing.T) {
	srv := redistest.Start(t)
	good := filepath.Join(t.TempDir(), "pw")
	writeConfig(t, good, "\n")
	cfgPath := filepath.Join(t.TempDir(), "prober.yml")
	target := func(pw string) string {
		return fmt.Sprintf("targets:\n  - {name: a, addr: %s, password_file: %s}\n", srv.URL(), pw)
	}
	writeConfig(t, cfgPath, target(good))
	p := startProber(t, nil, "--config.file="+cfgPath, "--probe.connect-interval=0s", "--web.enable-lifecycle")
	p.waitMetric(t, "a up", func(m string) bool { v, _ := value(m, upSeries("a")); return v == 1 })
	for kind, path := range hostileFiles(t) {
		t.Run(kind, func(t *testing.T) {
			writeConfig(t, cfgPath, target(path))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.url+"/-/reload", nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("reload naming %s: %v", path, err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusInternalServerError {
				t.Errorf("reload naming %s: status %d, want 500", path, resp.StatusCode)
			}
			_, m := p.get(t, "/metrics")
			if v, _ := value(m, "redis_prober_config_last_reload_successful"); v != 0 {
				t.Errorf("config_last_reload_successful = %v, want 0", v)
			}
			ok, _ := value(m, okSeries("a", "ping"))
			p.waitMetric(t, "a still probed", func(m string) bool { v, _ := value(m, okSeries("a", "ping")); return v > ok })
			// SIGHUP to the same file: no hang either.
			if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(p.stderr.String(), path) {
				t.Errorf("the log does not name %s", path)
			}
		})
	}
	p.stopWithin5s(t)
}
