package engine

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/redis-prober/redis-prober/prober"
)

// runNode runs the loops of one Redis server of a target (the server itself,
// one Cluster node, the current Sentinel primary) and cleans up after them.
// onError sees every failed probe, so a MOVED reply can refresh a Cluster's
// topology at once; extra are further housekeeping tasks of the node (a
// single server's topology check).
func (e *Engine) runNode(ctx context.Context, t Target, cleanupTimeout time.Duration, onError func(error), extra ...Task) {
	log := t.logger(e.log)
	cfg := t.Probe
	if t.ReadOnly {
		cfg.Commands = readCommands(cfg.Commands)
	}
	cfg.OnError = onError
	cfg.Poller = e.poller
	names := commandNames(cfg.Commands)
	rec := e.metrics.ForNode(t.Name, t.Node, names, t.Objective)
	faults := prober.NewFaultLog(log)
	// Up to two control connections, opened on demand: the housekeeping
	// loop runs its tasks one at a time and holds one; a burst's control
	// commands and its clean-up at the end (while the keeper deletes the
	// probe keys) get the second rather than wait behind the loop.
	control := t.Endpoint.NewClient(cfg.Timeout, 2)
	defer control.Close()
	info := newInfoCache(infoTTL)
	control.AddHook(info)
	keeper := prober.NewKeeper(control, cfg)

	// A node of a Cluster or Sentinel target was logged as it joined (one
	// line for many): its details are for debugging.
	level := slog.LevelInfo
	if t.Node != "" {
		level = slog.LevelDebug
	}
	log.Log(ctx, level, "probing", "endpoint", t.Endpoint.String(), "rate", cfg.Rate,
		"commands", names, "connections", cfg.Connections, "read_only", t.ReadOnly)
	housekeeping := append([]Task(nil), extra...)
	if !t.ReadOnly {
		housekeeping = append(housekeeping, Task{Every: t.SeedInterval, Run: func(ctx context.Context) { _ = keeper.Seed(ctx) }})
	}
	if t.ConnectInterval > 0 {
		cp := prober.NewConnectProbe(t.Endpoint, cfg.Timeout, rec, faults)
		housekeeping = append(housekeeping, Task{Every: t.ConnectInterval, Run: cp.Once})
	}
	// Every service says what it needs of the node in its hooks: a tap on
	// the probe's samples, its errors, tasks on the housekeeping loop, a
	// goroutine of its own.
	var probeRec prober.Recorder = rec
	var runs []func(context.Context)
	var onErrors []func(error)
	n := Node{Target: t, Commands: names, Control: control, CachedInfo: info.fresh}
	for _, svc := range e.services {
		h := svc.Attach(n)
		if h.Done != nil {
			defer h.Done()
		}
		if h.Tap != nil {
			probeRec = h.Tap(probeRec)
		}
		if h.OnError != nil {
			onErrors = append(onErrors, h.OnError)
		}
		housekeeping = append(housekeeping, h.Tasks...)
		if h.Run != nil {
			runs = append(runs, h.Run)
		}
	}
	if len(onErrors) > 0 {
		next := cfg.OnError
		cfg.OnError = func(err error) {
			for _, f := range onErrors {
				f(err)
			}
			if next != nil {
				next(err)
			}
		}
	}
	// The probe's workers need no goroutine here: with their connections
	// open they are the poller's.
	probeDone := prober.NewProbe(cfg, t.Endpoint, probeRec, faults).Start(ctx)
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Go(func() { r(ctx) })
	}
	// The housekeeping loop is this goroutine: a node costs the probe's
	// connections, this loop and the services that still want their own.
	RunTasks(ctx, housekeeping)
	wg.Wait()
	probeDone() // before the clean-up: no probe write may follow its deletes

	if t.ReadOnly {
		return // a replica holds only what its primary's keeper deletes
	}
	// The parent is done; cleaning up gets its own short budget.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := cleanupRetrying(cctx, keeper.Cleanup); err != nil {
		log.Warn("could not delete probe keys; they expire by their TTL", "err", err, "ttl", cfg.KeyTTL)
	} else {
		log.Debug("probe keys deleted")
	}
}

// readCommands keeps the commands a replica serves; PING stands in when none
// is left.
func readCommands(cmds []prober.Command) []prober.Command {
	var out []prober.Command
	for _, c := range cmds {
		if !c.Write && c.Name != "eval" {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		ping, _ := prober.ParseCommands("ping")
		out = ping
	}
	return out
}

// cleanupRetrying runs clean-up, again while it fails to connect and its
// budget lasts. A control client whose dials failed a moment ago (Redis
// was down, and is back) fails fast with the old dial error until its
// pool's own background dial succeeds, which go-redis tries once a
// second: a clean-up at exit right after a restart would otherwise leave
// every key to its TTL with Redis up.
func cleanupRetrying(ctx context.Context, cleanup func(context.Context) error) error {
	for {
		err := cleanup(ctx)
		var oe *net.OpError
		if err == nil || !errors.As(err, &oe) || oe.Op != "dial" {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}
