package collector

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/internal/faulttest"
	"github.com/redis-prober/redis-prober/internal/resp"
	"github.com/redis-prober/redis-prober/prober"
)

// syncBuffer is a log sink safe for the test to read while the handler
// writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// respBulk is a RESP2 bulk string of any bytes.
func respBulk(s string) string { return fmt.Sprintf("$%d\r\n%s\r\n", len(s), s) }

// TestHostileServerEndToEnd: a scripted Redis answers INFO with invalid
// UTF-8 and a negative fork time, LATENCY LATEST with 100,000 events whose
// names are not UTF-8, and LATENCY HISTOGRAM with two names carrying
// escape sequences that sanitise alike, over the wire through go-redis. Before the fix every scrape
// panicked in MustNewConstMetric and /metrics grew to 300,000 series. Now:
// no panic, /metrics is served whole and bounded, the drops are counted on
// every refresh, and the log says so once, with nothing at error level.
func TestHostileServerEndToEnd(t *testing.T) {
	info := infoFixture(t, "hostile", "info-invalid-utf8.txt")
	info = setInfoField(t, info, "latest_fork_usec", "-1")
	const events = 100_000
	var latest strings.Builder
	fmt.Fprintf(&latest, "*%d\r\n", events)
	for i := range events {
		fmt.Fprintf(&latest, "*4\r\n%s:%d\r\n:5\r\n:12\r\n", respBulk(fmt.Sprintf("ev\xff%06d", i)), 1795985000+i)
	}
	histogram := "*4\r\n" + respBulk("get\x1b[2J\x07") + "*4\r\n" + respBulk("calls") + ":10\r\n" + respBulk("histogram_usec") + "*4\r\n:1\r\n:8\r\n:2\r\n:10\r\n" +
		respBulk("get\x1b[2J\x00") + "*4\r\n" + respBulk("calls") + ":10\r\n" + respBulk("histogram_usec") + "*2\r\n:1\r\n:10\r\n"
	srv := faulttest.RESP(t, faulttest.Handshake(func(args []string) faulttest.Reply {
		cmd := strings.ToUpper(strings.Join(args, " "))
		switch {
		case cmd == "INFO":
			return faulttest.Bytes(respBulk(info))
		case cmd == "INFO COMMANDSTATS":
			return faulttest.Bytes(respBulk("# Commandstats\r\ncmdstat_get\xff:calls=10,usec=-5\r\n"))
		case cmd == "LATENCY LATEST":
			return faulttest.Bytes(latest.String())
		case strings.HasPrefix(cmd, "LATENCY HISTOGRAM"):
			return faulttest.Bytes(histogram)
		case strings.HasPrefix(cmd, "CONFIG GET"):
			return faulttest.Bytes("*2\r\n" + respBulk("maxmemory") + respBulk("\xff\x00"))
		case cmd == "PING":
			return faulttest.Bytes("+PONG\r\n")
		}
		return faulttest.Bytes("-ERR unknown command\r\n")
	}))
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), Protocol: 2, DisableIdentity: true, MaxRetries: -1})
	defer client.Close()

	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	tgt := NewTarget(TargetConfig{Name: "hostile", Commands: []string{"get"}, Paths: hostPaths("tuned"), Log: log}, client)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(tgt)
	handler := promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelError)})

	var lastDropped float64
	for refresh := 1; refresh <= 3; refresh++ {
		tgt.Refresh(t.Context())
		for _, c := range []string{"info", "latency", "checks"} {
			if err := tgt.Snapshot().Errors[c]; err != nil {
				t.Errorf("refresh %d: collector %s: %v", refresh, c, err)
			}
		}
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		body := rec.Body.String()
		if rec.Code != http.StatusOK || rec.Body.Len() > 256<<10 {
			t.Fatalf("refresh %d: /metrics %d, %d bytes", refresh, rec.Code, rec.Body.Len())
		}
		if n := strings.Count(body, "redis_prober_server_latency_event_seconds{"); n != maxLatencyEvents {
			t.Errorf("refresh %d: %d event series, want %d", refresh, n, maxLatencyEvents)
		}
		if strings.Contains(body, "\x1b") || strings.Contains(body, "redis_prober_fork_last_seconds{") {
			t.Errorf("refresh %d: an escape sequence or the negative fork time is exported", refresh)
		}
		mfs := gatherTarget(t, tgt)
		checkLabels(t, mfs)
		d := droppedSeries(t, mfs, "latency")
		if want := float64(refresh) * ((events-maxLatencyEvents)*latencyEventSeries + 1); d != want {
			t.Errorf("refresh %d: dropped latency series %v, want %v", refresh, d, want)
		}
		if d <= lastDropped {
			t.Errorf("refresh %d: the dropped counter did not grow", refresh)
		}
		lastDropped = d
		if got := droppedSeries(t, mfs, "info"); got != float64(refresh) {
			t.Errorf("refresh %d: dropped info series %v, want %d (latest_fork_usec)", refresh, got, refresh)
		}
	}
	out := logs.String()
	if strings.Contains(out, "level=ERROR") {
		t.Errorf("errors logged:\n%.2000s", out)
	}
	if n := strings.Count(out, "collector dropped series"); n != 1 {
		t.Errorf("the drop was logged %d times, want once:\n%.2000s", n, out)
	}
	if n := strings.Count(out, "INFO values out of range ignored"); n != 1 {
		t.Errorf("the absurd INFO value was logged %d times, want once:\n%.2000s", n, out)
	}
}

// TestHostileCommandlogOverTheWire: a "Valkey 8.1" whose COMMANDLOG GET is
// a million nested arrays, then an array claiming 2^31 entries, on a
// connection guarded as the engine's control connections are
// (prober.GuardConn, resp.Control). Each fails that refresh of the
// commandlog collector with an error; nothing panics or allocates the
// claimed size, and the next refresh on a fresh connection works.
func TestHostileCommandlogOverTheWire(t *testing.T) {
	info := infoFixture(t, "info", "valkey-8.1.txt")
	var mu sync.Mutex
	gets := 0
	srv := faulttest.RESP(t, faulttest.Handshake(func(args []string) faulttest.Reply {
		cmd := strings.ToUpper(strings.Join(args, " "))
		switch {
		case cmd == "INFO":
			return faulttest.Bytes(respBulk(info))
		case cmd == "LATENCY LATEST":
			return faulttest.Bytes("*0\r\n")
		case strings.HasPrefix(cmd, "COMMANDLOG LEN"):
			return faulttest.Bytes(":1\r\n")
		case strings.HasPrefix(cmd, "COMMANDLOG GET"):
			mu.Lock()
			gets++
			n := gets
			mu.Unlock()
			switch n {
			case 1:
				return faulttest.Reply{Stream: func(w io.Writer) error {
					for range 1_000_000 {
						if _, err := io.WriteString(w, "*1\r\n"); err != nil {
							return err
						}
					}
					return nil
				}}
			case 2:
				return faulttest.Bytes("*2147483647\r\n*6\r\n:1\r\n")
			}
			return faulttest.Bytes("*1\r\n*6\r\n:1\r\n:1796135633\r\n:50112\r\n*1\r\n" + respBulk("get") + respBulk("127.0.0.1:1") + respBulk(""))
		}
		return faulttest.Bytes("-ERR unknown command\r\n")
	}))
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), Protocol: 2, DisableIdentity: true, MaxRetries: -1,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			gc, _ := prober.GuardConn(c, resp.Control)
			return gc, nil
		}})
	defer client.Close()
	on := Enabled{"info": true, "latency": true, "commandlog": true}
	tgt := NewTarget(TargetConfig{Name: "hostile", Paths: hostPaths("tuned"), Enabled: on}, client)
	for refresh, wantOK := range []bool{false, false, true} {
		tgt.Refresh(t.Context())
		s := tgt.Snapshot()
		t.Logf("refresh %d: commandlog: %v", refresh+1, s.Errors["commandlog"])
		if err := s.Errors["commandlog"]; (err == nil) != wantOK {
			t.Errorf("refresh %d: commandlog error %v, want ok=%v", refresh+1, err, wantOK)
		}
		if err := s.Errors["info"]; err != nil {
			t.Errorf("refresh %d: info: %v", refresh+1, err)
		}
		gatherTarget(t, tgt)
	}
}
