package prober

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// replyErr is an error reply from Redis (OOM, WRONGPASS, ...).
type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

var _ redis.Error = replyErr("")

// FaultLog must turn a long fault into a handful of lines, whatever its shape.
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
			f := NewFaultLog(slog.New(slog.NewTextHandler(&buf, nil)))
			for _, o := range tc.seq {
				_, answered := classify(o.err)
				f.Observe(o.cmd, o.err, answered)
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
	f := NewFaultLog(slog.New(slog.NewTextHandler(&buf, nil)))
	for i := range 1000 {
		f.Observe("ping", errors.New("dial tcp 127.0.0.1:"+strings.Repeat("9", i%100+1)), false)
	}
	if n := strings.Count(buf.String(), "probe failing"); n != maxDistinctFaults {
		t.Errorf("%d lines for 100 distinct errors, want %d", n, maxDistinctFaults)
	}
}

func TestClassifyAuthIsNotUp(t *testing.T) {
	for _, tc := range []struct {
		err      error
		res      Result
		answered bool
	}{
		{nil, ResultOK, true},
		{redis.Nil, ResultOK, true},
		{replyErr("OOM command not allowed"), ResultError, true},
		{replyErr("WRONGPASS invalid username-password pair or user is disabled."), ResultError, false},
		{replyErr("NOAUTH Authentication required."), ResultError, false},
		{errors.New("EOF"), ResultError, false},
		{replyErr("ERR invalid password"), ResultError, false},                                                                                                         // Redis <= 5
		{replyErr("ERR Client sent AUTH, but no password is set"), ResultError, false},                                                                                 // Redis <= 5
		{replyErr("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"), ResultError, false}, // Redis 6+
		{replyErr("WRONGPASS invalid username-password pair or user is disabled."), ResultError, false},                                                                // Redis 7/8, Valkey
		{replyErr("DENIED Redis is running in protected mode because protected mode is enabled"), ResultError, false},
		{replyErr("NOPERM User probe has no permissions to run the 'get' command"), ResultError, true},
		{replyErr("ERR unknown command 'FOO'"), ResultError, true},
	} {
		res, answered := classify(tc.err)
		if res != tc.res || answered != tc.answered {
			t.Errorf("classify(%v) = %v, %v; want %v, %v", tc.err, res, answered, tc.res, tc.answered)
		}
	}
}
