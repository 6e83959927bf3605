package engine

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/redis-prober/redis-prober/collector"
	"github.com/redis-prober/redis-prober/internal/faultlog"
	"github.com/redis-prober/redis-prober/internal/redistest"
	"github.com/redis-prober/redis-prober/prober"
)

// recordHandler keeps every record logged through it, with the attributes
// its loggers were given (the target of a node's logger).
type recordHandler struct {
	attrs []slog.Attr
	rec   *records
}

type records struct {
	mu   sync.Mutex
	list []slog.Record
}

func (h recordHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h recordHandler) Handle(_ context.Context, r slog.Record) error {
	r = r.Clone()
	r.AddAttrs(h.attrs...)
	h.rec.mu.Lock()
	defer h.rec.mu.Unlock()
	h.rec.list = append(h.rec.list, r)
	return nil
}

func (h recordHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return recordHandler{attrs: append(append([]slog.Attr(nil), h.attrs...), as...), rec: h.rec}
}

func (h recordHandler) WithGroup(string) slog.Handler { return h }

// since returns the records from mark on, and the mark of their end.
func (r *records) since(mark int) ([]slog.Record, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]slog.Record(nil), r.list[mark:]...), len(r.list)
}

func line(r slog.Record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %q", r.Level, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%q", a.Key, a.Value.String())
		return true
	})
	return b.String()
}

// A restart of the one Redis behind 20 targets, probed and collected from
// (stopped for longer than the probe's timeout, then started on the same
// port), is a few lines in all: a node's probe commands, its connect probe
// and its collectors see one spell of the node, and the nodes of the one
// server failing together are one line with their count.
func TestRestartBehindManyTargetsLogsAFewLines(t *testing.T) {
	const targets = 20
	srv := redistest.Start(t)
	rec := &records{}
	log := slog.New(recordHandler{rec: rec})
	reg := prometheus.NewRegistry()
	cs := NewCollectors(CollectorsConfig{Log: log, Registerer: reg, Paths: collector.DefaultPaths(),
		Enabled: collector.AllEnabled(), Interval: 500 * time.Millisecond})
	e := New(reg, log, cs)
	_, ep, err := ParseAddr(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := prober.ParseCommands("ping,get,set")
	if err != nil {
		t.Fatal(err)
	}
	var cfg Config
	for i := range targets {
		cfg.Targets = append(cfg.Targets, Target{
			Name:     fmt.Sprintf("t%02d", i),
			Endpoint: ep,
			Probe: prober.ProbeConfig{Rate: 10, Timeout: 500 * time.Millisecond, Commands: cmds, Connections: 1,
				DataSize: 16, KeyTTL: time.Minute, Namespace: prober.Namespace{Prefix: "redis-prober:", Tag: fmt.Sprintf("t%02d", i)}},
			ConnectInterval: 500 * time.Millisecond,
			SeedInterval:    time.Minute,
			Objective:       5 * time.Millisecond,
		})
	}
	cfg.CleanupTimeout = 2 * time.Second
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Run(ctx, cfg)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	ok := func(name string) float64 {
		var sum float64
		for _, c := range []string{"ping", "get", "set"} {
			sum += testutil.ToFloat64(e.Metrics().RequestsCounter(name, "", c, prober.PhaseProbe, prober.ResultOK))
		}
		return sum
	}
	collected := func() bool {
		cs.checks.mu.Lock()
		defer cs.checks.mu.Unlock()
		if len(cs.checks.nodes) < targets {
			return false
		}
		for _, tgt := range cs.checks.nodes {
			for _, err := range tgt.Snapshot().Errors {
				if err != nil {
					return false
				}
			}
		}
		return true
	}
	// oks are the targets' answered requests at the last healthy look.
	oks := map[string]float64{}
	healthy := func() bool {
		for _, tc := range cfg.Targets {
			n := ok(tc.Name)
			if n < oks[tc.Name]+3 {
				return false
			}
			oks[tc.Name] = n
		}
		return collected()
	}
	waitFor(t, 15*time.Second, "every target probed and collected", healthy)
	_, mark := rec.since(0)

	// Down for longer than the probe's timeout and a few collector
	// refreshes: every source of every node sees it.
	srv.Kill()
	time.Sleep(3 * time.Second)
	srv.Restart()
	waitFor(t, 15*time.Second, "every target probed and collected after the restart", healthy)
	waitFor(t, 10*time.Second, "a recovery line", func() bool {
		got, _ := rec.since(mark)
		return slices.ContainsFunc(got, func(r slog.Record) bool { return strings.Contains(r.Message, "recovered") })
	})
	// A late failure (a pooled connection's stale dial error) would be
	// told by now.
	time.Sleep(faultlog.Grace + faultlog.Window)
	got, _ := rec.since(mark)
	var warns, recoveries []string
	for _, r := range got {
		switch {
		case r.Level >= slog.LevelWarn:
			warns = append(warns, line(r))
		case strings.Contains(r.Message, "recovered"):
			recoveries = append(recoveries, line(r))
		}
	}
	// At most two a target, as the issue asks; one spell of one server
	// is one line.
	if len(warns) > 2*targets || len(warns) == 0 {
		t.Errorf("%d lines at warn or above for a restart behind %d targets, want 1 to %d:\n%s",
			len(warns), targets, 2*targets, strings.Join(warns, "\n"))
	}
	if len(recoveries) > 2*targets {
		t.Errorf("%d recovery lines for a restart behind %d targets, want at most %d", len(recoveries), targets, 2*targets)
	}
	t.Logf("%d warnings, %d recovery lines:\n%s\n%s", len(warns), len(recoveries),
		strings.Join(warns, "\n"), strings.Join(recoveries, "\n"))
}
