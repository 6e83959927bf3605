package faultlog

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// replyErr is an error reply from Redis (OOM, WRONGPASS, ...): Redis
// answered it.
type replyErr string

func (e replyErr) Error() string { return string(e) }

// answered is what the probe's classify says of these errors: a reply
// (or success) is an answer, a timeout or a broken connection is not.
func answered(err error) bool {
	var r replyErr
	return err == nil || errors.As(err, &r)
}

// A Probe log must turn a long fault into a handful of lines, whatever its shape.
func TestFaultLogLinesPerSpell(t *testing.T) {
	oom := replyErr("OOM command not allowed when used memory > 'maxmemory'.")
	timeout := errors.New("read: i/o timeout")
	eof := errors.New("EOF")
	type obs struct {
		cmd string
		err error
	}
	repeat := func(n int, round ...obs) []obs {
		var out []obs
		for range n {
			out = append(out, round...)
		}
		return out
	}
	for _, tc := range []struct {
		name              string
		seq               []obs
		failing, recovery int
	}{
		{"healthy", repeat(100, obs{"ping", nil}, obs{"get", nil}), 0, 0},
		{"down then up", append(repeat(50, obs{"ping", timeout}, obs{"get", timeout}), repeat(3, obs{"ping", nil}, obs{"get", nil})...), 1, 1},
		{"writes refused, reads fine", repeat(100, obs{"ping", nil}, obs{"get", nil}, obs{"set", oom}), 1, 0},
		{"two faults alternating", repeat(100, obs{"ping", timeout}, obs{"connect", eof}), 2, 0},
		{"OOM ends", append(repeat(10, obs{"get", nil}, obs{"set", oom}), obs{"set", nil}), 1, 1},
		{"good and bad replies alternating", repeat(100, obs{"ping", nil}, obs{"ping", eof}), 1, 1},
		{"down, then one command answers", append(repeat(5, obs{"ping", timeout}, obs{"get", timeout}, obs{"connect", eof}), obs{"ping", nil}), 2, 1},
		{"down, up, down again with the same error", append(append(repeat(5, obs{"ping", timeout}), obs{"ping", nil}), repeat(5, obs{"ping", timeout})...), 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			f := Probe(slog.New(slog.NewTextHandler(&buf, nil)))
			for _, o := range tc.seq {
				f.Observe(o.cmd, o.err, answered(o.err))
			}
			if n := strings.Count(buf.String(), "probe failing"); n != tc.failing {
				t.Errorf("%d 'probe failing' lines, want %d:\n%s", n, tc.failing, &buf)
			}
			if n := strings.Count(buf.String(), "probe recovered"); n != tc.recovery {
				t.Errorf("%d 'probe recovered' lines, want %d:\n%s", n, tc.recovery, &buf)
			}
		})
	}
}

// Error text with a changing part (a port, a counter) is bounded.
func TestFaultLogDistinctErrorsBounded(t *testing.T) {
	var buf bytes.Buffer
	f := Probe(slog.New(slog.NewTextHandler(&buf, nil)))
	for i := range 1000 {
		f.Observe("ping", errors.New("dial tcp 127.0.0.1:"+strings.Repeat("9", i%100+1)), false)
	}
	if n := strings.Count(buf.String(), "probe failing"); n != MaxDistinct {
		t.Errorf("%d lines for 100 distinct errors, want %d", n, MaxDistinct)
	}
}

// A Collectors log logs each collector's fault once per scrape spell: again
// only when its error changes, a recovery when it works again, and "no data
// here" at debug, not as an alarm.
func TestCollectorsLogOncePerErrorAndCollector(t *testing.T) {
	noData := errors.New("no data")
	var buf bytes.Buffer
	f := Collectors(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), noData)
	refused := errors.New("CONFIG GET: NOPERM")
	for range 10 { // scrapes
		f.Observe("config", refused, true)
		f.Observe("info", nil, true)
		f.Observe("thp", fmt.Errorf("thp: %w", noData), true)
	}
	f.Observe("config", errors.New("CONFIG GET: i/o timeout"), true) // changed
	f.Observe("config", nil, true)                                   // recovered
	f.Observe("config", refused, true)                               // failing again
	lines := func(msg string) int { return strings.Count(buf.String(), `msg="`+msg+`"`) }
	if n := lines("collector failed"); n != 3 {
		t.Errorf("%d 'collector failed' lines, want 3 (one per distinct error in a row):\n%s", n, &buf)
	}
	if n := lines("collector recovered"); n != 1 {
		t.Errorf("%d 'collector recovered' lines, want 1:\n%s", n, &buf)
	}
	if n := lines("collector has no data here"); n != 1 {
		t.Errorf("%d 'no data' lines, want 1:\n%s", n, &buf)
	}
	if strings.Contains(buf.String(), "level=WARN msg=\"collector has no data") || strings.Contains(buf.String(), "collector=info") {
		t.Errorf("no data must be debug, and a healthy collector silent:\n%s", &buf)
	}
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if strings.Contains(l, "collector failed") && !strings.Contains(l, "level=WARN") {
			t.Errorf("a failure is a warning: %s", l)
		}
	}
}

// The success path takes no lock and allocates nothing while nothing fails.
func TestObserveSuccessDoesNotAllocate(t *testing.T) {
	f := Probe(nil)
	if n := testing.AllocsPerRun(1000, func() { f.Observe("ping", nil, true) }); n != 0 {
		t.Errorf("%v allocations per success", n)
	}
}
