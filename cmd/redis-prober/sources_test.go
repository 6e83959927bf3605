package main

import (
	"bytes"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/config"
	"github.com/redis-prober/redis-prober/internal/redistest"
)

// writeAtomic replaces a file the way a config generator (or Kubernetes's
// ConfigMap volume) does, so a poll never reads half of it.
func writeAtomic(t *testing.T, path, text string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// sdJSON is a file_sd document: one group of addrs with labels.
func sdJSON(labels string, addrs ...string) string {
	return fmt.Sprintf(`[{"targets": ["%s"], "labels": {%s}}]`, strings.Join(addrs, `", "`), labels)
}

var upLine = regexp.MustCompile(`(?m)^redis_prober_up\{node="",target="([^"]+)"\} 1$`)

// upTargets lists the targets that are up on a prober.
func upTargets(metrics string) []string {
	var out []string
	for _, m := range upLine.FindAllStringSubmatch(metrics, -1) {
		out = append(out, m[1])
	}
	slices.Sort(out)
	return out
}

// Targets from a file_sd file appear, change and disappear on a running
// prober; a malformed file keeps the last good list, sets the reload gauge
// to 0 and logs one line naming the file; a fixed file sets it back to 1.
func TestFileSDTargetsFollowTheFile(t *testing.T) {
	a, b := redistest.Start(t), redistest.Start(t)
	dir := t.TempDir()
	sd := filepath.Join(dir, "redis.json")
	writeAtomic(t, sd, sdJSON(`"team": "payments"`, a.Addr()))
	cfg := filepath.Join(dir, "prober.yml")
	writeConfig(t, cfg, fmt.Sprintf("global:\n  probe: {rate: 20}\nfile_sd_configs:\n  - files: [%s]\n    refresh_interval: 200ms\n", filepath.Join(dir, "*.json")))
	p := startProber(t, nil, "--config.file="+cfg, "--probe.connect-interval=0s", "--burst.interval=0s")

	m := p.waitMetric(t, "a up", func(m string) bool { return slices.Equal(upTargets(m), []string{a.Addr()}) })
	if _, ok := value(m, `redis_prober_target_info{kind="server",target="`+a.Addr()+`",team="payments"}`); !ok {
		t.Errorf("no target_info with the file's label:\n%s", grepLines(m, "target_info"))
	}
	if v, _ := value(m, "redis_prober_config_last_reload_successful"); v != 1 {
		t.Errorf("reload gauge %v, want 1", v)
	}

	// Add b; a keeps running (its counter does not go back).
	okBefore, _ := value(m, okSeries(a.Addr(), "ping"))
	writeAtomic(t, sd, sdJSON(`"team": "payments"`, a.Addr(), b.Addr()))
	m = p.waitMetric(t, "a and b up", func(m string) bool { return len(upTargets(m)) == 2 })
	if okAfter, _ := value(m, okSeries(a.Addr(), "ping")); okAfter < okBefore {
		t.Errorf("a restarted when b was added: %v -> %v", okBefore, okAfter)
	}

	// A label changes: the targets restart with it.
	writeAtomic(t, sd, sdJSON(`"team": "identity"`, a.Addr(), b.Addr()))
	p.waitMetric(t, "new label", func(m string) bool {
		_, ok := value(m, `redis_prober_target_info{kind="server",target="`+b.Addr()+`",team="identity"}`)
		return ok
	})

	// Malformed: the list stays, the gauge drops, one log line names the file.
	writeAtomic(t, sd, `[{"targets": ["`+a.Addr()+`"`)
	p.waitMetric(t, "gauge 0", func(m string) bool { v, _ := value(m, "redis_prober_config_last_reload_successful"); return v == 0 })
	time.Sleep(time.Second) // five more polls of the broken file
	p.waitMetric(t, "both still probed", func(m string) bool { return len(upTargets(m)) == 2 })
	var failed []string
	for _, line := range strings.Split(p.stderr.String(), "\n") {
		if strings.Contains(line, "target source failed") {
			failed = append(failed, line)
		}
	}
	if len(failed) != 1 || !strings.Contains(failed[0], sd) || !strings.Contains(failed[0], "not a JSON list") {
		t.Errorf("want one log line naming %s and the problem, got %q", sd, failed)
	}

	// Fixed, with a gone: a stops (series and keys go), the gauge is 1 again.
	writeAtomic(t, sd, sdJSON(`"team": "identity"`, b.Addr()))
	m = p.waitMetric(t, "a gone", func(m string) bool { return slices.Equal(upTargets(m), []string{b.Addr()}) })
	if _, ok := value(m, upSeries(a.Addr())); ok {
		t.Errorf("a's series stayed")
	}
	if v, _ := value(m, "redis_prober_config_last_reload_successful"); v != 1 {
		t.Errorf("reload gauge %v after a good file, want 1", v)
	}
	if keys := a.Keys(t.Context(), "redis-prober:*"); len(keys) != 0 {
		t.Errorf("a removed target kept probe keys: %v", keys)
	}

	// The file goes away: its targets go (as in Prometheus: no file, no targets).
	if err := os.Remove(sd); err != nil {
		t.Fatal(err)
	}
	p.waitMetric(t, "no target", func(m string) bool { return len(upTargets(m)) == 0 && !strings.Contains(m, "redis_prober_up{") })
	if _, err := p.stop(t); err != nil {
		t.Errorf("exit: %v", err)
	}
}

// http_sd: the prober fetches a URL (an httptest server on loopback);
// targets follow its answers, a failing answer keeps them.
func TestHTTPSDTargetsFollowTheURL(t *testing.T) {
	a, b := redistest.Start(t), redistest.Start(t)
	var mu sync.Mutex
	body, status := sdJSON(`"env": "test"`, a.Addr()), 200
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	set := func(s string, code int) { mu.Lock(); body, status = s, code; mu.Unlock() }

	cfg := filepath.Join(t.TempDir(), "prober.yml")
	writeConfig(t, cfg, fmt.Sprintf("http_sd_configs:\n  - url: %s/sd?token=hidden\n    refresh_interval: 200ms\n    timeout: 1s\n", srv.URL))
	p := startProber(t, nil, "--config.file="+cfg, "--probe.connect-interval=0s", "--burst.interval=0s")
	p.waitMetric(t, "a up", func(m string) bool { return slices.Equal(upTargets(m), []string{a.Addr()}) })

	set(sdJSON(`"env": "test"`, a.Addr(), b.Addr()), 200)
	p.waitMetric(t, "b up", func(m string) bool { return len(upTargets(m)) == 2 })

	set("", 503)
	p.waitMetric(t, "gauge 0", func(m string) bool { v, _ := value(m, "redis_prober_config_last_reload_successful"); return v == 0 })
	p.waitMetric(t, "both still up", func(m string) bool { return len(upTargets(m)) == 2 })
	if strings.Contains(p.stderr.String(), "hidden") {
		t.Errorf("the log shows the URL's query")
	}
	if !strings.Contains(p.stderr.String(), "HTTP status 503") {
		t.Errorf("no log of the 503")
	}

	set(sdJSON(`"env": "test"`, b.Addr()), 200)
	m := p.waitMetric(t, "a gone", func(m string) bool { return slices.Equal(upTargets(m), []string{b.Addr()}) })
	if v, _ := value(m, "redis_prober_config_last_reload_successful"); v != 1 {
		t.Errorf("gauge %v, want 1", v)
	}
}

// http_sd with authentication, on a loopback TLS server: a bearer token
// read from its file and basic auth with a password_file. A wrong token
// keeps the last good targets, logs one line without the secret and sets
// the reload gauge to 0; the right one again sets it back. No secret shows
// in the log, /metrics or the status page.
func TestHTTPSDAuthenticatesFromFiles(t *testing.T) {
	a, b := redistest.Start(t), redistest.Start(t)
	dir := t.TempDir()
	const good, wrong, pass = "bearer-good-5e1d", "bearer-wrong-0b7c", "basic-pass-a93f"
	tok, pw := filepath.Join(dir, "token"), filepath.Join(dir, "password")
	writeAtomic(t, tok, good+"\n")
	writeAtomic(t, pw, pass+"\n")
	var refused atomic.Int64 // fetches answered 401
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, basic := r.BasicAuth()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/bearer" && r.Header.Get("Authorization") == "Bearer "+good:
			_, _ = w.Write([]byte(sdJSON(`"auth": "bearer"`, a.Addr())))
		case r.URL.Path == "/basic" && basic && u == "prober" && p == pass:
			_, _ = w.Write([]byte(sdJSON(`"auth": "basic"`, b.Addr())))
		default:
			refused.Add(1)
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	defer srv.Close()
	ca := filepath.Join(dir, "ca.pem")
	writeAtomic(t, ca, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})))

	cfg := filepath.Join(dir, "prober.yml")
	writeConfig(t, cfg, fmt.Sprintf(`http_sd_configs:
  - url: %[1]s/bearer
    refresh_interval: 200ms
    authorization: {credentials_file: %[2]s}
    tls_config: {ca_file: %[3]s}
  - url: %[1]s/basic
    refresh_interval: 200ms
    basic_auth: {username: prober, password_file: %[4]s}
    tls_config: {ca_file: %[3]s}
`, srv.URL, tok, ca, pw))
	p := startProber(t, nil, "--config.file="+cfg, "--probe.connect-interval=0s", "--burst.interval=0s")
	both := []string{a.Addr(), b.Addr()}
	slices.Sort(both)
	p.waitMetric(t, "both up", func(m string) bool { return slices.Equal(upTargets(m), both) })

	writeAtomic(t, tok, wrong+"\n")
	p.waitMetric(t, "gauge 0", func(m string) bool { v, _ := value(m, "redis_prober_config_last_reload_successful"); return v == 0 })
	// Five more refused fetches, so "one log line" is said of a fault
	// that went on.
	for since, deadline := refused.Load(), time.Now().Add(20*time.Second); refused.Load() < since+5; {
		if time.Now().After(deadline) {
			t.Fatalf("%d refused fetches in 20 s after the first, want 5", refused.Load()-since)
		}
		time.Sleep(20 * time.Millisecond)
	}
	m := p.waitMetric(t, "both still up", func(m string) bool { return slices.Equal(upTargets(m), both) })
	var failed []string
	for line := range strings.SplitSeq(p.stderr.String(), "\n") {
		if strings.Contains(line, "target source failed") {
			failed = append(failed, line)
		}
	}
	if len(failed) != 1 || !strings.Contains(failed[0], "source=http_sd_configs[0] ") || !strings.Contains(failed[0], srv.URL+"/bearer: HTTP status 401") {
		t.Errorf("want one log line for http_sd_configs[0] naming the URL and the 401, got %q", failed)
	}

	writeAtomic(t, tok, good+"\n")
	p.waitMetric(t, "gauge 1", func(m string) bool { v, _ := value(m, "redis_prober_config_last_reload_successful"); return v == 1 })
	_, page := p.get(t, "/")
	for _, secret := range []string{good, wrong, pass} {
		for where, text := range map[string]string{"the log": p.stderr.String(), "/metrics": m, "the status page": page} {
			if strings.Contains(text, secret) {
				t.Errorf("%s shows the secret %q", where, secret)
			}
		}
	}
}

// A secret written in an http_sd block fails --config.check with exit 2
// and one line naming the field, not the secret.
func TestHTTPSDInlineSecretFailsConfigCheck(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "prober.yml")
	for field, text := range map[string]string{
		"http_sd_configs[0].basic_auth.password (line 3)":       "basic_auth: {username: prober, password: inline-pass-31}",
		"http_sd_configs[0].authorization.credentials (line 3)": "authorization: {credentials: inline-pass-31}",
	} {
		writeConfig(t, cfg, "http_sd_configs:\n  - url: https://sd.internal/redis\n    "+text+"\n")
		var stdout, stderr bytes.Buffer
		code := realMain([]string{"--config.file=" + cfg, "--config.check"}, &stdout, &stderr)
		out := strings.TrimSpace(stderr.String())
		if code != 2 || !strings.Contains(out, field) || strings.Contains(out, "\n") || strings.Contains(out, "inline-pass-31") {
			t.Errorf("%s: exit %d, stderr %q; want 2 and one line naming %s without the secret", text, code, out, field)
		}
	}
}

// Three probers, shard index 0, 1 and 2 of one file_sd file of 30 targets
// (ten databases on each of three servers), probe every target exactly
// once between them; editing the file adds and removes targets without a
// restart, still each on exactly one prober.
func TestThreeShardsProbeEveryTargetOnce(t *testing.T) {
	servers := []*redistest.Server{redistest.Start(t), redistest.Start(t), redistest.Start(t)}
	list := func(dbs ...int) []string {
		var out []string
		for _, s := range servers {
			for _, db := range dbs {
				out = append(out, fmt.Sprintf("redis://%s/%d", s.Addr(), db))
			}
		}
		return out
	}
	names := func(addrs []string) []string {
		var out []string
		for _, a := range addrs {
			out = append(out, strings.TrimPrefix(a, "redis://"))
		}
		slices.Sort(out)
		return out
	}
	dir := t.TempDir()
	sd := filepath.Join(dir, "fleet.json")
	first := list(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	writeAtomic(t, sd, sdJSON(`"fleet": "test"`, first...))
	cfg := filepath.Join(dir, "prober.yml")
	writeConfig(t, cfg, fmt.Sprintf("global:\n  probe: {rate: 2, commands: [ping]}\nfile_sd_configs:\n  - files: [%s]\n    refresh_interval: 200ms\nsharding:\n  shards: 3\n", sd))
	var probers []*runningProber
	for i := range 3 {
		probers = append(probers, startProber(t, nil, "--config.file="+cfg, fmt.Sprintf("--config.shard-index=%d", i),
			"--probe.connect-interval=0s", "--burst.interval=0s"))
	}
	// shards is the partition the file's sharding rule gives, by the
	// config package (whose tests hold it to a partition that spreads):
	// the ports are random, so which prober gets how many is too, and
	// one of the three may, rarely, get none.
	shards := func() [][]string {
		t.Helper()
		var out [][]string
		for i := range probers {
			f, err := config.Load(cfg)
			if err != nil {
				t.Fatal(err)
			}
			groups, err := config.ReadFileSD(f.FileSD[0])
			if err != nil {
				t.Fatal(err)
			}
			if err := f.SetShardIndex(i); err != nil {
				t.Fatal(err)
			}
			ts, err := f.DiscoveredTargets(config.TargetTemplate{}, groups)
			if err != nil {
				t.Fatal(err)
			}
			var share []string
			for _, tg := range ts {
				share = append(share, tg.Name)
			}
			slices.Sort(share)
			out = append(out, share)
		}
		return out
	}
	// waitPartition waits until the probers' up targets are want, each
	// on exactly the prober the sharding rule names.
	waitPartition := func(want []string) {
		t.Helper()
		expect := shards()
		deadline := time.Now().Add(30 * time.Second)
		for {
			var all []string
			var got [][]string
			for _, p := range probers {
				_, m := p.get(t, "/metrics")
				up := upTargets(m)
				got = append(got, up)
				all = append(all, up...)
			}
			slices.Sort(all)
			if slices.Equal(all, want) && slices.EqualFunc(got, expect, slices.Equal) {
				t.Logf("%d targets over three probers: %d, %d, %d", len(all), len(got[0]), len(got[1]), len(got[2]))
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("targets up per prober %v, want %v; union %d, want %d each once", got, expect, len(all), len(want))
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	if n := len(first); n != 30 {
		t.Fatalf("%d targets", n)
	}
	waitPartition(names(first))

	// Drop databases 8 and 9, add 10 and 11: 30 targets again, six moved.
	second := list(0, 1, 2, 3, 4, 5, 6, 7, 10, 11)
	writeAtomic(t, sd, sdJSON(`"fleet": "test"`, second...))
	waitPartition(names(second))
	for _, p := range probers {
		if strings.Contains(p.stderr.String(), "configuration reloaded") {
			t.Errorf("a prober reloaded its config; the file's change alone should do")
		}
	}
}
