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
	"github.com/redis-prober/redis-prober/internal/host"
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

// outageRig runs targets spread over servers in one engine with the
// collectors, and keeps what they log.
type outageRig struct {
	t       *testing.T
	e       *Engine
	cs      *Collectors
	rec     *records
	targets []Target
	oks     map[string]float64 // the targets' answered requests at the last healthy look
}

func newOutageRig(t *testing.T, servers []*redistest.Server, perServer int) *outageRig {
	rec := &records{}
	log := slog.New(recordHandler{rec: rec})
	reg := prometheus.NewRegistry()
	cs := NewCollectors(CollectorsConfig{Log: log, Registerer: reg, Paths: host.DefaultPaths(),
		Enabled: collector.AllEnabled(), Interval: 500 * time.Millisecond})
	r := &outageRig{t: t, e: New(reg, log, cs), cs: cs, rec: rec, oks: map[string]float64{}}
	cmds, err := prober.ParseCommands("ping,get,set")
	if err != nil {
		t.Fatal(err)
	}
	for _, srv := range servers {
		_, ep, err := ParseAddr(srv.URL())
		if err != nil {
			t.Fatal(err)
		}
		for range perServer {
			name := fmt.Sprintf("t%02d", len(r.targets))
			r.targets = append(r.targets, Target{
				Name:     name,
				Endpoint: ep,
				Probe: prober.ProbeConfig{Rate: 10, Timeout: 500 * time.Millisecond, Commands: cmds, Connections: 1,
					DataSize: 16, KeyTTL: time.Minute, Namespace: prober.Namespace{Prefix: "redis-prober:", Tag: name}},
				ConnectInterval: 500 * time.Millisecond,
				SeedInterval:    time.Minute,
				Objective:       5 * time.Millisecond,
			})
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.e.Run(ctx, Config{Targets: r.targets, CleanupTimeout: 2 * time.Second})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return r
}

// healthy says whether every target has answered requests since the last
// look and every node's collectors read it.
func (r *outageRig) healthy() bool {
	for _, tc := range r.targets {
		var n float64
		for _, c := range []string{"ping", "get", "set"} {
			n += testutil.ToFloat64(r.e.Metrics().RequestsCounter(tc.Name, "", c, prober.PhaseProbe, prober.ResultOK))
		}
		if n < r.oks[tc.Name]+3 {
			return false
		}
		r.oks[tc.Name] = n
	}
	r.cs.checks.mu.Lock()
	defer r.cs.checks.mu.Unlock()
	if len(r.cs.checks.nodes) < len(r.targets) {
		return false
	}
	for _, tgt := range r.cs.checks.nodes {
		for _, err := range tgt.Snapshot().Errors {
			if err != nil {
				return false
			}
		}
	}
	return true
}

// fault runs fault once every target is healthy and returns the lines
// logged from then until every target is healthy again and its spell's
// lines are out: those at warn or above, and the others.
func (r *outageRig) fault(fault func()) (warns, others []string) {
	t := r.t
	waitFor(t, 15*time.Second, "every target probed and collected", r.healthy)
	_, mark := r.rec.since(0)
	fault()
	waitFor(t, 15*time.Second, "every target probed and collected after the fault", r.healthy)
	// A spell's lines wait a window for other nodes, its end a grace; a
	// late failure (a pooled connection's stale dial error) would be told
	// within them too.
	time.Sleep(faultlog.Grace + 2*faultlog.Window)
	got, _ := r.rec.since(mark)
	for _, rec := range got {
		if rec.Level >= slog.LevelWarn {
			warns = append(warns, line(rec))
		} else if rec.Level >= slog.LevelInfo {
			others = append(others, line(rec))
		}
	}
	t.Logf("%d lines at warn or above, %d at info:\n%s\n%s", len(warns), len(others),
		strings.Join(warns, "\n"), strings.Join(others, "\n"))
	return warns, others
}

// A restart of the one Redis behind 20 targets, probed and collected from
// (stopped for longer than the probe's timeout, then started on the same
// port), is a few lines in all: a node's probe commands, its connect probe
// and its collectors see one spell of the node, and the nodes of the one
// server failing together are one line with their count.
func TestRestartBehindManyTargetsLogsAFewLines(t *testing.T) {
	const targets = 20
	srv := redistest.Start(t)
	r := newOutageRig(t, []*redistest.Server{srv}, targets)
	warns, others := r.fault(func() {
		// Down for longer than the probe's timeout and a few collector
		// refreshes: every source of every node sees it.
		srv.Kill()
		time.Sleep(3 * time.Second)
		srv.Restart()
	})
	// At most two a target, as the issue asks; one spell of one server
	// is one line.
	if len(warns) > 2*targets || len(warns) == 0 {
		t.Errorf("%d lines at warn or above for a restart behind %d targets, want 1 to %d", len(warns), targets, 2*targets)
	}
	if !slices.ContainsFunc(others, func(l string) bool { return strings.Contains(l, "recovered") }) {
		t.Error("no recovery line after the restart")
	}
	if len(others) > 2*targets {
		t.Errorf("%d lines at info for a restart behind %d targets, want at most %d", len(others), targets, 2*targets)
	}
}

// Every probe of 20 targets on five servers times out at once (the five
// stopped together for longer than the probe's timeout, as a stall of the
// prober's own host would look): a handful of lines, not one a target.
func TestStallOfEveryServerLogsAHandfulOfLines(t *testing.T) {
	const perServer = 4
	var servers []*redistest.Server
	for range 5 {
		servers = append(servers, redistest.Start(t))
	}
	r := newOutageRig(t, servers, perServer)
	warns, others := r.fault(func() {
		for _, s := range servers {
			s.Pause()
		}
		time.Sleep(2 * time.Second)
		for _, s := range servers {
			s.Resume()
		}
	})
	if len(warns) == 0 || len(warns) > 5 {
		t.Errorf("%d lines at warn or above for %d targets timing out together, want 1 to 5", len(warns), len(r.targets))
	}
	if len(others) > 5 {
		t.Errorf("%d lines at info for %d targets timing out together, want at most 5", len(others), len(r.targets))
	}
}
