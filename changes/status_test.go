package changes

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redis-prober/redis-prober/engine"
	"github.com/redis-prober/redis-prober/internal/host"
	"github.com/redis-prober/redis-prober/internal/redistest"
	"github.com/redis-prober/redis-prober/prober"
)

// TestStatusShowsTheLastChange: on a real engine and Redis, the status
// page reads the change service's last change of a node, with the probe's
// latency before it and since, and forgets it when the node stops.
func TestStatusShowsTheLastChange(t *testing.T) {
	srv := redistest.Start(t)
	name, ep, err := engine.ParseAddr(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := prober.ParseCommands("ping,get")
	if err != nil {
		t.Fatal(err)
	}
	tgt := engine.Target{Name: name, Endpoint: ep, Objective: 5 * time.Millisecond, SeedInterval: 200 * time.Millisecond,
		Probe: prober.ProbeConfig{Rate: 100, Timeout: time.Second, Commands: cmds, Connections: 1, DataSize: 16,
			KeyTTL: time.Minute, Namespace: prober.Namespace{Prefix: "redis-prober:", Tag: "changes-test"}}}
	log := slog.New(slog.DiscardHandler)
	m := prober.NewMetrics(prometheus.NewRegistry())
	svc := New(Config{Interval: 20 * time.Millisecond, Window: time.Minute, MinSamples: 1,
		Paths: host.Paths{ProcFS: t.TempDir(), SysFS: t.TempDir()}}, log, m)
	status := engine.NewStatus(engine.StatusSources{Changes: svc})
	e := engine.NewWithMetrics(m, log, svc, status)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Run(ctx, engine.Config{Targets: []engine.Target{tgt}, CleanupTimeout: 3 * time.Second})
	}()
	stop := sync.OnceFunc(func() { cancel(); <-done })
	defer stop()

	one := func() engine.NodeStatus {
		ns := status.Snapshot("", time.Now())
		if len(ns) != 1 {
			return engine.NodeStatus{}
		}
		return ns[0]
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	waitFor("probe samples", func() bool { return one().All.Last1m.Count > 20 })
	if lc := one().LastChange; lc != nil {
		t.Errorf("a change before any: %+v", lc)
	}
	if err := srv.Client().ConfigSet(t.Context(), "appendfsync", "always").Err(); err != nil {
		t.Fatal(err)
	}
	waitFor("the config change on the status", func() bool { return one().LastChange != nil })
	lc := one().LastChange
	if !slices.Equal(lc.Kinds, []string{KindConfig}) || lc.At.IsZero() || lc.MinSamples != 1 {
		t.Errorf("last change = %+v", lc)
	}
	if len(lc.Before) != len(cmds) || lc.Before[0].Count == 0 || lc.Before[0].P99 <= 0 {
		t.Errorf("before the change: %+v", lc.Before)
	}
	waitFor("samples since the change", func() bool {
		a := one().LastChange.After
		return len(a) > 0 && a[0].Count > 0 && a[0].P99 > 0
	})
	stop()
	if _, ok := svc.LastChange(tgt.ID()); ok {
		t.Error("the last change of a stopped node is kept")
	}
}
