package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/redistest"
)

// value finds one sample in a text exposition; series is the name with its
// labels exactly as exposed.
func value(metrics, series string) (float64, bool) {
	for _, line := range strings.Split(metrics, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.Fields(rest)[0], 64)
			return v, err == nil
		}
	}
	return 0, false
}

func upSeries(target string) string {
	return `redis_prober_up{node="",target="` + target + `"}`
}

func okSeries(target, cmd string) string {
	return `redis_prober_requests_total{command="` + cmd + `",node="",phase="probe",result="ok",target="` + target + `"}`
}

// waitMetric polls /metrics until cond holds for the exposition.
func (p *runningProber) waitMetric(t *testing.T, what string, cond func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, m := p.get(t, "/metrics")
		if cond(m) {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; stderr:\n%s", what, p.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func writeConfig(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestConfigReloadAddsRemovesAndSurvivesBadFiles(t *testing.T) {
	a, b := redistest.Start(t), redistest.Start(t)
	cfgPath := filepath.Join(t.TempDir(), "prober.yml")
	writeConfig(t, cfgPath, fmt.Sprintf("global:\n  probe: {rate: 50}\ntargets:\n  - name: a\n    addr: %s\n    labels: {team: payments}\n", a.URL()))
	p := startProber(t, nil, "--config.file="+cfgPath, "--probe.connect-interval=0s", "--web.enable-lifecycle")
	m := p.waitMetric(t, "a up", func(m string) bool { v, _ := value(m, upSeries("a")); return v == 1 })
	if _, ok := value(m, `redis_prober_target_info{kind="server",target="a",team="payments"}`); !ok {
		t.Errorf("no target_info with the configured label")
	}

	// Add b by SIGHUP; a keeps its counters.
	writeConfig(t, cfgPath, fmt.Sprintf("global:\n  probe: {rate: 50}\ntargets:\n  - name: a\n    addr: %s\n    labels: {team: payments}\n  - name: b\n    addr: %s\n", a.URL(), b.URL()))
	_, before := p.get(t, "/metrics")
	okBefore, _ := value(before, okSeries("a", "ping"))
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	m = p.waitMetric(t, "b up", func(m string) bool { v, _ := value(m, upSeries("b")); return v == 1 })
	if okAfter, _ := value(m, okSeries("a", "ping")); okAfter < okBefore {
		t.Errorf("unchanged target a restarted by reload: ping ok %v -> %v", okBefore, okAfter)
	}

	// A broken file: 500, gauge 0, both targets keep running.
	writeConfig(t, cfgPath, "targets:\n  - name: a\n    adr: typo\n")
	resp, err := http.Post(p.url+"/-/reload", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("reload of a broken file: status %d, want 500", resp.StatusCode)
	}
	_, m = p.get(t, "/metrics")
	if v, _ := value(m, "redis_prober_config_last_reload_successful"); v != 0 {
		t.Errorf("config_last_reload_successful = %v after a bad file, want 0", v)
	}
	okB, _ := value(m, okSeries("b", "ping"))
	p.waitMetric(t, "b still probed", func(m string) bool { v, _ := value(m, okSeries("b", "ping")); return v > okB })

	// Remove a: its series and keys go.
	writeConfig(t, cfgPath, fmt.Sprintf("targets:\n  - name: b\n    addr: %s\n", b.URL()))
	resp, err = http.Post(p.url+"/-/reload", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("reload: status %d", resp.StatusCode)
	}
	m = p.waitMetric(t, "a gone", func(m string) bool { _, ok := value(m, upSeries("a")); return !ok })
	if v, _ := value(m, "redis_prober_config_last_reload_successful"); v != 1 {
		t.Errorf("config_last_reload_successful = %v, want 1", v)
	}
	if keys := a.Keys(context.Background(), "redis-prober:*"); len(keys) != 0 {
		t.Errorf("removed target kept probe keys: %v", keys)
	}
	if _, err := p.stop(t); err != nil {
		t.Errorf("exit: %v", err)
	}
	if keys := b.Keys(context.Background(), "redis-prober:*"); len(keys) != 0 {
		t.Errorf("probe keys left on b: %v", keys)
	}
}

func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.yml"), filepath.Join(dir, "bad.yml")
	writeConfig(t, good, "targets:\n  - {name: a, addr: 127.0.0.1:6379}\n  - {name: b, addr: 127.0.0.1:6380}\n")
	writeConfig(t, bad, "targets:\n  - name: a\n    addr: 127.0.0.1:6379\n    probe:\n      rate: -1\n")
	var stdout, stderr bytes.Buffer
	if code := realMain([]string{"--config.file=" + good, "--config.check"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "2 targets") {
		t.Errorf("good config: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	stderr.Reset()
	code := realMain([]string{"--config.file=" + bad, "--config.check"}, &stdout, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "targets[0].probe.rate (line 5)") || strings.Count(strings.TrimSpace(stderr.String()), "\n") != 0 {
		t.Errorf("bad config: exit %d, stderr %q; want 2 and one line naming targets[0].probe.rate (line 5)", code, stderr.String())
	}
	code = realMain([]string{"--config.file=" + good, "--redis.addr=127.0.0.1:1", "--config.check"}, &stdout, &stderr)
	if code != 2 {
		t.Errorf("--redis.addr with --config.file: exit %d, want 2", code)
	}
}

func TestTLSTargetAndWrongCA(t *testing.T) {
	certs := redistest.NewCerts(t)
	other := redistest.NewCerts(t)
	srv := redistest.StartTLS(t, certs)
	cfgPath := filepath.Join(t.TempDir(), "prober.yml")
	writeConfig(t, cfgPath, fmt.Sprintf(`targets:
  - name: good
    addr: rediss://%s
    tls: {ca_file: %s}
  - name: wrong-ca
    addr: rediss://%s
    tls: {ca_file: %s}
`, srv.Addr(), certs.CAFile, srv.Addr(), other.CAFile))
	p := startProber(t, nil, "--config.file="+cfgPath, "--probe.rate=20", "--probe.connect-interval=200ms")
	m := p.waitMetric(t, "TLS target up and the wrong-CA target failing", func(m string) bool {
		v, _ := value(m, upSeries("good"))
		c, _ := value(m, `redis_prober_connects_total{node="",result="ok",target="good"}`)
		bad, _ := value(m, `redis_prober_requests_total{command="ping",node="",phase="probe",result="error",target="wrong-ca"}`)
		return v == 1 && c > 0 && bad > 0
	})
	if v, ok := value(m, upSeries("wrong-ca")); !ok || v != 0 {
		t.Errorf("target with the wrong CA: up %v (present %v), want 0", v, ok)
	}
	p.waitMetric(t, "a clear TLS error in the log", func(string) bool {
		return strings.Contains(p.stderr.String(), "certificate signed by unknown authority")
	})
}

// The least-privilege ACL of docs/security.md is enough for the probe.
func TestLeastPrivilegeACLUser(t *testing.T) {
	const pw = "acl-Secret-42"
	srv := redistest.Start(t, "user prober on >"+pw+" "+probeACL)
	user := srv.Client()
	if err := user.Set(context.Background(), "user:key", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	p := startProber(t, []string{"REDIS_PASSWORD=" + pw}, "--redis.addr="+srv.URL(), "--redis.user=prober",
		"--probe.rate=100", "--probe.commands=ping,get,set,incr,hset,hgetall,lpush,lrange,zadd,zrevrange,eval,mget",
		"--probe.connect-interval=200ms")
	m := p.waitMetric(t, "every command ok", func(m string) bool {
		for _, c := range []string{"ping", "get", "set", "incr", "hset", "hgetall", "lpush", "lrange", "zadd", "zrevrange", "eval", "mget"} {
			if v, _ := value(m, okSeries(srv.Addr(), c)); v == 0 {
				return false
			}
		}
		return true
	})
	for _, line := range strings.Split(m, "\n") {
		if strings.HasPrefix(line, "redis_prober_requests_total{") && strings.Contains(line, `result="error"`) && !strings.HasSuffix(line, " 0") {
			t.Errorf("errors under the least-privilege user: %s", line)
		}
	}
	if _, err := p.stop(t); err != nil {
		t.Errorf("exit: %v", err)
	}
	if keys := srv.Keys(context.Background(), "redis-prober:*"); len(keys) != 0 {
		t.Errorf("probe keys left: %v", keys)
	}
	if strings.Contains(p.stderr.String(), pw) {
		t.Error("the password reached the log")
	}
}

// probeACL is the rule set docs/security.md gives for probe-only use.
const probeACL = "resetkeys ~redis-prober:* resetchannels -@all +ping +get +set +incr +hset +hgetall +lpush +lrange +zadd +zrevrange +eval +mget +rpush +del +unlink +pexpire +scan +info +readonly +hello +auth +select"
