package collector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/internal/faultlog"
	"github.com/redis-prober/redis-prober/internal/redistest"
)

// Which failures say "Redis did not answer" (one spell of the node, one
// line) and which are a collector's own (a line of its own).
func TestNotAnswered(t *testing.T) {
	refused := fmt.Errorf("INFO: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
	noperm := fmt.Errorf("INFO refused: %w (NOPERM)", ErrNoData)
	for _, tc := range []struct {
		name         string
		err, infoErr error
		want         bool
	}{
		{"refused dial", fmt.Errorf("LATENCY LATEST: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), nil, true},
		{"broken connection", fmt.Errorf("CONFIG GET: %w", io.EOF), nil, true},
		{"timeout", fmt.Errorf("LATENCY LATEST: %w", context.DeadlineExceeded), nil, true},
		{"for want of INFO", refused, refused, true},
		{"for want of INFO, joined", errors.Join(refused, errors.New("host facts")), refused, true},
		{"an error reply", fmt.Errorf("LATENCY LATEST: %w", replyError("ERR something")), nil, false},
		{"INFO refused by ACL", noperm, noperm, false},
		{"a file of this host", &fs.PathError{Op: "open", Path: "/proc/1/status", Err: fs.ErrNotExist}, nil, false},
	} {
		if got := notAnswered(tc.err, tc.infoErr); got != tc.want {
			t.Errorf("%s: notAnswered(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// ctxDoer answers every command with its context's error, as go-redis
// does for a cancelled call.
type ctxDoer struct{}

func (ctxDoer) Do(ctx context.Context, args ...any) *redis.Cmd {
	c := redis.NewCmd(ctx, args...)
	c.SetErr(ctx.Err())
	return c
}

// A refresh cut by its caller (the node stopping, a reload) says nothing
// of Redis: its collectors report no data, and nothing is logged.
func TestRefreshCutByCallerLogsNothing(t *testing.T) {
	logs := &syncBuffer{}
	tgt := NewTarget(TargetConfig{Name: "t", Paths: hostPaths("tuned"),
		Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}, ctxDoer{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	tgt.Refresh(ctx)
	if err := tgt.Snapshot().Errors["info"]; !errors.Is(err, context.Canceled) {
		t.Errorf("info error %v, want the cancel", err)
	}
	if out := logs.String(); strings.Contains(out, "collector") {
		t.Errorf("a cancelled refresh logged:\n%s", out)
	}
}

// With the node's spell, a refresh Redis did not answer is the spell's
// (shared with the node's probe), not a collector's line; a refresh that
// reads the node is its answer.
func TestRefreshRedisDownIsTheNodesSpell(t *testing.T) {
	srv := redistest.Start(t)
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	spell := faultlog.NewOutages(log).Node(log, srv.URL(), "t")
	tgt := NewTarget(TargetConfig{Name: "t", Paths: hostPaths("tuned"), Commands: []string{"ping"}, Log: log, Spell: spell}, srv.Client())
	tgt.Refresh(t.Context())
	if spell.Failing() {
		t.Fatal("the node is in a spell while Redis answers")
	}
	srv.Kill()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	tgt.Refresh(ctx)
	if !spell.Failing() {
		t.Error("the node is not in a spell after a refresh Redis did not answer")
	}
	if out := logs.String(); strings.Contains(out, "collector failed") {
		t.Errorf("a refresh Redis did not answer logged a collector's failure:\n%s", out)
	}
}
