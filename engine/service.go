package engine

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/internal/faultlog"
	"github.com/redis-prober/redis-prober/prober"
)

// Service does per-node work beside the probe: the collectors' refresh,
// periodic bursts, change detection, the status page's history, the
// attribution of slow requests. The engine attaches every service to every
// node as the node starts, before its probe, and the service says in the
// hooks it returns what it needs of the node; nothing else is asked of it.
type Service interface {
	Name() string
	// Attach is called once per node start; the node's context bounds
	// every hook but Done, which the engine calls once the node's loops
	// (probe, tasks, Run) have stopped. A service that leaves no goroutine,
	// key or series of the node behind after Done is a good one.
	Attach(n Node) NodeHooks
}

// Node is a node as a service sees it when it attaches.
type Node struct {
	// Target is the node's copy of its target: Node, Endpoint, ReadOnly
	// and the probe's namespace tag are the node's own.
	Target Target
	// Commands are the names of the commands the node's probe sends, in
	// the order of its samples' command index (a replica sends the read
	// commands of its target only).
	Commands []string
	// Control is the node's go-redis client, apart from the probe's
	// connections; it serves INFO from a cache shared by the node's
	// services for a second.
	Control *redis.Client
	// CachedInfo is that cache's INFO text while it is fresh, read
	// without asking Redis (nil where the node has no cache).
	CachedInfo func() (string, bool)
	// Spell is the node's spell of not answering, shared by its probe
	// and services: a failure Redis did not answer goes there, logged
	// once for the node.
	Spell *faultlog.Node
}

// NodeHooks are what a service needs of one node; every field is
// optional.
type NodeHooks struct {
	// Tap wraps the recorder of the node's probe: every sample of the
	// node passes through what it returns. On the probe's hot path: it
	// must not block or allocate.
	Tap func(prober.Recorder) prober.Recorder
	// OnError sees every failed probe request of the node.
	OnError func(error)
	// Tasks run on the node's one housekeeping loop (RunTasks): a
	// service's periodic work costs no goroutine or timer of its own.
	Tasks []Task
	// Run runs on a goroutine of its own until its context is done, for
	// work that would hold the housekeeping loop up (a burst lasts
	// seconds).
	Run func(ctx context.Context)
	// Done is called once the node's loops have stopped.
	Done func()
}

// RunService runs svc's work on one node until ctx is done, without an
// engine: its tasks on the calling goroutine, its Run beside them, then
// Done. For callers that run a service alone (tests, one-shot commands);
// the node's probe is not run, so a Tap sees no samples.
func RunService(ctx context.Context, svc Service, n Node) {
	if n.Commands == nil {
		n.Commands = commandNames(n.Target.Probe.Commands)
	}
	h := svc.Attach(n)
	if h.Done != nil {
		defer h.Done()
	}
	var wg sync.WaitGroup
	if h.Run != nil {
		wg.Go(func() { h.Run(ctx) })
	}
	RunTasks(ctx, h.Tasks)
	wg.Wait()
}

func commandNames(cmds []prober.Command) []string {
	names := make([]string, len(cmds))
	for i, c := range cmds {
		names[i] = c.Name
	}
	return names
}
