package main

// Exporter security end to end: TLS and bcrypt basic auth on the web side,
// secrets that never leave the password file, the least-privilege ACL lines
// of docs/security.md.

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/redis-prober/redis-prober/engine"
	"github.com/redis-prober/redis-prober/internal/redistest"
)

// burstACL adds what periodic bursts need to probeACL: they name their
// connections.
const burstACL = probeACL + " +client|setname"

// collectorACL adds what the Redis-side collectors, change detection and
// slow-request attribution read: INFO (already in probeACL), LATENCY LATEST
// / HISTOGRAM / HISTORY, CONFIG GET and SLOWLOG GET.
const collectorACL = burstACL + " +latency|latest +latency|histogram +config|get +latency|history +slowlog|get"

// startProberHTTPS runs the binary behind --web.config.file and waits until
// client gets 200 from /-/ready over HTTPS with basic auth.
func startProberHTTPS(t *testing.T, webConfig string, client *http.Client, user, pass string, args ...string) *runningProber {
	t.Helper()
	port := redistest.FreePort(t)
	args = append([]string{fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port), "--web.config.file=" + webConfig}, args...)
	cmd := exec.Command(proberBin, args...)
	p := launchProber(t, cmd, fmt.Sprintf("https://127.0.0.1:%d", port))
	waitReady(t, p, func() bool { code, _ := authGet(client, p.url+"/-/ready", user, pass); return code == 200 })
	return p
}

// authGet GETs url with basic auth (none when user is empty); code 0 means
// the request failed.
func authGet(client *http.Client, url, user, pass string) (int, string) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestWebConfigTLSAndBasicAuth(t *testing.T) {
	const user, pass = "prometheus", "scrape-Pa55-9f3e"
	certs := redistest.NewCerts(t)
	hash, err := bcrypt.GenerateFromPassword([]byte(pass), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	webConfig := filepath.Join(t.TempDir(), "web.yml")
	writeConfig(t, webConfig, fmt.Sprintf("tls_server_config:\n  cert_file: %s\n  key_file: %s\n  min_version: TLS12\nbasic_auth_users:\n  %s: %s\n",
		certs.CertFile, certs.KeyFile, user, hash))
	trusting := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: certs.ClientConfig(t)}}
	defer trusting.CloseIdleConnections()
	srv := redistest.Start(t)
	p := startProberHTTPS(t, webConfig, trusting, user, pass, "--redis.addr="+srv.URL(), "--probe.rate=20")

	for _, tc := range []struct {
		name, user, pass string
		want             int
	}{
		{"no credentials", "", "", http.StatusUnauthorized},
		{"wrong password", user, "not-the-password", http.StatusUnauthorized},
		{"wrong user", "someone", pass, http.StatusUnauthorized},
		{"right credentials", user, pass, http.StatusOK},
	} {
		code, body := authGet(trusting, p.url+"/metrics", tc.user, tc.pass)
		if code != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, code, tc.want)
		}
		// build_info is there from the start; the target's series come
		// once its first check has read the server, maybe after ready.
		if tc.want == http.StatusOK && !strings.Contains(body, "redis_prober_build_info{") {
			t.Errorf("%s: no metrics in the body", tc.name)
		}
		if tc.want != http.StatusOK && strings.Contains(body, "redis_prober_") {
			t.Errorf("%s: metrics served without valid credentials", tc.name)
		}
	}
	// Plain HTTP, and TLS without trusting the CA, get no metrics either.
	if code, body := authGet(&http.Client{Timeout: 5 * time.Second}, strings.Replace(p.url, "https", "http", 1)+"/metrics", user, pass); code == 200 || strings.Contains(body, "redis_prober_up") {
		t.Errorf("plain HTTP: status %d", code)
	}
	untrusting := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12}}}
	if code, _ := authGet(untrusting, p.url+"/metrics", user, pass); code != 0 {
		t.Errorf("a client that does not trust the CA got status %d", code)
	}
	if strings.Contains(p.stderr.String(), pass) || strings.Contains(p.stderr.String(), string(hash)) {
		t.Error("the log shows the scrape password or its hash")
	}
	p.stopWithin5s(t)
}

// A known secret is grepped for in every place it could leak: argv, the
// environment is not used, logs (with failures that quote Redis errors),
// /metrics, the landing and health pages, the reload reply, and the output
// of the one-shot commands that fail against a server refusing it.
func TestSecretNeverShown(t *testing.T) {
	const secret = "Leak-Canary-7c1d-s3cret"
	right := redistest.Start(t, "requirepass "+secret)
	wrong := redistest.Start(t, "requirepass something-else")
	pwFile := filepath.Join(t.TempDir(), "pw")
	writeConfig(t, pwFile, secret+"\n")
	p := startProber(t, nil, "--redis.addr="+right.URL(), "--redis.addr="+wrong.URL(), "--redis.password-file="+pwFile,
		"--web.enable-lifecycle", "--probe.rate=50", "--probe.connect-interval=200ms", "--collector.refresh-interval=200ms")
	m := p.waitMetric(t, "one target up, the other refusing the password", func(m string) bool {
		u, _ := value(m, upSeries(right.Addr()))
		return u == 1 && probeResults(m, wrong.Addr(), "error") > 10
	})
	places := map[string]string{"/metrics": m}
	for _, path := range []string{"/", "/-/healthy", "/-/ready", "/metrics?debug=1"} {
		_, places[path] = p.get(t, path)
	}
	if resp, err := http.Post(p.url+"/-/reload", "text/plain", nil); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		places["POST /-/reload"] = string(b)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	places["argv"] = string(cmdline)
	for name, args := range map[string][]string{
		"burst":  {"burst", "--redis.addr=" + wrong.URL(), "--redis.password-file=" + pwFile, "--test-time=1", "--warmup=0s"},
		"doctor": {"doctor", "--redis.addr=" + wrong.URL(), "--redis.password-file=" + pwFile, "--measure.duration=200ms"},
	} {
		code, out := runBinary(t, 20*time.Second, args...)
		places[name+" output"] = out
		if code == 0 && name == "burst" {
			t.Errorf("burst against a server refusing the password exited 0")
		}
	}
	p.stopWithin5s(t)
	places["logs"] = p.stderr.String()
	if !strings.Contains(places["logs"], "WRONGPASS") {
		t.Errorf("the log never says the password was refused; the grep below would prove little")
	}
	for where, text := range places {
		if strings.Contains(text, secret) {
			t.Errorf("%s shows the secret", where)
		}
	}
}

// engine.ReadPassword warns when a password file is readable by other users, once,
// naming the file and not the secret.
func TestPasswordFileReadableByOthersWarns(t *testing.T) {
	const secret = "Mode-Check-s3cret"
	for _, tc := range []struct {
		mode os.FileMode
		warn bool
	}{
		{0o600, false},
		{0o640, false},
		{0o644, true},
		{0o604, true},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "pw")
			writeConfig(t, file, secret+"\n")
			if err := os.Chmod(file, tc.mode); err != nil {
				t.Fatal(err)
			}
			var logBuf bytes.Buffer
			pw, err := engine.ReadPassword(file, slog.New(slog.NewTextHandler(&logBuf, nil)))
			if err != nil || pw != secret {
				t.Fatalf("readPassword = %q, %v", pw, err)
			}
			if got := strings.Contains(logBuf.String(), "readable by other users"); got != tc.warn {
				t.Errorf("mode %v: warning %v, want %v; log %q", tc.mode, got, tc.warn, logBuf.String())
			}
			if strings.Contains(logBuf.String(), secret) {
				t.Error("the warning shows the secret")
			}
		})
	}

	// End to end: the running binary says it once at start.
	srv := redistest.Start(t, "requirepass "+secret)
	file := filepath.Join(t.TempDir(), "pw")
	writeConfig(t, file, secret+"\n")
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	p := startProber(t, nil, "--redis.addr="+srv.URL(), "--redis.password-file="+file, "--probe.rate=20")
	p.waitMetric(t, "up", func(m string) bool { v, _ := value(m, upSeries(srv.Addr())); return v == 1 })
	p.stopWithin5s(t)
	if n := p.logLines("readable by other users"); n != 1 {
		t.Errorf("%d warnings about the password file's mode, want 1:\n%s", n, p.stderr)
	}
}

// The fuller ACL lines of docs/security.md are enough for bursts and for the
// collectors: no request fails, a burst completes, every Redis-side
// collector succeeds. The doc carries each line verbatim.
func TestLeastPrivilegeACLWithBurstsAndCollectors(t *testing.T) {
	doc, err := os.ReadFile("../../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	for name, acl := range map[string]string{"probe": probeACL, "burst": burstACL, "collector": collectorACL} {
		if !strings.Contains(string(doc), acl) {
			t.Errorf("docs/security.md lacks the %s ACL line %q", name, acl)
		}
	}

	const pw = "acl-Full-s3cret-8"
	srv := redistest.Start(t, "user prober on >"+pw+" "+collectorACL)
	args := append([]string{"--redis.addr=" + srv.URL(), "--redis.user=prober", "--probe.rate=50",
		"--probe.commands=ping,get,set,incr,hset,hgetall,lpush,lrange,zadd,zrevrange,eval,mget",
		"--probe.connect-interval=500ms", "--collector.refresh-interval=300ms",
		"--burst.commands=get:4,set:2,incr:1,hset:1,hgetall:1,lpush:1,lrange:1,zadd:1,zrevrange:1,mget:1,eval:1"},
		burstFlags(time.Second)...)
	p := startProber(t, []string{"REDIS_PASSWORD=" + pw}, args...)
	target := srv.Addr()
	m := p.waitMetric(t, "a burst completed and the collectors ran", func(m string) bool {
		return burstRuns(m, target, "completed") >= 1 &&
			sum(m, "redis_prober_collector_success", `collector="info"`, `target="`+target+`"`) == 1 &&
			sum(m, "redis_prober_collector_success", `collector="latency"`, `target="`+target+`"`) == 1
	})
	for _, line := range strings.Split(m, "\n") {
		if strings.HasPrefix(line, "redis_prober_collector_success{") && strings.Contains(line, `target="`+target+`"`) && !strings.HasSuffix(line, " 1") {
			t.Errorf("collector failing under the ACL user: %s", line)
		}
		if strings.HasPrefix(line, "redis_prober_requests_total{") && strings.Contains(line, `result="error"`) && !strings.HasSuffix(line, " 0") {
			t.Errorf("errors under the ACL user: %s", line)
		}
	}
	if strings.Contains(p.stderr.String(), "NOPERM") {
		t.Errorf("a command was refused by the ACL:\n%s", grepLines(p.stderr.String(), "NOPERM"))
	}
	p.stopWithin5s(t)
	if keys := srv.Keys(context.Background(), "redis-prober:*"); len(keys) != 0 {
		t.Errorf("keys left: %v", keys)
	}
}
