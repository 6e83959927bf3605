package engine

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/internal/faultlog"
	"github.com/redis-prober/redis-prober/internal/nodeid"
	"github.com/redis-prober/redis-prober/prober"
)

// runNode runs the loops of one Redis server of a target (the server itself,
// one Cluster node, the current Sentinel primary) and cleans up after them.
// onError sees every failed probe, so a MOVED reply can refresh a Cluster's
// topology at once; extra are further housekeeping tasks of the node (a
// single server's topology check).
//
// The node's goroutine spends its life in RunTasks under this frame and its
// callers', and every task runs on top of them: the setup and the clean-up
// are functions of their own so that their copies of the target and of the
// services' Node are not on the stack while the tasks run. A stack that
// needs a byte over 16 KiB is given 32 KiB, and at 1,000 nodes that is 16
// MiB (docs/performance.md, "Measured reasons").
func (e *Engine) runNode(ctx context.Context, t *Target, cleanupTimeout time.Duration, onError func(error), extra ...Task) {
	n := e.startNode(ctx, t, onError, extra)
	defer n.close()
	// The housekeeping loop is this goroutine: a node costs the probe's
	// connections, this loop and the services that still want their own.
	RunTasks(ctx, n.housekeeping)
	n.runs.Wait()
	// The probe stops before the clean-up: no probe write may follow its
	// deletes. A replica holds only what its primary's keeper deletes.
	n.probeDone()
	if !t.ReadOnly {
		n.cleanup(ctx, cleanupTimeout)
	}
}

// runningNode is what a node's setup leaves to its loop and its end.
type runningNode struct {
	log          *slog.Logger
	control      *redis.Client
	keeper       *prober.Keeper
	keyTTL       time.Duration
	housekeeping []Task
	runs         sync.WaitGroup
	probeDone    func()
	dones        []func() // the services' Done, in the order they attached
	spell        *faultlog.Node
}

// startNode opens the node's control client, attaches every service and
// starts the probe and the services' own goroutines.
func (e *Engine) startNode(ctx context.Context, t *Target, onError func(error), extra []Task) *runningNode {
	log := t.Logger(e.log)
	cfg := t.Probe
	if t.ReadOnly {
		cfg.Commands = readCommands(cfg.Commands)
	}
	cfg.OnError = onError
	cfg.Poller = e.poller
	names := commandNames(cfg.Commands)
	rec := e.metrics.ForNode(t.Name, t.Node, names, t.Objective)
	spell := e.outages.Node(log, t.Endpoint.String(), t.ID().String())
	faults := prober.NewNodeFaultLog(log, spell)
	// Up to two control connections, opened on demand: the housekeeping
	// loop runs its tasks one at a time and holds one; a burst's control
	// commands and its clean-up at the end (while the keeper deletes the
	// probe keys) get the second rather than wait behind the loop.
	control := t.Endpoint.NewClient(cfg.Timeout, 2)
	info := newInfoCache(infoTTL)
	control.AddHook(info)
	n := &runningNode{log: log, control: control, keeper: prober.NewKeeper(control, cfg), keyTTL: cfg.KeyTTL, spell: spell}

	// A node of a Cluster or Sentinel target was logged as it joined (one
	// line for many): its details are for debugging.
	level := slog.LevelInfo
	if t.Node != "" {
		level = slog.LevelDebug
	}
	log.Log(ctx, level, "probing", "endpoint", t.Endpoint.String(), "rate", cfg.Rate,
		"commands", names, "connections", cfg.Connections, "read_only", t.ReadOnly)
	n.housekeeping = append([]Task(nil), extra...)
	if !t.ReadOnly {
		n.housekeeping = append(n.housekeeping, Task{Every: t.SeedInterval, Run: func(ctx context.Context) { _ = n.keeper.Seed(ctx) }})
	}
	if t.ConnectInterval > 0 {
		cp := prober.NewConnectProbe(t.Endpoint, cfg.Timeout, rec, faults)
		n.housekeeping = append(n.housekeeping, Task{Every: t.ConnectInterval, Run: cp.Once})
	}
	// Every service says what it needs of the node in its hooks: a tap on
	// the probe's samples, its errors, tasks on the housekeeping loop, a
	// goroutine of its own.
	var probeRec prober.Recorder = rec
	var runs []func(context.Context)
	var onErrors []func(error)
	nd := Node{Target: *t, Commands: names, Control: control, CachedInfo: info.fresh, Spell: spell}
	for _, svc := range e.services {
		h := svc.Attach(nd)
		if h.Done != nil {
			n.dones = append(n.dones, h.Done)
		}
		if h.Tap != nil {
			probeRec = h.Tap(probeRec)
		}
		if h.OnError != nil {
			onErrors = append(onErrors, h.OnError)
		}
		n.housekeeping = append(n.housekeeping, h.Tasks...)
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
	n.probeDone = prober.NewProbe(cfg, t.Endpoint, probeRec, faults).Start(ctx)
	for _, r := range runs {
		n.runs.Go(func() { r(ctx) })
	}
	return n
}

// cleanup deletes the node's probe keys once its loops have stopped.
func (n *runningNode) cleanup(ctx context.Context, timeout time.Duration) {
	// The parent is done; cleaning up gets its own short budget.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	if err := cleanupRetrying(cctx, n.keeper.Cleanup); err != nil {
		n.log.Warn("could not delete probe keys; they expire by their TTL", "err", err, "ttl", n.keyTTL)
	} else {
		n.log.Debug("probe keys deleted")
	}
}

// close tells the services the node has stopped, last attached first, and
// closes its control client.
func (n *runningNode) close() {
	for _, done := range slices.Backward(n.dones) {
		done()
	}
	n.control.Close()
	n.spell.Close()
}

// ID names the node the target's copy runs as.
func (t *Target) ID() nodeid.ID { return nodeid.ID{Target: t.Name, Node: t.Node} }

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
