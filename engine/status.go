package engine

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/redis-prober/redis-prober/collector"
	"github.com/redis-prober/redis-prober/explain"
	"github.com/redis-prober/redis-prober/internal/nodeid"
	"github.com/redis-prober/redis-prober/prober/history"
)

// Status is the engine service behind the status page: it keeps a
// history.Recent per running node (fed by the node's probe, advanced by the
// node's housekeeping loop) and hands out snapshots of them. It reads the
// prober's own memory, never Prometheus.
type Status struct {
	mu    sync.Mutex
	nodes map[*statusNode]struct{}

	// What other services keep of each node, read at snapshot time.
	src StatusSources
}

// StatusSources are the services the status page reads beside its own
// history, each nil when it does not run. They are named where the
// services are built, never discovered among them.
type StatusSources struct {
	Bursts  BurstSource
	Changes ChangeSource
	Checks  CheckSource
	Host    HostCheckSource
	Explain *Explain
}

// BurstSource is the Bursts service, as the status page reads it.
type BurstSource interface {
	LastBurst(id nodeid.ID) (LastBurst, bool)
}

// ChangeSource is the Changes service, as the status page reads it.
type ChangeSource interface {
	LastChange(id nodeid.ID) (LastChange, bool)
}

// LastChange is what the status page shows of a node's last change.
type LastChange struct {
	// Kinds changed in one check round (restart, version, config, role,
	// maxmemory, kernel, thp, sysctl); no values, which may be
	// config the user keeps private.
	Kinds []string
	At    time.Time
	// Before is the probe latency over the window that ended at the
	// change, After the latency since (at most one window), per command in
	// probe order. A figure over fewer than MinSamples samples is not
	// exported to Prometheus; the page shows it greyed.
	Before, After []history.WindowQuantiles
	MinSamples    uint64
}

// CheckSource is a service that evaluates the tuning checks of each node
// (the collector service of run mode). ok is false when the node's checks
// were not evaluated (yet, or the checks collector is off).
type CheckSource interface {
	FailingChecks(id nodeid.ID) (failing []collector.FailedCheck, ok bool)
}

// HostCheckSource is a service that evaluates the host-scope checks once
// for the process (the collector service of run mode). ok is false when
// they were not evaluated (yet, or the checks collector is off).
type HostCheckSource interface {
	FailingHostChecks() (failing []collector.FailedCheck, ok bool)
}

type statusNode struct {
	target, node string
	endpoint     string
	objective    time.Duration
	readOnly     bool
	recent       *history.Recent
}

var _ Service = (*Status)(nil)

// NewStatus returns the service; add it to the engine's services. src
// names the services read for each node's last burst, last change, failing
// checks and slow causes, and for the failing checks of the prober's host.
func NewStatus(src StatusSources) *Status {
	return &Status{nodes: map[*statusNode]struct{}{}, src: src}
}

// Name names the service in logs.
func (s *Status) Name() string { return "status" }

// Attach keeps the node's recent history: the probe's samples and errors
// go into it, and the node's housekeeping advances it.
func (s *Status) Attach(nd Node) NodeHooks {
	t := nd.Target
	n := &statusNode{target: t.Name, node: t.Node, endpoint: t.Endpoint.String(), objective: t.Objective,
		readOnly: t.ReadOnly, recent: history.NewRecent(nd.Commands, time.Now())}
	s.mu.Lock()
	s.nodes[n] = struct{}{}
	s.mu.Unlock()
	return NodeHooks{
		Tap:     n.recent.Tap,
		OnError: func(err error) { n.recent.ObserveError(err, time.Now()) },
		Tasks:   []Task{{Every: 5 * time.Second, Run: func(context.Context) { n.recent.Advance(time.Now()) }}},
		Done: func() {
			s.mu.Lock()
			delete(s.nodes, n)
			s.mu.Unlock()
		},
	}
}

// NodeStatus is one node as the status page shows it.
type NodeStatus struct {
	Target, Node string
	// Endpoint is the address without credentials.
	Endpoint  string
	Objective time.Duration
	ReadOnly  bool
	history.RecentSnapshot
	// LastBurst and LastChange are nil before the first one (or with the
	// service off).
	LastBurst  *LastBurst
	LastChange *LastChange
	// FailingChecks are the Redis checks that failed at the last
	// evaluation, at their own severity or at their warning level (both
	// are a 0 of redis_prober_check_passed); ChecksKnown is false when
	// none ran. The host's checks are in HostStatus, once.
	FailingChecks []collector.FailedCheck
	ChecksKnown   bool
	// Why is the attribution of the node's slow requests; nil with
	// --no-explain.
	Why *SlowCauses
}

// ID names the node.
func (ns *NodeStatus) ID() nodeid.ID { return nodeid.ID{Target: ns.Target, Node: ns.Node} }

// SlowCauses is what the status page shows of a node's slow requests.
type SlowCauses struct {
	Threshold time.Duration
	// Last5m are the causes of the last 5 minutes' slow requests, most
	// first (none: no slow request).
	Last5m []CauseCount
	// SinceChange are the causes since the last change, when it was in
	// the last hour (the timeline's reach); SinceChangeKnown says so.
	SinceChange      []CauseCount
	SinceChangeKnown bool
	// Timeline is the last hour's minutes that had slow requests.
	Timeline []explain.Minute
	// LargestKeys are the largest key sizes of a Redis 8+ (INFO
	// KEYSIZES) when slow requests last waited: a lead to a command on a
	// big key, not a cause; "" when the server does not say.
	LargestKeys string
}

// CauseCount is one cause and its slow requests.
type CauseCount struct {
	Cause string
	Count uint64
}

// causeCounts lists the non-zero counts of c, most first (ties in the
// order of precedence).
func causeCounts(c [explain.NumCauses]uint64) []CauseCount {
	var out []CauseCount
	for i, v := range c {
		if v > 0 {
			out = append(out, CauseCount{Cause: explain.Cause(i).String(), Count: v})
		}
	}
	slices.SortStableFunc(out, func(a, b CauseCount) int { return cmp.Compare(b.Count, a.Count) })
	return out
}

// slowCauses reads the node's attribution, nil when it has none.
func (s *Status) slowCauses(ns *NodeStatus) *SlowCauses {
	if s.src.Explain == nil {
		return nil
	}
	n := s.src.Explain.Node(ns.ID())
	if n == nil {
		return nil
	}
	sc := &SlowCauses{Threshold: n.Threshold(), Last5m: causeCounts(n.Recent(5)), Timeline: n.Timeline()}
	if ks := n.KeySizes(); !ks.Empty() {
		sc.LargestKeys = ks.String()
	}
	if ns.LastChange != nil && time.Since(ns.LastChange.At) < explain.TimelineMinutes*time.Minute {
		var since [explain.NumCauses]uint64
		from := ns.LastChange.At.Truncate(time.Minute)
		for _, m := range sc.Timeline {
			if !m.Start.Before(from) {
				for c, v := range m.Counts {
					since[c] += uint64(v)
				}
			}
		}
		sc.SinceChange, sc.SinceChangeKnown = causeCounts(since), true
	}
	return sc
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
		s.fill(&out[i])
	}
	return out
}

// fill adds what the other services keep of the node.
func (s *Status) fill(ns *NodeStatus) {
	if s.src.Bursts != nil {
		if lb, ok := s.src.Bursts.LastBurst(ns.ID()); ok {
			ns.LastBurst = &lb
		}
	}
	if s.src.Changes != nil {
		if lc, ok := s.src.Changes.LastChange(ns.ID()); ok {
			ns.LastChange = &lc
		}
	}
	if s.src.Checks != nil {
		ns.FailingChecks, ns.ChecksKnown = s.src.Checks.FailingChecks(ns.ID())
	}
	ns.Why = s.slowCauses(ns)
}

// HostStatus is the prober's own host as the status page shows it, once
// for every node.
type HostStatus struct {
	// FailingChecks are the host checks that failed at their last
	// evaluation (a 0 of redis_prober_host_check_passed); ChecksKnown is
	// false when none ran.
	FailingChecks []collector.FailedCheck
	ChecksKnown   bool
}

// Host returns the state of the prober's host.
func (s *Status) Host() HostStatus {
	var h HostStatus
	if s.src.Host != nil {
		h.FailingChecks, h.ChecksKnown = s.src.Host.FailingHostChecks()
	}
	return h
}
