package main

// The fault suite: the real binary against real redis-server processes (and
// the misbehaving listeners of internal/faulttest), one fault per test. Each
// test asserts what the prober does (counts, gauges, log lines, exit codes,
// keys left), never how fast; durations are logged for docs/reliability.md.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/internal/faulttest"
	"github.com/redis-prober/redis-prober/internal/redistest"
)

// sum adds every sample of metric name whose labels include all pairs
// (written as `key="value"`).
func sum(metrics, name string, pairs ...string) float64 {
	var total float64
	for _, line := range strings.Split(metrics, "\n") {
		rest, ok := strings.CutPrefix(line, name+"{")
		if !ok {
			continue
		}
		labels, sample, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		match := true
		for _, p := range pairs {
			if !strings.Contains(","+labels+",", ","+p+",") {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		if v, err := strconv.ParseFloat(strings.Fields(sample)[0], 64); err == nil {
			total += v
		}
	}
	return total
}

// scrape returns the current exposition, failing the test when /metrics
// does not answer 200.
func (p *runningProber) scrape(t *testing.T) string {
	t.Helper()
	code, m := p.get(t, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: status %d; stderr:\n%s", code, p.stderr)
	}
	return m
}

// logLines counts the log lines holding every one of subs.
func (p *runningProber) logLines(subs ...string) int {
	n := 0
	for _, line := range strings.Split(p.stderr.String(), "\n") {
		all := line != ""
		for _, s := range subs {
			all = all && strings.Contains(line, s)
		}
		if all {
			n++
		}
	}
	return n
}

// waitLogLine waits (up to 10 s) for a log line holding every sub. The
// prober writes a line before it answers the request that caused it, but
// its stderr reaches the test's buffer through a pipe copied by another
// goroutine, so a line may land a moment after the answer.
func (p *runningProber) waitLogLine(t *testing.T, subs ...string) bool {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for p.logLines(subs...) == 0 {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// settledGoroutines waits until go_goroutines is at most limit and returns
// the last figure seen; scrapes themselves add a goroutine or two for a
// moment, so one high reading is not a leak.
func (p *runningProber) settledGoroutines(t *testing.T, limit float64) float64 {
	t.Helper()
	var g float64
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		g, _ = value(p.scrape(t), "go_goroutines")
		if g <= limit {
			return g
		}
		time.Sleep(200 * time.Millisecond)
	}
	return g
}

// stopWithin5s sends SIGTERM and asserts exit 0 within 5 s.
func (p *runningProber) stopWithin5s(t *testing.T) {
	t.Helper()
	took, err := p.stop(t)
	if err != nil {
		t.Errorf("exit after SIGTERM: %v; stderr:\n%s", err, p.stderr)
	}
	if took > 5*time.Second {
		t.Errorf("exit took %v after SIGTERM, want at most 5s", took)
	}
	t.Logf("exited %v after SIGTERM", took.Round(time.Millisecond))
}

func noNamespaceKeys(t *testing.T, srv *redistest.Server) {
	t.Helper()
	if keys := srv.Keys(context.Background(), "redis-prober:*"); len(keys) != 0 {
		t.Errorf("%d namespace keys left, e.g. %v", len(keys), keys[:min(3, len(keys))])
	}
}

// burstFlags make a short periodic burst (testTime long, every twice that)
// that starts within two test times.
// burstFlags are periodic bursts for the fault tests. The governor's p99
// abort is off: these tests are about kills, pauses and signals, and a busy
// CI host must not abort their burst before the fault does (the governor
// has tests of its own).
func burstFlags(testTime time.Duration) []string {
	return []string{"--burst.interval=" + (2 * testTime).String(), "--burst.test-time=" + testTime.String(), "--burst.warmup=0s",
		"--burst.rate=1000", "--burst.clients=4", "--burst.ratio=1:1", "--burst.key-maximum=999", "--burst.abort-p99=0"}
}

func burstRequests(m, target string) float64 {
	return sum(m, "redis_prober_requests_total", `phase="burst"`, `target="`+target+`"`)
}

func burstRuns(m, target, outcome string) float64 {
	return sum(m, "redis_prober_burst_runs_total", `outcome="`+outcome+`"`, `target="`+target+`"`)
}

func probeResults(m, target, result string) float64 {
	return sum(m, "redis_prober_requests_total", `phase="probe"`, `result="`+result+`"`, `target="`+target+`"`)
}

// Redis SIGKILLed in the middle of a burst (probes running beside it) and
// restarted on the same port: up goes 0, then 1 on the first probes after
// the restart; the burst is aborted; every key it left keeps its TTL and the
// prober's exit removes them.
func TestFaultRedisKilledDuringBurstAndRestarted(t *testing.T) {
	// AOF with fsync always keeps the keys written before the SIGKILL, so
	// "no keys left" is a real check and not a side effect of the restart.
	srv := redistest.Start(t, "appendonly yes", "appendfsync always")
	args := append([]string{"--redis.addr=" + srv.URL(), "--probe.rate=40", "--probe.timeout=500ms",
		"--probe.connect-interval=0s"}, burstFlags(2*time.Second)...)
	p := startProber(t, nil, args...)
	target := srv.Addr()

	p.waitMetric(t, "a burst in progress", func(m string) bool {
		return burstRequests(m, target) > 0 && sum(m, "redis_prober_burst_runs_total", `target="`+target+`"`) == 0
	})
	srv.Kill()
	p.waitMetric(t, "up 0 with Redis killed", func(m string) bool { v, ok := value(m, upSeries(target)); return ok && v == 0 })
	time.Sleep(300 * time.Millisecond)
	restarted := time.Now()
	srv.Restart()
	failedAtRestart := probeResults(p.scrape(t), target, "error") + probeResults(p.scrape(t), target, "timeout")
	m := p.waitMetric(t, "up 1 after the restart", func(m string) bool { v, _ := value(m, upSeries(target)); return v == 1 })
	t.Logf("up 1 again %v after the restart returned", time.Since(restarted).Round(time.Millisecond))
	// Recovery on the next probe of each connection, not after a back-off:
	// at most one failure per probe connection (plus the one in flight).
	if failedAfter := probeResults(m, target, "error") + probeResults(m, target, "timeout") - failedAtRestart; failedAfter > 3 {
		t.Errorf("%v probes failed after Redis was back; want at most 3 (one per connection)", failedAfter)
	}
	m = p.waitMetric(t, "the burst counted as aborted", func(m string) bool {
		return burstRuns(m, target, "aborted")+burstRuns(m, target, "failed") >= 1
	})
	if burstRuns(m, target, "completed") > 0 && burstRuns(m, target, "aborted") == 0 {
		t.Errorf("the killed burst was not counted aborted:\n%s", grepLines(m, "burst_runs_total"))
	}
	ctx := context.Background()
	c := srv.Client()
	for _, k := range srv.Keys(ctx, "redis-prober:*") {
		if ttl := c.PTTL(ctx, k).Val(); ttl < 0 {
			t.Errorf("key %s has no TTL after the kill (PTTL %v)", k, ttl)
		}
	}
	p.stopWithin5s(t)
	noNamespaceKeys(t, srv)
}

// grepLines returns the lines of text holding sub, for failure messages.
func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// SIGSTOP for 2 s: the stalled probes are counted as timeouts at their true
// latency (at least the timeout, never dropped), no goroutine is left behind,
// and probes succeed again after SIGCONT.
func TestFaultRedisStoppedTwoSeconds(t *testing.T) {
	srv := redistest.Start(t)
	p := startProber(t, nil, "--redis.addr="+srv.URL(), "--probe.rate=20", "--probe.timeout=500ms",
		"--probe.connect-interval=1s")
	target := srv.Addr()
	m := p.waitMetric(t, "up and probing", func(m string) bool { return probeResults(m, target, "ok") > 20 })
	goroutinesBefore, _ := value(m, "go_goroutines")
	timeoutsBefore := probeResults(m, target, "timeout")
	slowBefore := slowSamples(m, target)

	srv.Pause()
	time.Sleep(2 * time.Second)
	srv.Resume()
	okAfterResume := probeResults(p.scrape(t), target, "ok")
	m = p.waitMetric(t, "probes ok again after SIGCONT", func(m string) bool {
		v, _ := value(m, upSeries(target))
		return v == 1 && probeResults(m, target, "ok") > okAfterResume+10
	})
	timeouts := probeResults(m, target, "timeout") - timeoutsBefore
	slow := slowSamples(m, target) - slowBefore
	t.Logf("2s stop: %v timeouts, %v samples above 250ms", timeouts, slow)
	// 2 s at 20/s is 40 probes: most time out (those that went out during the
	// stop), none is lost.
	if timeouts < 20 {
		t.Errorf("%v timeouts counted for a 2s stop at 20 probes/s; want most of 40", timeouts)
	}
	if slow < timeouts {
		t.Errorf("%v timeouts but only %v samples above 250ms: timeouts not recorded at their true latency", timeouts, slow)
	}
	if g := p.settledGoroutines(t, goroutinesBefore+2); g > goroutinesBefore+2 {
		t.Errorf("goroutines grew from %v to %v over the stop", goroutinesBefore, g)
	}
	// One spell of the node: down, then back once it has answered for a
	// grace (its line waits a window for others), well within
	// waitLogLine's wait.
	if !p.waitLogLine(t, `msg="redis recovered"`) {
		t.Errorf("no recovery line:\n%s", p.stderr)
	}
	if n := p.logLines(`msg="redis down"`); n != 1 {
		t.Errorf("%d 'redis down' lines for one 2s stop; want 1:\n%s", n, p.stderr)
	}
	if n := p.logLines("probe failing"); n != 0 {
		t.Errorf("%d 'probe failing' lines for one 2s stop: it is the node's spell", n)
	}
	p.stopWithin5s(t)
	noNamespaceKeys(t, srv)
}

// slowSamples counts probe latency samples above 250 ms (the classic
// buckets: count minus the le="0.25" bucket).
func slowSamples(m, target string) float64 {
	count := sum(m, "redis_prober_latency_seconds_count", `phase="probe"`, `target="`+target+`"`)
	fast := sum(m, "redis_prober_latency_seconds_bucket", `phase="probe"`, `target="`+target+`"`, `le="0.25"`)
	return count - fast
}

// CLIENT PAUSE and DEBUG SLEEP stall the server without dropping a
// connection: the stall shows in the tail of the histogram, and since
// nothing fails (the stall is shorter than the timeout) the log stays quiet.
func TestFaultClientPauseAndDebugSleep(t *testing.T) {
	srv := redistest.Start(t, "enable-debug-command yes")
	p := startProber(t, nil, "--redis.addr="+srv.URL(), "--probe.rate=50", "--probe.timeout=2s",
		"--probe.connect-interval=0s", "--collector.refresh-interval=1s")
	target := srv.Addr()
	p.waitMetric(t, "probing", func(m string) bool { return probeResults(m, target, "ok") > 20 })
	ctx := context.Background()
	c := srv.Client()
	for _, stall := range []struct {
		name string
		cmd  []any
	}{
		{"CLIENT PAUSE", []any{"client", "pause", 400, "all"}},
		{"DEBUG SLEEP", []any{"debug", "sleep", "0.4"}},
	} {
		before := p.scrape(t)
		tailBefore := tailSamples(before, target)
		warnBefore := p.logLines("level=WARN") + p.logLines("level=ERROR")
		if err := c.Do(ctx, stall.cmd...).Err(); err != nil {
			t.Fatalf("%s: %v", stall.name, err)
		}
		okAt := probeResults(p.scrape(t), target, "ok")
		m := p.waitMetric(t, "probes after "+stall.name, func(m string) bool { return probeResults(m, target, "ok") > okAt+20 })
		tail := tailSamples(m, target) - tailBefore
		t.Logf("%s 400ms: %v probe samples above 100ms", stall.name, tail)
		if tail < 2 {
			t.Errorf("%s: %v samples above 100ms; the stall does not show in the tail", stall.name, tail)
		}
		if n := p.logLines("level=WARN") + p.logLines("level=ERROR") - warnBefore; n > 3 {
			t.Errorf("%s: %d warning/error log lines, want at most 3:\n%s", stall.name, n, p.stderr)
		}
	}
	if v := probeResults(p.scrape(t), target, "timeout") + probeResults(p.scrape(t), target, "error"); v != 0 {
		t.Errorf("%v failed probes for stalls shorter than the timeout", v)
	}
	p.stopWithin5s(t)
	noNamespaceKeys(t, srv)
}

func tailSamples(m, target string) float64 {
	count := sum(m, "redis_prober_latency_seconds_count", `phase="probe"`, `target="`+target+`"`)
	fast := sum(m, "redis_prober_latency_seconds_bucket", `phase="probe"`, `target="`+target+`"`, `le="0.1"`)
	return count - fast
}

// maxmemory reached under noeviction: writes fail with result="error" (the
// OOM reply), reads go on, up stays 1 (Redis answers), the burst governor
// refuses to start a burst, and the log does not repeat the OOM per probe.
func TestFaultMaxmemoryNoeviction(t *testing.T) {
	srv := redistest.Start(t, "maxmemory 1", "maxmemory-policy noeviction")
	args := append([]string{"--redis.addr=" + srv.URL(), "--probe.rate=30", "--probe.commands=ping,get,set",
		"--probe.connect-interval=0s"}, burstFlags(time.Second)...)
	p := startProber(t, nil, args...)
	target := srv.Addr()
	setErr := `redis_prober_requests_total{command="set",node="",phase="probe",result="error",target="` + target + `"}`
	var upSeen []float64
	m := p.waitMetric(t, "OOM on set, reads ok, a burst refused", func(m string) bool {
		e, _ := value(m, setErr)
		g, _ := value(m, okSeries(target, "get"))
		// up is 0 until the first request is settled (a request is
		// counted just before up is set): it is read once two are in.
		if v, ok := value(m, upSeries(target)); ok && e+g >= 2 {
			upSeen = append(upSeen, v)
		}
		return e >= 10 && g >= 10 && burstRuns(m, target, "skipped") >= 1
	})
	for _, v := range upSeen {
		if v != 1 {
			t.Errorf("up went %v while Redis answered OOM; want 1 throughout (%v)", v, upSeen)
			break
		}
	}
	if v, _ := value(m, okSeries(target, "set")); v != 0 {
		t.Errorf("%v set probes ok under maxmemory 1", v)
	}
	if burstRequests(m, target) != 0 || burstRuns(m, target, "completed") != 0 {
		t.Errorf("a burst ran against a full server:\n%s", grepLines(m, "burst_runs_total"))
	}
	if v := sum(m, "redis_prober_burst_decisions_total", `reason="memory"`, `target="`+target+`"`); v < 1 {
		t.Errorf("no burst skipped for reason memory:\n%s", grepLines(m, "burst_decisions_total"))
	}
	// A write failing while reads succeed must not log a failure and a
	// recovery on every probe round.
	if n := p.logLines("probe failing") + p.logLines("probe recovered"); n > 4 {
		t.Errorf("%d probe failing/recovered lines for one steady OOM condition; want a handful", n)
	}
	p.stopWithin5s(t)
}

// A wrong password, then the right one through the password file and a
// reload: up 0 with one clear log line (not one per probe), then 1; neither
// secret is ever printed.
func TestFaultWrongPasswordThenReload(t *testing.T) {
	const right, wrong = "Right-s3cret-pw-77", "Wrong-s3cret-pw-42"
	srv := redistest.Start(t, "requirepass "+right)
	dir := t.TempDir()
	pwFile, cfgPath := filepath.Join(dir, "pw"), filepath.Join(dir, "prober.yml")
	writeConfig(t, pwFile, wrong+"\n")
	writeConfig(t, cfgPath, fmt.Sprintf("targets:\n  - name: r\n    addr: %s\n    password_file: %s\n", srv.URL(), pwFile))
	p := startProber(t, nil, "--config.file="+cfgPath, "--probe.rate=50", "--probe.connect-interval=0s")
	m := p.waitMetric(t, "many failed probes", func(m string) bool {
		v, ok := value(m, upSeries("r"))
		return ok && v == 0 && probeResults(m, "r", "error") >= 30
	})
	// A refused password leaves the node down: one line of its spell,
	// after a window for other nodes of the server.
	if !p.waitLogLine(t, `msg="redis down"`) {
		t.Errorf("no line says the node is down:\n%s", p.stderr)
	}
	if n := p.logLines(`msg="redis down"`) + p.logLines("probe failing"); n != 1 {
		t.Errorf("%d 'redis down' or 'probe failing' lines for %v failed probes with a wrong password, want 1:\n%s",
			n, probeResults(m, "r", "error"), p.stderr)
	}
	if !strings.Contains(p.stderr.String(), "WRONGPASS") && !strings.Contains(p.stderr.String(), "invalid password") {
		t.Errorf("the log does not say the password is wrong:\n%s", p.stderr)
	}

	writeConfig(t, pwFile, right+"\n")
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	m = p.waitMetric(t, "up 1 after the reload", func(m string) bool { v, _ := value(m, upSeries("r")); return v == 1 })
	p.stopWithin5s(t)
	for _, secret := range []string{right, wrong} {
		for what, text := range map[string]string{"logs": p.stderr.String(), "/metrics": m} {
			if strings.Contains(text, secret) {
				t.Errorf("%s show a password", what)
			}
		}
	}
	if keys := redistest.ClientWithPassword(srv, right).Keys(context.Background(), "redis-prober:*").Val(); len(keys) != 0 {
		t.Errorf("keys left: %v", keys)
	}
}

// A listener that accepts and never answers, and one that answers garbage:
// timeouts and errors, up 0, /metrics still served, a prompt exit.
func TestFaultSilentAndGarbageServers(t *testing.T) {
	silent, garbage := faulttest.Silent(t), faulttest.Garbage(t)
	p := startProber(t, nil, "--redis.addr="+silent.URL(), "--redis.addr="+garbage.URL(),
		"--probe.rate=20", "--probe.timeout=300ms", "--probe.connect-interval=500ms",
		"--collector.refresh-interval=500ms", "--burst.interval=2s", "--burst.test-time=500ms", "--burst.warmup=0s")
	m := p.waitMetric(t, "timeouts on the silent server, errors on the garbage one", func(m string) bool {
		return probeResults(m, silent.Addr(), "timeout") >= 10 && probeResults(m, garbage.Addr(), "error") >= 10
	})
	goroutines, _ := value(m, "go_goroutines")
	for _, a := range []string{silent.Addr(), garbage.Addr()} {
		if v, ok := value(m, upSeries(a)); !ok || v != 0 {
			t.Errorf("%s: up %v (present %v), want 0", a, v, ok)
		}
		if v := probeResults(m, a, "ok"); v != 0 {
			t.Errorf("%s: %v probes ok", a, v)
		}
	}
	// Let the faults go on for a while: no growth in goroutines or
	// connections held open on the silent server.
	time.Sleep(2 * time.Second)
	if g := p.settledGoroutines(t, goroutines+3); g > goroutines+3 {
		t.Errorf("goroutines grew from %v to %v against misbehaving servers", goroutines, g)
	}
	t.Logf("silent server: %d connections accepted, %d open; garbage: %d accepted",
		silent.Accepted(), silent.Open(), garbage.Accepted())
	if silent.Open() > 10 {
		t.Errorf("%d connections held open on the silent server", silent.Open())
	}
	if n := p.logLines("probe failing"); n > 8 {
		t.Log(grepLines(p.stderr.String(), "probe failing"))
		t.Errorf("%d 'probe failing' lines; want a handful", n)
	}
	p.stopWithin5s(t)
	if strings.Contains(p.stderr.String(), "panic") {
		t.Errorf("panic in the log:\n%s", p.stderr)
	}
}

// Slow /metrics clients (one that sends its request a byte at a time, one
// that never reads the reply) do not hold other scrapes up; 200 concurrent
// scrapes are each served or refused with 503 by --web.max-requests, and the
// resident memory stays bounded.
func TestFaultSlowAndManyScrapes(t *testing.T) {
	srv := redistest.Start(t)
	p := startProber(t, nil, "--redis.addr="+srv.URL(), "--probe.rate=20", "--web.max-requests=5")
	p.waitMetric(t, "up", func(m string) bool { v, _ := value(m, upSeries(srv.Addr())); return v == 1 })
	addr := strings.TrimPrefix(p.url, "http://")
	rssBefore, _ := value(p.scrape(t), "process_resident_memory_bytes")

	var wg sync.WaitGroup
	slowErrs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := faulttest.SlowRequest(addr, "/metrics", 100*time.Millisecond, 20*time.Second)
			slowErrs <- err
		}()
	}
	for range 4 {
		u, err := faulttest.SendUnread(addr, "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer u.Close()
	}
	// Ordinary scrapes go on meanwhile.
	for i := range 10 {
		if code, _ := p.get(t, "/metrics"); code != 200 {
			t.Errorf("scrape %d beside slow clients: status %d", i, code)
		}
		time.Sleep(50 * time.Millisecond)
	}

	wg.Wait()
	close(slowErrs)
	for err := range slowErrs {
		if err != nil {
			t.Errorf("slow client: %v", err)
		}
	}

	// Four rounds of 200 at once: each request served or refused, and the
	// resident memory levels off after the first rounds instead of growing
	// with every round.
	var rss []float64
	for round := range 4 {
		codes := concurrentScrapes(p.url+"/metrics", 200)
		t.Logf("round %d: 200 concurrent scrapes: %v (status: count)", round+1, codes)
		if codes[200] == 0 || codes[200]+codes[503] != 200 {
			t.Errorf("200 concurrent scrapes: %v; want each served (200) or refused (503)", codes)
		}
		v, _ := value(p.scrape(t), "process_resident_memory_bytes")
		rss = append(rss, v)
	}
	t.Logf("RSS %.1f MiB before, %.1f / %.1f / %.1f / %.1f MiB after each round (race-instrumented binary)",
		rssBefore/(1<<20), rss[0]/(1<<20), rss[1]/(1<<20), rss[2]/(1<<20), rss[3]/(1<<20))
	if rss[3] > rss[1]+32<<20 {
		t.Errorf("RSS keeps growing with each round of scrapes: %.0f -> %.0f MiB", rss[1]/(1<<20), rss[3]/(1<<20))
	}
	p.stopWithin5s(t)
}

// concurrentScrapes sends n GETs at once and counts the status codes (0
// for a transport error).
func concurrentScrapes(url string, n int) map[int]int {
	codes := map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	defer client.CloseIdleConnections()
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code := 0
			if resp, err := client.Get(url); err == nil {
				code = resp.StatusCode
				_, _ = drain(resp)
			}
			mu.Lock()
			codes[code]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	return codes
}

// drain reads and closes a response body.
func drain(resp *http.Response) (int64, error) {
	defer resp.Body.Close()
	return io.Copy(io.Discard, resp.Body)
}

// SIGTERM in every phase: exit 0 within 5 s and no namespace key left.
func TestFaultSIGTERMInEveryPhase(t *testing.T) {
	t.Run("probe", func(t *testing.T) {
		srv := redistest.Start(t)
		p := startProber(t, nil, "--redis.addr="+srv.URL(), "--probe.rate=200",
			"--probe.commands=ping,get,set,incr,hset,hgetall,lpush,lrange,zadd,zrevrange,eval,mget")
		p.waitMetric(t, "probing", func(m string) bool { return probeResults(m, srv.Addr(), "ok") > 50 })
		p.stopWithin5s(t)
		noNamespaceKeys(t, srv)
	})
	t.Run("burst", func(t *testing.T) {
		srv := redistest.Start(t)
		args := append([]string{"--redis.addr=" + srv.URL(), "--probe.rate=20"}, burstFlags(2*time.Second)...)
		p := startProber(t, nil, args...)
		p.waitMetric(t, "a burst running", func(m string) bool {
			return burstRequests(m, srv.Addr()) > 100 && sum(m, "redis_prober_burst_runs_total", `target="`+srv.Addr()+`"`) == 0
		})
		if len(srv.Keys(context.Background(), "redis-prober:*")) == 0 {
			t.Error("no keys while a burst runs: the check below would prove nothing")
		}
		p.stopWithin5s(t)
		noNamespaceKeys(t, srv)
		if !strings.Contains(p.stderr.String(), "reason=cancelled") {
			t.Errorf("the burst did not end as cancelled:\n%s", p.stderr)
		}
	})
	t.Run("collector refresh", func(t *testing.T) {
		// DEBUG SLEEP holds Redis, so the refresh (INFO, LATENCY, CONFIG)
		// is in flight when the signal comes.
		srv := redistest.Start(t, "enable-debug-command yes")
		p := startProber(t, nil, "--redis.addr="+srv.URL(), "--probe.rate=20", "--collector.refresh-interval=100ms")
		p.waitMetric(t, "collectors ran", func(m string) bool {
			return sum(m, "redis_prober_collector_success", `collector="info"`, `target="`+srv.Addr()+`"`) == 1
		})
		c := srv.Client()
		go func() { _ = c.Do(context.Background(), "debug", "sleep", "1").Err() }()
		time.Sleep(300 * time.Millisecond)
		p.stopWithin5s(t)
		noNamespaceKeys(t, srv)
	})
	t.Run("reload", func(t *testing.T) {
		a, b := redistest.Start(t), redistest.Start(t)
		cfgPath := filepath.Join(t.TempDir(), "prober.yml")
		writeConfig(t, cfgPath, fmt.Sprintf("targets:\n  - {name: a, addr: %s}\n", a.URL()))
		p := startProber(t, nil, "--config.file="+cfgPath, "--probe.rate=50", "--web.enable-lifecycle")
		p.waitMetric(t, "a up", func(m string) bool { v, _ := value(m, upSeries("a")); return v == 1 })
		writeConfig(t, cfgPath, fmt.Sprintf("targets:\n  - {name: a, addr: %s}\n  - {name: b, addr: %s}\n", a.URL(), b.URL()))
		// A reload in flight (over HTTP) and SIGTERM right behind it.
		go func() {
			if resp, err := http.Post(p.url+"/-/reload", "text/plain", nil); err == nil {
				resp.Body.Close()
			}
		}()
		time.Sleep(20 * time.Millisecond)
		p.stopWithin5s(t)
		noNamespaceKeys(t, a)
		noNamespaceKeys(t, b)
	})
}

// The prober must never change user data: a dataset of several types
// survives probes, periodic bursts and faults with the same DEBUG DIGEST.
func TestUserDataDigestUnchanged(t *testing.T) {
	srv := redistest.Start(t, "enable-debug-command yes")
	ctx := context.Background()
	c := srv.Client()
	loadDataset(ctx, t, c)
	before, err := c.Do(ctx, "debug", "digest").Text()
	if err != nil {
		t.Fatal(err)
	}
	dbsize := c.DBSize(ctx).Val()

	args := append([]string{"--redis.addr=" + srv.URL(), "--probe.rate=100", "--probe.timeout=300ms",
		"--probe.commands=ping,get,set,incr,hset,hgetall,lpush,lrange,zadd,zrevrange,eval,mget",
		"--collector.refresh-interval=500ms"}, burstFlags(time.Second)...)
	p := startProber(t, nil, args...)
	target := srv.Addr()
	p.waitMetric(t, "a burst completed", func(m string) bool { return burstRuns(m, target, "completed") >= 1 })
	if d, _ := c.Do(ctx, "debug", "digest").Text(); d == before {
		t.Error("the digest did not change while the prober runs: the check below would prove nothing")
	}
	// Faults while probing: a stop, a pause, a sleep.
	srv.Pause()
	time.Sleep(700 * time.Millisecond)
	srv.Resume()
	if err := c.Do(ctx, "client", "pause", 300, "all").Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	if err := c.Do(ctx, "debug", "sleep", "0.5").Err(); err != nil {
		t.Fatal(err)
	}
	okAt := probeResults(p.scrape(t), target, "ok")
	p.waitMetric(t, "probing after the faults", func(m string) bool { return probeResults(m, target, "ok") > okAt+50 })
	p.stopWithin5s(t)

	after, err := c.Do(ctx, "debug", "digest").Text()
	if err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("DEBUG DIGEST changed: %s before, %s after (%d keys before, %d after; namespace keys left: %v)",
			before, after, dbsize, c.DBSize(ctx).Val(), srv.Keys(ctx, "redis-prober:*"))
	}
}

// loadDataset writes a few thousand keys of every common type, some with a
// TTL far in the future, some under names close to the prober's namespace.
func loadDataset(ctx context.Context, t *testing.T, c *redis.Client) {
	t.Helper()
	pipe := c.Pipeline()
	for i := range 3000 {
		pipe.Set(ctx, fmt.Sprintf("user:%d", i), strings.Repeat("v", i%64+1), 0)
		pipe.HSet(ctx, fmt.Sprintf("hash:%d", i%200), fmt.Sprintf("f%d", i), i)
		pipe.RPush(ctx, fmt.Sprintf("list:%d", i%100), i)
		pipe.SAdd(ctx, fmt.Sprintf("set:%d", i%100), i)
		pipe.ZAdd(ctx, fmt.Sprintf("zset:%d", i%100), redis.Z{Score: float64(i), Member: i})
		if i%10 == 0 {
			pipe.Set(ctx, fmt.Sprintf("ttl:%d", i), i, time.Hour)
			pipe.XAdd(ctx, &redis.XAddArgs{Stream: fmt.Sprintf("stream:%d", i%7), Values: []any{"n", i}})
		}
	}
	// Near misses of the namespace: the prober must leave these alone.
	for _, k := range []string{"redis-prober", "redis-prober-x:1", "redis-prober;1", "Redis-prober:1", "redis-probe:1"} {
		pipe.Set(ctx, k, "user data", 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if n := c.DBSize(ctx).Val(); n < 3000 {
		t.Fatalf("dataset has %d keys, want thousands", n)
	}
}

// A key prefix that is empty or has no trailing separator is refused by
// every way of setting it, before any key is written.
func TestKeyPrefixWithoutSeparatorRefused(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "prober.yml")
	writeConfig(t, cfg, "targets:\n  - name: a\n    addr: 127.0.0.1:1\n    probe: {key_prefix: nosep}\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--probe.key-prefix="}, "--probe.key-prefix"},
		{[]string{"--probe.key-prefix=redis-prober"}, "--probe.key-prefix"},
		{[]string{"--probe.key-prefix=redis-prober", "--burst.interval=1m"}, "--probe.key-prefix"},
		{[]string{"--config.file=" + cfg, "--config.check"}, "key_prefix"},
		{[]string{"burst", "--redis.addr=127.0.0.1:1", "--key-prefix="}, "--key-prefix"},
		{[]string{"burst", "--redis.addr=127.0.0.1:1", "--key-prefix=app"}, "--key-prefix"},
		{[]string{"burst", "--redis.addr=127.0.0.1:1", "--key-prefix=*:"}, "--key-prefix"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			args := tc.args
			if args[0] != "burst" {
				args = append(args, "--web.listen-address=127.0.0.1:0")
			}
			if code, out := runBinary(t, 5*time.Second, args...); code != 2 || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, output %q; want 2 naming %s", code, lastLine(out), tc.want)
			}
		})
	}
}

// NaN and infinities pass every "x <= 0 || x > limit" range check, and a
// probe rate of NaN once meant an unbounded rate against Redis. Every float
// flag and config field must refuse them with exit 2.
func TestNonFiniteNumbersRefused(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "prober.yml")
	writeConfig(t, cfg, "targets:\n  - name: a\n    addr: 127.0.0.1:1\n    probe: {rate: .nan}\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--probe.rate=NaN"}, "--probe.rate"},
		{[]string{"--probe.rate=+Inf"}, "--probe.rate"},
		{[]string{"--burst.rate=NaN"}, "--burst.rate"},
		{[]string{"--burst.key-stddev=NaN", "--burst.key-pattern=G:G"}, "--burst.key-stddev"},
		{[]string{"--burst.key-zipf-exp=NaN", "--burst.key-pattern=Z:Z"}, "--burst.key-zipf-exp"},
		{[]string{"--burst.max-errors=NaN"}, "--burst.max-errors"},
		{[]string{"--config.file=" + cfg, "--config.check"}, "rate"},
		{[]string{"burst", "--redis.addr=127.0.0.1:1", "--rate=NaN"}, "--rate"},
		{[]string{"burst", "--redis.addr=127.0.0.1:1", "--key-median=NaN", "--key-pattern=G:G"}, "--key-median"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			// The real binary: an accepted value would start the prober,
			// which must not run forever inside the test process.
			args := tc.args
			if args[0] != "burst" {
				args = append(args, "--web.listen-address=127.0.0.1:0")
			}
			code, out := runBinary(t, 5*time.Second, args...)
			if code != 2 || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, output %q; want 2 naming %s", code, lastLine(out), tc.want)
			}
		})
	}
}

// runBinary runs the prober binary to its end, killing it after limit (exit
// code -1 then), and returns its exit code and combined output.
func runBinary(t *testing.T, limit time.Duration, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, proberBin, args...)
	out, _ := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Errorf("%v still running after %v", args, limit)
		return -1, string(out)
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
