package engine

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/prober"
)

// Status is the engine service behind the status page: it keeps a
// prober.Recent per running node (fed by the node's probe, advanced by the
// node's housekeeping loop) and hands out snapshots of them. It reads the
// prober's own memory, never Prometheus.
type Status struct {
	mu    sync.Mutex
	nodes map[*statusNode]struct{}
}

type statusNode struct {
	target, node string
	endpoint     string
	objective    time.Duration
	readOnly     bool
	recent       *prober.Recent
}

var (
	_ Service     = (*Status)(nil)
	_ nodeTracker = (*Status)(nil)
)

// nodeTracker is a service that keeps its own per-node state beside the
// probe: the engine taps the probe's samples and errors into what
// trackNode returns, advances it with the node's housekeeping, and calls
// done when the node stops.
type nodeTracker interface {
	trackNode(t Target, commands []string) (recent *prober.Recent, done func())
}

// NewStatus returns the service; add it to the engine's services.
func NewStatus() *Status { return &Status{nodes: map[*statusNode]struct{}{}} }

// Name names the service in logs.
func (s *Status) Name() string { return "status" }

// RunTarget has nothing to run: the node's own loops feed the history.
func (s *Status) RunTarget(context.Context, Target, *redis.Client) {}

func (s *Status) trackNode(t Target, commands []string) (*prober.Recent, func()) {
	n := &statusNode{target: t.Name, node: t.Node, endpoint: t.Endpoint.String(), objective: t.Objective,
		readOnly: t.ReadOnly, recent: prober.NewRecent(commands, time.Now())}
	s.mu.Lock()
	s.nodes[n] = struct{}{}
	s.mu.Unlock()
	return n.recent, func() {
		s.mu.Lock()
		delete(s.nodes, n)
		s.mu.Unlock()
	}
}

// NodeStatus is one node as the status page shows it.
type NodeStatus struct {
	Target, Node string
	// Endpoint is the address without credentials.
	Endpoint  string
	Objective time.Duration
	ReadOnly  bool
	prober.RecentSnapshot
}

// Snapshot returns every running node (of target only, when it is not
// ""), by target and node name.
func (s *Status) Snapshot(target string, now time.Time) []NodeStatus {
	s.mu.Lock()
	nodes := make([]*statusNode, 0, len(s.nodes))
	for n := range s.nodes {
		if target == "" || n.target == target {
			nodes = append(nodes, n)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(nodes, func(a, b *statusNode) int {
		return cmp.Or(cmp.Compare(a.target, b.target), cmp.Compare(a.node, b.node))
	})
	out := make([]NodeStatus, len(nodes))
	for i, n := range nodes {
		out[i] = NodeStatus{Target: n.target, Node: n.node, Endpoint: n.endpoint, Objective: n.objective,
			ReadOnly: n.readOnly, RecentSnapshot: n.recent.Snapshot(now)}
	}
	return out
}
