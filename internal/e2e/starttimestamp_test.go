package e2e

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/redis-prober/redis-prober/internal/host"
	"github.com/redis-prober/redis-prober/internal/promtest"
	"github.com/redis-prober/redis-prober/internal/redistest"
)

// startFeatures are what Prometheus 3.12+ needs to store start timestamps
// and use them in PromQL: st-storage stores them (and turns on the chunk
// encodings that keep them, and the protobuf scrape format first),
// use-start-timestamps has rate(), increase() and start_timestamp() read
// them, and start_timestamp() is an experimental function (3.16).
var startFeatures = []string{"st-storage", "use-start-timestamps", "promql-experimental-functions"}

// TestStartTimestampsCountTheFirstInterval restarts the prober between
// scrapes of two Prometheus servers of the version under test (3.12 or
// later), one storing start timestamps, one not, and reads what each makes
// of the restart. The new prober has counted past the old one's last
// value before Prometheus sees it (a scrape proxy holds it back), so only
// its start timestamp tells that it restarted. With start timestamps,
// start_timestamp() is the new prober's, and increase() over both lives
// is exactly what both counted: the old one's from its start, the new
// one's from 0. Without them the restart is not seen and both first
// intervals are lost, which shows the test measures what it says.
func TestStartTimestampsCountTheFirstInterval(t *testing.T) {
	promtest.Binary(t)
	if major, minor := promtest.Version(t); !promtest.AtLeast(major, minor, 3, 12) {
		t.Skipf("Prometheus %d.%d: start timestamps are used in PromQL from 3.12 (use-start-timestamps)", major, minor)
	}
	srv := redistest.Start(t)
	bin := buildProber(t, repoRoot(t))
	args := []string{"--redis.addr=" + srv.URL(), "--probe.rate=50", "--probe.commands=ping",
		"--probe.connect-interval=0s", "--burst.interval=0s", "--log.level=warn"}
	proxy := newScrapeProxy(t)
	withST := promtest.Start(t, promtest.Config{Targets: []string{proxy.addr}, Features: startFeatures})
	without := promtest.Start(t, promtest.Config{Targets: []string{proxy.addr}})
	proms := []*promtest.Server{withST, without}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const (
		counter = `redis_prober_requests_total{job="redis-prober", command="ping", phase="probe", result="ok"}`
		hist    = `redis_prober_latency_seconds{job="redis-prober", command="ping", phase="probe"}`
	)
	count := func(p *prober) float64 {
		v, _ := p.scrape(t).sum("redis_prober_requests_total", map[string]string{"command": "ping", "phase": "probe", "result": "ok"})
		return v
	}

	// The first prober, scraped a few times by both.
	beforeA := time.Now()
	a := startProber(t, bin, args...)
	proxy.to(a.addr)
	for _, p := range proms {
		waitForQuery(ctx, t, p, 30*time.Second, `count_over_time(`+counter+`[1m]) >= 3`, nonEmpty)
	}
	proxy.to("")
	a.stop()
	// What each stored of it: its last value, once a scrape has failed.
	aLast := make([]float64, len(proms))
	var aHist float64
	for i, p := range proms {
		waitForQuery(ctx, t, p, 30*time.Second, `up{job="redis-prober"} == 0`, nonEmpty)
		now := time.Now()
		aLast[i] = value(ctx, t, p, `last_over_time(`+counter+`[1m])`, now)
		if i == 0 {
			aHist = value(ctx, t, p, `histogram_count(last_over_time(`+hist+`[1m]))`, now)
		}
	}

	// The second prober counts past the first one's last value before
	// Prometheus sees it: a counter that only went up.
	launchB := time.Now()
	b := startProber(t, bin, args...)
	readyB := time.Now()
	for deadline := time.Now().Add(30 * time.Second); count(b) < max(aLast[0], aLast[1])+50; {
		if time.Now().After(deadline) {
			t.Fatalf("the second prober counted %v pings in 30 s, not past %v", count(b), aLast)
		}
		time.Sleep(100 * time.Millisecond)
	}
	proxy.to(b.addr)
	bStart := createdOf(t, b, "redis_prober_requests_total", map[string]string{"command": "ping", "phase": "probe", "result": "ok"})
	if bStart.Before(launchB.Truncate(time.Millisecond)) || bStart.After(readyB) {
		t.Errorf("the second prober's counter starts at %v, not between its launch %v and readiness %v", bStart, launchB, readyB)
	}

	for i, p := range proms {
		// Three samples of the second prober, evaluated at the last one's
		// time: no extrapolation past it.
		waitForQuery(ctx, t, p, 30*time.Second, fmt.Sprintf(`count_over_time(%s[%dms]) >= 3`, counter, time.Since(launchB).Milliseconds()), nonEmpty)
		at := time.UnixMilli(int64(math.Round(value(ctx, t, p, `timestamp(`+counter+`)`, time.Now()) * 1000)))
		bLast := value(ctx, t, p, counter, at)
		window := fmt.Sprintf("[%dms]", at.Sub(beforeA.Add(-time.Second)).Milliseconds())
		got := value(ctx, t, p, `increase(`+counter+window+`)`, at)
		want := aLast[i] + bLast
		if i == 0 {
			st := value(ctx, t, p, `start_timestamp(`+counter+`)`, at)
			if st != float64(bStart.UnixMilli())/1000 {
				t.Errorf("start_timestamp() = %.3f, want the second prober's %.3f", st, float64(bStart.UnixMilli())/1000)
			}
			if math.Abs(got-want) > 1e-9*want {
				t.Errorf("with start timestamps: increase() over both probers = %v, want %v (%v + %v)", got, want, aLast[i], bLast)
			}
			h := value(ctx, t, p, `histogram_count(increase(`+hist+window+`))`, at)
			hWant := aHist + value(ctx, t, p, `histogram_count(`+hist+`)`, at)
			if math.Abs(h-hWant) > 1e-9*hWant {
				t.Errorf("with start timestamps: histogram_count(increase()) of the latency over both probers = %v, want %v", h, hWant)
			}
			t.Logf("with start timestamps: increase() %v = %v + %v; the latency histogram's count %v; start_timestamp() %.3f", got, aLast[i], bLast, h, st)
			continue
		}
		// Without them the restart is invisible: both first intervals and
		// the first prober's count are lost.
		if got > want-aLast[i]/2 {
			t.Errorf("without start timestamps: increase() = %v, want well short of %v (the restart unseen)", got, want)
		}
		t.Logf("without start timestamps: increase() %v, short of %v = %v + %v", got, want, aLast[i], bLast)
	}
}

func nonEmpty(got []promtest.Sample) bool { return len(got) > 0 }

// value evaluates expr at at and returns its one sample's value.
func value(ctx context.Context, t *testing.T, p *promtest.Server, expr string, at time.Time) float64 {
	t.Helper()
	got, err := p.QueryAt(ctx, expr, at)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	if len(got) != 1 {
		t.Fatalf("%s at %v: %d samples, want 1: %v", expr, at, len(got), got)
	}
	return got[0].Value
}

// createdOf scrapes p in the protobuf format and returns the created
// timestamp of the counter name whose labels include match.
func createdOf(t *testing.T, p *prober, name string, match map[string]string) time.Time {
	t.Helper()
	for _, mf := range scrapeProto(t, p) {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range match {
				if labels[k] != v {
					continue next
				}
			}
			if m.GetCounter().GetCreatedTimestamp() == nil {
				t.Fatalf("%s %v has no created timestamp", name, labels)
			}
			return m.GetCounter().GetCreatedTimestamp().AsTime()
		}
	}
	t.Fatalf("no %s %v in the scrape", name, match)
	return time.Time{}
}

// scrapeProto takes /metrics in the protobuf format, as Prometheus asks
// for it with native histograms or start timestamps on.
func scrapeProto(t *testing.T, p *prober) []*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+p.addr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeProtoDelim)))
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if f := expfmt.ResponseFormat(resp.Header); f.FormatType() != expfmt.TypeProtoDelim {
		t.Fatalf("asked for protobuf, got %q", f)
	}
	dec := expfmt.NewDecoder(resp.Body, expfmt.ResponseFormat(resp.Header))
	var out []*dto.MetricFamily
	for {
		mf := &dto.MetricFamily{}
		if err := dec.Decode(mf); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatalf("decode /metrics: %v", err)
		}
		out = append(out, mf)
	}
}

// scrapeProxy is the address Prometheus scrapes: it passes each
// connection to the prober of the moment, or refuses it (closes it) when
// there is none, so the test decides when Prometheus sees a prober.
type scrapeProxy struct {
	addr  string
	mu    sync.Mutex
	dest  string
	conns map[net.Conn]bool // open, both sides
}

func newScrapeProxy(t *testing.T) *scrapeProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &scrapeProxy{addr: ln.Addr().String(), conns: map[net.Conn]bool{}}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		p.to("")
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { p.pass(c) })
		}
	})
	return p
}

// to sends the next connections to addr ("" refuses them), and closes
// those open: Prometheus keeps its connection to a target alive, which
// would go on scraping the prober of before.
func (p *scrapeProxy) to(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dest = addr
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// track keeps cs to close on the next to; false when they are closed
// already (to came in between).
func (p *scrapeProxy) track(dest string, cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dest != dest {
		return false
	}
	for _, c := range cs {
		p.conns[c] = true
	}
	return true
}

func (p *scrapeProxy) pass(c net.Conn) {
	defer c.Close()
	p.mu.Lock()
	dest := p.dest
	p.mu.Unlock()
	if dest == "" {
		return
	}
	d, err := net.DialTimeout("tcp", dest, 5*time.Second)
	if err != nil {
		return
	}
	defer d.Close()
	if !p.track(dest, c, d) {
		return
	}
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(d, c)
		if tc, ok := d.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		close(done)
	}()
	_, _ = io.Copy(c, d)
	_ = c.Close()
	<-done
}

// startless are the counters and summaries that carry no created
// timestamp, and why: since when they count is not the prober's to say.
var startless = map[string]string{
	"process_network_receive_bytes_total":  "the network namespace's interfaces count since they came up",
	"process_network_transmit_bytes_total": "the network namespace's interfaces count since they came up",
	"redis_prober_burst_last_latency_seconds": "a summary of the last burst only, rewritten by each burst " +
		"(prober/burst, outside this change)",
}

// TestEveryCounterCarriesItsStart runs the prober (probes, a burst, every
// collector, a server with latency events) and reads its /metrics in the
// protobuf format: every counter, histogram and summary carries a created
// timestamp, not in the future and not before the host booted, except
// those of startless.
func TestEveryCounterCarriesItsStart(t *testing.T) {
	srv := redistest.Start(t, "latency-monitor-threshold 1", "enable-debug-command yes")
	if err := srv.Client().Do(t.Context(), "debug", "sleep", "0.01").Err(); err != nil {
		t.Fatal(err)
	}
	p := startProber(t, buildProber(t, repoRoot(t)), "--redis.addr="+srv.URL(), "--probe.rate=20",
		"--burst.interval=3s", "--burst.test-time=1s", "--burst.warmup=0s", "--burst.rate=500", "--log.level=warn")
	if !p.waitForMetric(t, "redis_prober_burst_runs_total", 60*time.Second) {
		t.Fatal("no burst within 60 s")
	}
	// Nothing counts from before the host booted. /proc/stat's btime is
	// the wall clock less the uptime, so it moves when the clock is
	// stepped (by tens of seconds on a VM): an hour of slack.
	boot, err := host.New("/proc", "/sys").BootTime()
	if err != nil {
		boot = time.Unix(1, 0)
	}
	boot = boot.Add(-time.Hour)
	var earliest time.Time
	var checked int
	seen := map[string]bool{}
	for _, mf := range scrapeProto(t, p) {
		for _, m := range mf.GetMetric() {
			var start *time.Time
			switch {
			case m.Counter != nil && m.Counter.CreatedTimestamp != nil:
				s := m.Counter.CreatedTimestamp.AsTime()
				start = &s
			case m.Histogram != nil && m.Histogram.CreatedTimestamp != nil:
				s := m.Histogram.CreatedTimestamp.AsTime()
				start = &s
			case m.Summary != nil && m.Summary.CreatedTimestamp != nil:
				s := m.Summary.CreatedTimestamp.AsTime()
				start = &s
			case m.Counter == nil && m.Histogram == nil && m.Summary == nil:
				continue
			}
			seen[mf.GetName()] = true
			why, excused := startless[mf.GetName()]
			switch {
			case start == nil && !excused:
				t.Errorf("%s %v has no created timestamp", mf.GetName(), m.GetLabel())
			case start != nil && excused:
				t.Errorf("%s has a created timestamp, though %s: drop it from startless", mf.GetName(), why)
			case start != nil && (start.After(time.Now()) || start.Before(boot)):
				t.Errorf("%s %v starts at %v, not between the host's boot (less an hour) %v and now", mf.GetName(), m.GetLabel(), *start, boot)
			case start != nil:
				checked++
				if earliest.IsZero() || start.Before(earliest) {
					earliest = *start
				}
			}
		}
	}
	for _, name := range []string{"redis_prober_requests_total", "redis_prober_latency_seconds", "redis_prober_burst_runs_total",
		"redis_prober_forks_total", "redis_prober_server_latency_seconds", "process_cpu_seconds_total", "go_gc_duration_seconds"} {
		if !seen[name] {
			t.Errorf("no %s in the scrape", name)
		}
	}
	t.Logf("%d counters, histograms and summaries with their start (the earliest %v)", checked, earliest)
}
