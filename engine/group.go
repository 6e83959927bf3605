package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/prober"
)

// nodeSpec is one server a target expands into.
type nodeSpec struct {
	node     string // "" for a single server
	ep       prober.Endpoint
	tag      string // hash tag of the probe keys on this node
	readOnly bool
}

func (n nodeSpec) key() string { return fmt.Sprintf("%s|%s|%v", n.node, n.tag, n.readOnly) }

// forNode is t as node s runs it: its own address, node label, read-only
// flag and probe key tag.
func (t *Target) forNode(s nodeSpec) Target {
	n := *t
	n.Node, n.Endpoint, n.ReadOnly = s.node, s.ep, s.readOnly
	n.Probe.Namespace.Tag = s.tag
	return n
}

// discoveryFailed logs a failed discovery once per distinct error per
// spell: a topology that keeps failing, or fails every other refresh,
// logs once. It says whether it logged.
func discoveryFailed(problems *spellLog, err error) bool {
	return problems.warn("discovery: "+clip(err.Error()), "topology discovery failed; keeping the nodes known so far", "err", err)
}

// discoverer tells which nodes a target has right now.
type discoverer interface {
	discover(ctx context.Context) ([]nodeSpec, error)
	close()
}

// Default topology refresh intervals: a single server is re-checked for
// Cluster mode rarely; Sentinel is asked often, since a failover moves the
// primary and the probe should follow within seconds.
const (
	defaultServerRefresh   = 30 * time.Second
	defaultClusterRefresh  = 30 * time.Second
	defaultSentinelRefresh = 2 * time.Second
)

type child struct {
	spec   nodeSpec
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// runGroup follows the topology of one configured target and runs a node
// loop per server, until ctx is done.
func (e *Engine) runGroup(ctx context.Context, t *Target, cleanupTimeout time.Duration, stats *discoveryStats) {
	g := &group{e: e, t: t, cleanupTimeout: cleanupTimeout, children: map[string]*child{}}
	g.log = e.log.With("target", t.Name)
	g.problems = newSpellLog(g.log)
	d, interval := e.discovererFor(t, g.log, newNodeGuard(t.Discovery, stats, g.problems))
	defer d.close()

	g.refresh = make(chan struct{}, 1)
	g.onError = func(err error) {
		if isMoved(err) {
			select {
			case g.refresh <- struct{}{}:
			default:
			}
		}
	}
	defer g.stopAll(ctx)

	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	var found []nodeSpec // what a single server's own check found
	for {
		var (
			specs []nodeSpec
			err   error
		)
		if found != nil {
			specs, found = found, nil
		} else {
			specs, err = d.discover(ctx)
		}
		if err == nil && len(specs) == 1 && specs[0].node == "" && len(g.children) == 0 {
			// One plain server, the common target: its node runs on this
			// goroutine, with the topology check among its tasks.
			if g.failing {
				g.log.Info("topology discovery works again")
				g.failing = false
			}
			found = e.runSingle(ctx, t, specs[0], d, interval, cleanupTimeout, g.problems)
			if ctx.Err() != nil {
				return
			}
			continue
		}
		if err != nil && ctx.Err() != nil {
			return
		}
		g.reconcile(ctx, specs, err)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-g.refresh:
			// At most one MOVED-driven refresh per second.
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}
}

// group is the state of runGroup for a target of several nodes. Its work
// is in methods of its own so that a single server's node, which runs
// under runGroup's frame for its whole life, does not carry their locals
// on its stack (see runNode).
type group struct {
	e              *Engine
	t              *Target
	cleanupTimeout time.Duration
	log            *slog.Logger
	problems       *spellLog
	refresh        chan struct{}
	onError        func(error)
	children       map[string]*child
	failing        bool // a failure was logged and no success since
}

// reconcile starts a node for every server of specs not running yet and
// stops those no longer in it; on a failed discovery (err) it keeps the
// nodes it has.
func (g *group) reconcile(ctx context.Context, specs []nodeSpec, err error) {
	if err != nil {
		if discoveryFailed(g.problems, err) {
			g.failing = true
		}
		specs = nil
		for _, c := range g.children {
			specs = append(specs, c.spec)
		}
	} else if g.failing {
		g.log.Info("topology discovery works again")
		g.failing = false
	}
	want := map[string]nodeSpec{}
	for _, s := range specs {
		want[s.key()] = s
	}
	var left, joined []string
	for k, c := range g.children {
		if _, ok := want[k]; !ok {
			left = append(left, c.spec.node)
			g.stop(c)
			delete(g.children, k)
		}
	}
	for _, s := range specs {
		if _, ok := g.children[s.key()]; !ok && s.node != "" {
			joined = append(joined, s.node)
		}
	}
	logNodeChanges(g.log, "node left the target", left)
	logNodeChanges(g.log, "node joined the target", joined)
	for i, s := range specs {
		if _, ok := g.children[s.key()]; ok {
			continue
		}
		nt := g.t.forNode(s)
		if len(specs) > 1 && g.t.Probe.Rate > 0 {
			nt.Probe.Offset += time.Duration(float64(time.Second) / g.t.Probe.Rate * float64(i) / float64(len(specs)))
		}
		cctx, cancel := context.WithCancelCause(ctx)
		c := &child{spec: s, cancel: cancel, done: make(chan struct{})}
		g.children[s.key()] = c
		go func() {
			defer close(c.done)
			g.e.runNode(cctx, &nt, g.cleanupTimeout, g.onError)
		}()
	}
}

// stop stops one node that left the target.
func (g *group) stop(c *child) {
	c.cancel(errNodeLeft)
	<-c.done
	g.e.metrics.ForgetNode(g.t.Name, c.spec.node)
}

// stopAll stops every node as the target stops, and waits for them.
func (g *group) stopAll(ctx context.Context) {
	for _, c := range g.children {
		c.cancel(context.Cause(ctx)) // the node stops as its target does
	}
	for _, c := range g.children {
		<-c.done
	}
}

// runSingle runs the node of a target that is one plain server on the
// calling goroutine, until ctx is done or the topology changes: a node
// costs a goroutine less than a group of them. The check "is it a Cluster
// now?" is one of the node's housekeeping tasks, every interval, and a
// MOVED or ASK reply ends the node at once. It returns what the check found,
// or nil for "ask again".
func (e *Engine) runSingle(ctx context.Context, t *Target, s nodeSpec, d discoverer, interval, cleanupTimeout time.Duration, problems *spellLog) []nodeSpec {
	nctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	onError := func(err error) {
		if isMoved(err) {
			cancel(errTopologyChanged)
		}
	}
	var found []nodeSpec // written and read on this goroutine: the task runs on it
	started := false
	check := Task{Every: interval, Run: func(ctx context.Context) {
		if !started {
			started = true // the node was started from a check just made
			return
		}
		specs, err := d.discover(ctx)
		if err != nil {
			if ctx.Err() == nil {
				discoveryFailed(problems, err)
			}
			return
		}
		if len(specs) != 1 || specs[0].key() != s.key() {
			found = specs
			cancel(errTopologyChanged)
		}
	}}
	nt := t.forNode(s)
	e.runNode(nctx, &nt, cleanupTimeout, onError, check)
	if ctx.Err() == nil {
		e.metrics.ForgetNode(t.Name, s.node) // the server left the target's topology
	}
	return found
}

// isMoved tells a reply that says the slot map changed under us.
func isMoved(err error) bool {
	return strings.HasPrefix(err.Error(), "MOVED ") || strings.HasPrefix(err.Error(), "ASK ")
}

// manyNodeChanges is how many nodes may join or leave in one refresh with a
// log line each; more get one line between them.
const manyNodeChanges = 8

func logNodeChanges(log *slog.Logger, msg string, nodes []string) {
	if len(nodes) <= manyNodeChanges {
		for _, n := range nodes {
			log.Info(msg, "node", n)
		}
		return
	}
	slices.Sort(nodes)
	log.Info(msg, "nodes", len(nodes), "first", nodes[:manyNodeChanges])
}

func (e *Engine) discovererFor(t *Target, log *slog.Logger, guard *nodeGuard) (discoverer, time.Duration) {
	if t.Sentinel != nil {
		return newSentinelDiscoverer(*t, e.metrics, log, guard), orDefault(t.Sentinel.Refresh, defaultSentinelRefresh)
	}
	interval := defaultServerRefresh
	if t.Cluster.Refresh > 0 {
		interval = t.Cluster.Refresh
	}
	return newServerDiscoverer(*t, guard), interval
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// serverDiscoverer serves a target given by address: a single server, or, when
// the server says cluster_enabled:1, every node of its Cluster.
type serverDiscoverer struct {
	t          Target
	guard      *nodeGuard
	tags       tagCache
	control    *redis.Client   // nil between the checks of a plain server
	seeds      []*redis.Client // further Cluster seed nodes, asked in turn
	wasCluster bool
}

func newServerDiscoverer(t Target, guard *nodeGuard) *serverDiscoverer {
	d := &serverDiscoverer{t: t, guard: guard, tags: tagCache{base: t.Probe.Namespace.Tag}}
	for _, ep := range t.Cluster.Seeds {
		d.seeds = append(d.seeds, ep.NewClient(t.Probe.Timeout, 1))
	}
	return d
}

func (d *serverDiscoverer) close() {
	d.dropControl()
	for _, c := range d.seeds {
		_ = c.Close()
	}
}

func (d *serverDiscoverer) single() []nodeSpec {
	return []nodeSpec{{ep: d.t.Endpoint, tag: d.t.Probe.Namespace.Tag}}
}

// dropControl closes the discovery connection. A plain server is asked
// whether it became a Cluster every half minute: a connection held open for
// that is one more socket and its buffers a target, so it is dialled for
// each check; a Cluster keeps its connection for the topology refreshes.
func (d *serverDiscoverer) dropControl() {
	if d.control != nil {
		_ = d.control.Close()
		d.control = nil
	}
}

func (d *serverDiscoverer) discover(ctx context.Context) ([]nodeSpec, error) {
	if d.control == nil {
		d.control = d.t.Endpoint.NewClient(d.t.Probe.Timeout, 1)
	}
	specs, err := d.discoverWith(ctx)
	if !d.wasCluster && len(d.seeds) == 0 {
		d.dropControl()
	}
	return specs, err
}

func (d *serverDiscoverer) discoverWith(ctx context.Context) ([]nodeSpec, error) {
	enabled, err := clusterEnabled(ctx, d.control)
	if err != nil {
		var rerr redis.Error
		if errors.As(err, &rerr) || (!d.wasCluster && len(d.seeds) == 0) {
			// INFO refused (ACL), or the server is unreachable and was
			// never seen as a Cluster: probe it as a single server, so
			// its failures show as up=0 and errors.
			return d.single(), nil
		}
		// A Cluster whose first seed is down: the other seeds know
		// the topology.
		enabled = true
	}
	if !enabled {
		d.wasCluster = false
		return d.single(), nil
	}
	text, err := d.clusterNodes(ctx)
	if err != nil {
		if !d.wasCluster {
			return d.single(), nil
		}
		return nil, err
	}
	d.wasCluster = true
	nodes, err := parseClusterNodes(text)
	if err != nil {
		return nil, err
	}
	return clusterSpecs(d.t, nodes, d.guard, &d.tags), nil
}

// clusterSpecs turns the node list into probe nodes: every healthy primary
// with slots, probed with keys of a slot it owns; replicas (when asked for)
// read their primary's keys over READONLY. The guard decides first which
// nodes may be probed, so a hostile node list costs no tag search, thread
// or connection for the nodes it refuses.
func clusterSpecs(t Target, nodes []clusterNode, guard *nodeGuard, tags *tagCache) []nodeSpec {
	slots := map[string][][2]int{} // primary id → its slots
	var cands []candidate
	for i, n := range nodes {
		if !n.primary || n.failed || len(n.slots) == 0 {
			continue // a primary without slots holds no keys of ours
		}
		if _, dup := slots[n.id]; !dup {
			slots[n.id] = n.slots
		}
		cands = append(cands, candidate{addr: n.addr, ref: i})
	}
	if t.Cluster.Replicas {
		for i, n := range nodes {
			if _, ok := slots[n.primaryID]; n.primary || n.failed || !ok {
				continue
			}
			cands = append(cands, candidate{addr: n.addr, replica: true, ref: i})
		}
	}
	admitted := guard.admit(cands)
	sets := make([][][2]int, len(admitted))
	for i, c := range admitted {
		n := nodes[c.ref]
		if c.replica {
			sets[i] = slots[n.primaryID]
		} else {
			sets[i] = slots[n.id]
		}
	}
	var specs []nodeSpec
	for i, tag := range tags.lookup(sets) {
		if tag == "" {
			continue
		}
		c := admitted[i]
		n := nodes[c.ref]
		ep := t.Endpoint
		ep.Addr, ep.ReadOnly = n.addr, c.replica
		specs = append(specs, nodeSpec{node: n.addr, ep: ep, tag: tag, readOnly: c.replica})
	}
	return specs
}

// clusterNodes asks the first seed, then the others, for CLUSTER NODES.
func (d *serverDiscoverer) clusterNodes(ctx context.Context) (string, error) {
	var errs []error
	for _, c := range append([]*redis.Client{d.control}, d.seeds...) {
		text, err := c.ClusterNodes(ctx).Result()
		if err == nil {
			return text, nil
		}
		errs = append(errs, fmt.Errorf("CLUSTER NODES on %s: %w", c.Options().Addr, err))
	}
	return "", errors.Join(errs...)
}
