package main

// Hostile servers (issue 11): every reply a fake Redis can send that once
// crashed the prober or let it allocate without bound, against the real
// binary. The process must stay up with bounded memory, keep serving
// /metrics, count the failures and log each one once, naming the limit.

import (
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/faulttest"
)

// hostileCase answers every command but the handshake with reply.
type hostileCase struct {
	name  string
	reply faulttest.Reply
	// only, when set, is the one command answered with reply; the others
	// get a plausible answer, so the fault is in one place (INFO, say).
	only string
	want string // in the log line of the refusal
}

// repeat streams s n times, for replies too large to hold.
func repeat(s string, n int) func(io.Writer) error {
	return func(w io.Writer) error {
		chunk := []byte(strings.Repeat(s, max(1, (64<<10)/len(s))))
		per := (64 << 10) / len(s)
		for sent := 0; sent < n; sent += per {
			if _, err := w.Write(chunk); err != nil {
				return err
			}
		}
		return nil
	}
}

var hostileCases = []hostileCase{
	{name: "bulk-maxint64", reply: faulttest.Bytes("$9223372036854775807\r\n"), want: "more than 18 digits"},
	{name: "array-maxint64", reply: faulttest.Bytes("*9223372036854775807\r\n"), want: "more than 18 digits"},
	{name: "nested-3M", reply: faulttest.Reply{Stream: repeat("*1\r\n", 3_000_000)}, want: "nesting deeper than"},
	{name: "bulk-2GiB-streamed", reply: faulttest.Reply{Bytes: []byte("$2147483647\r\n"), Stream: repeat("x", 16<<20)}, want: "bulk length 2147483647 over the limit"},
	{name: "array-1e8", reply: faulttest.Bytes("*100000000\r\n"), want: "aggregate of 100000000 elements"},
	{name: "set-1e8", reply: faulttest.Bytes("~100000000\r\n"), want: "aggregate of 100000000 elements"},
	{name: "blob-error-2GiB", reply: faulttest.Bytes("!2147483647\r\n"), want: "bulk length 2147483647 over the limit"},
	{name: "map-1e8", reply: faulttest.Bytes("%100000000\r\n"), want: "aggregate of 100000000 elements"},
	{name: "line-100MB", reply: faulttest.Reply{Bytes: []byte("+"), Stream: repeat("a", 100<<20)}, want: "line longer than 64 KiB"},
	{name: "info-50MB", only: "INFO", reply: faulttest.Reply{Bytes: []byte("$52428800\r\n"), Stream: repeat("# Server\r\n", 5<<20)}, want: "over the limit of 8 MiB"},
}

func hostileServer(t *testing.T, c hostileCase) *faulttest.Listener {
	return faulttest.RESP(t, faulttest.Handshake(func(args []string) faulttest.Reply {
		if c.only != "" && args[0] != c.only {
			switch args[0] {
			case "PING":
				return faulttest.Bytes("+PONG\r\n")
			case "GET":
				return faulttest.Bytes("$-1\r\n")
			case "INFO":
				return faulttest.Bytes("$29\r\n# Server\r\nredis_version:7.0.15\r\n\r\n")
			}
			return faulttest.Bytes("+OK\r\n")
		}
		return c.reply
	}))
}

// peakRSS is the process's high-water resident memory in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/pid/status")
	return 0
}

// hostileRSSLimit is the stated bound for the whole hostile suite: one
// prober against every case at once.
const hostileRSSLimit = 200 << 20

func TestHostileServersRun(t *testing.T) {
	servers := make([]*faulttest.Listener, len(hostileCases))
	args := []string{"--probe.rate=20", "--probe.timeout=500ms", "--probe.connect-interval=300ms",
		"--collector.refresh-interval=300ms", "--burst.interval=0"}
	for i, c := range hostileCases {
		servers[i] = hostileServer(t, c)
		args = append(args, "--redis.addr="+servers[i].URL())
	}
	p := startProber(t, nil, args...)
	p.waitMetric(t, "every hostile target failing", func(m string) bool {
		for i, c := range hostileCases {
			if c.only == "" && probeResults(m, servers[i].Addr(), "error") < 10 {
				return false
			}
		}
		return true
	})
	// A few more seconds of reconnects and refusals.
	time.Sleep(3 * time.Second)
	m := p.scrape(t)
	for i, c := range hostileCases {
		t.Run(c.name, func(t *testing.T) {
			addr := servers[i].Addr()
			if c.only == "" {
				if v, ok := value(m, upSeries(addr)); !ok || v != 0 {
					t.Errorf("up %v (present %v), want 0", v, ok)
				}
			} else if v, _ := value(m, upSeries(addr)); v != 1 {
				t.Errorf("up %v: the probe should work while only %s is hostile", v, c.only)
			}
			lines := 0
			for _, line := range strings.Split(p.stderr.String(), "\n") {
				if strings.Contains(line, addr) && strings.Contains(line, c.want) {
					lines++
				}
			}
			if lines == 0 {
				t.Errorf("no log line for %s naming %q; log:\n%s", addr, c.want, grepLines(p.stderr.String(), addr))
			}
			// Once per place that reads it: the probe and connect probe
			// share one fault log; each collector and the change
			// detector log their own failure of the same INFO.
			if lines > 8 {
				t.Errorf("%d log lines naming %q, want it logged once per place it happens:\n%s", lines, c.want, grepLines(p.stderr.String(), addr))
			}
		})
	}
	rss := peakRSS(t, p.cmd.Process.Pid)
	t.Logf("peak RSS %.1f MiB against %d hostile servers", float64(rss)/(1<<20), len(hostileCases))
	if rss > hostileRSSLimit {
		t.Errorf("peak RSS %d MiB, want under %d MiB", rss>>20, hostileRSSLimit>>20)
	}
	p.stopWithin5s(t)
	if strings.Contains(p.stderr.String(), "panic") || strings.Contains(p.stderr.String(), "fatal error") {
		t.Errorf("panic in the log:\n%s", p.stderr)
	}
}

// The one-shot commands read the same replies: they fail with the guard's
// error, never a panic.
func TestHostileServersOneShot(t *testing.T) {
	for _, c := range hostileCases[:3] {
		t.Run(c.name, func(t *testing.T) {
			srv := hostileServer(t, c)
			for _, cmd := range [][]string{
				{"doctor", "--redis.addr=" + srv.URL()},
				{"burst", "--redis.addr=" + srv.URL(), "--test-time=1s", "--trials=1", "--clients=2"},
			} {
				code, out := runBinary(t, 20*time.Second, cmd...)
				if strings.Contains(out, "panic") || strings.Contains(out, "goroutine ") {
					t.Fatalf("%s: exit %d with a panic:\n%s", cmd[0], code, out)
				}
				if !strings.Contains(out, "RESP guard") {
					t.Errorf("%s: exit %d, output does not name the guard:\n%s", cmd[0], code, out)
				}
			}
		})
	}
}

// A burst whose server answers INFO sanely but every burst command with a
// reply the guard refuses loses its connection on each batch: it must redial
// with back-off (a trickle of dials), not thousands of times a second.
func TestHostileBurstBacksOff(t *testing.T) {
	info := "# Server\r\nredis_version:7.0.15\r\n# Replication\r\nrole:master\r\n# Persistence\r\nloading:0\r\n"
	srv := faulttest.RESP(t, faulttest.Handshake(func(args []string) faulttest.Reply {
		switch args[0] {
		case "INFO":
			return faulttest.Bytes("$" + strconv.Itoa(len(info)) + "\r\n" + info + "\r\n")
		case "PING":
			return faulttest.Bytes("+PONG\r\n")
		case "CONFIG":
			return faulttest.Bytes("*0\r\n")
		}
		return faulttest.Bytes("$9223372036854775807\r\n")
	}))
	code, out := runBinary(t, 30*time.Second, "burst", "--redis.addr="+srv.URL(), "--test-time=2s",
		"--trials=1", "--clients=2", "--max-errors=1", "--abort-p99=1h", "--rate=1000")
	if strings.Contains(out, "panic") {
		t.Fatalf("exit %d with a panic:\n%s", code, out)
	}
	// Two clients, each redialling after 50, 100, 200, 400, 800 ms and
	// then every second: about a dozen dials in two seconds.
	t.Logf("%d connections in a 2 s burst (exit %d)", srv.Accepted(), code)
	if n := srv.Accepted(); n > 30 {
		t.Errorf("%d connections to the garbage server in a 2 s burst, want a back-off trickle:\n%s", n, out)
	}
}
