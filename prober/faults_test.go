package prober

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/redis-prober/redis-prober/internal/resp"
	"github.com/redis/go-redis/v9"
)

// replyErr is an error reply from Redis (OOM, WRONGPASS, ...), as the
// probe's codec returns it.
type replyErr = resp.ErrorReply

var _ redis.Error = replyErr("")

// The probe's FaultLog is faultlog.Probe's spells (tested there) over
// classify: a nil reply (a missing key reads as no error) is an answer
// that ends a spell, and a refused AUTH is a spell Redis did not answer,
// over at the next answer of any command.
func TestFaultLogNilReplyEndsASpell(t *testing.T) {
	var buf bytes.Buffer
	f := NewFaultLog(slog.New(slog.NewTextHandler(&buf, nil)))
	for _, o := range []struct {
		cmd string
		err error
	}{
		{"get", nil}, // a missing key: not a fault
		{"ping", replyErr("NOAUTH Authentication required.")},
		{"get", replyErr("NOAUTH Authentication required.")},
		{"get", nil},
	} {
		_, answered := classify(o.err)
		f.Observe(o.cmd, o.err, answered)
	}
	if n := strings.Count(buf.String(), "probe failing"); n != 1 {
		t.Errorf("%d 'probe failing' lines, want 1:\n%s", n, &buf)
	}
	if n := strings.Count(buf.String(), "probe recovered"); n != 1 {
		t.Errorf("%d 'probe recovered' lines, want 1:\n%s", n, &buf)
	}
}

func TestClassifyAuthIsNotUp(t *testing.T) {
	for _, tc := range []struct {
		err      error
		res      Result
		answered bool
	}{
		{nil, ResultOK, true},
		{replyErr("OOM command not allowed"), ResultError, true},
		{replyErr("WRONGPASS invalid username-password pair or user is disabled."), ResultError, false},
		{replyErr("NOAUTH Authentication required."), ResultError, false},
		{errors.New("EOF"), ResultError, false},
		{replyErr("ERR invalid password"), ResultError, false},                         // Redis <= 5
		{replyErr("ERR Client sent AUTH, but no password is set"), ResultError, false}, // Redis <= 5
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
