package engine

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/redis-prober/redis-prober/internal/redistest"
	"github.com/redis-prober/redis-prober/prober"
)

// upByNode returns redis_prober_up per node of a target.
func upByNode(t *testing.T, g prometheus.Gatherer, target string) map[string]float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "redis_prober_up" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelValue(m, "target") == target {
				out[labelValue(m, "node")] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func runEngine(t *testing.T, e *Engine, cfg Config) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.Run(ctx, cfg) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("engine did not stop within 10s")
		}
	}
	t.Cleanup(stop)
	return stop
}

func TestClusterEveryShardProbedOnItsOwnSlots(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	tg := testTarget(t, cl.Nodes[1]) // any node will do
	tg.Name = "cluster"
	tg.Cluster = ClusterOptions{Refresh: 300 * time.Millisecond}
	reg := prometheus.NewRegistry()
	e := New(reg, quietLogger())
	stop := runEngine(t, e, Config{Targets: []Target{tg}, CleanupTimeout: 3 * time.Second})

	waitFor(t, 10*time.Second, "three shards up", func() bool {
		up := upByNode(t, reg, "cluster")
		n := 0
		for _, v := range up {
			if v == 1 {
				n++
			}
		}
		return len(up) == 3 && n == 3
	})
	for _, s := range cl.Nodes {
		if _, ok := upByNode(t, reg, "cluster")[s.Addr()]; !ok {
			t.Errorf("no series for node %s", s.Addr())
		}
	}
	// Each shard holds its own probe keys: the probe never crossed slots.
	ctx := context.Background()
	waitFor(t, 5*time.Second, "probe keys on every shard", func() bool {
		for _, s := range cl.Nodes {
			if len(s.Keys(ctx, "redis-prober:*")) == 0 {
				return false
			}
		}
		return true
	})
	for _, m := range gatherCounter(t, reg, "redis_prober_requests_total") {
		if labelValue(m, "result") == "error" && m.GetCounter().GetValue() > 0 {
			t.Errorf("errors on %s %s: %v (MOVED?)", labelValue(m, "node"), labelValue(m, "command"), m.GetCounter().GetValue())
		}
	}
	stop()
	for _, s := range cl.Nodes {
		if keys := s.Keys(ctx, "redis-prober:*"); len(keys) != 0 {
			t.Errorf("%s kept probe keys: %v", s.Addr(), keys)
		}
	}
}

// A replica taking over a shard (CLUSTER FAILOVER) moves that shard's probe
// to the new primary.
func TestClusterFailoverIsFollowed(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	replica := redistest.Start(t, "cluster-enabled yes", "cluster-config-file nodes.conf", "cluster-node-timeout 2000")
	ctx := context.Background()
	victim := cl.Nodes[2]
	victimID, err := victim.Client().ClusterMyID(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Nodes[0].Client().ClusterMeet(ctx, "127.0.0.1", fmt.Sprint(replica.Port)).Err(); err != nil {
		t.Fatal(err)
	}
	rc := replica.Client()
	waitFor(t, 10*time.Second, "replica to learn the victim", func() bool {
		nodes, _ := rc.ClusterNodes(ctx).Result()
		return strings.Contains(nodes, victimID)
	})
	if err := rc.ClusterReplicate(ctx, victimID).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "replica in sync", func() bool {
		info, _ := rc.Info(ctx, "replication").Result()
		return strings.Contains(info, "master_link_status:up")
	})

	tg := testTarget(t, cl.Nodes[0])
	tg.Name = "cluster"
	tg.Cluster = ClusterOptions{Refresh: 300 * time.Millisecond}
	reg := prometheus.NewRegistry()
	e := New(reg, quietLogger())
	runEngine(t, e, Config{Targets: []Target{tg}, CleanupTimeout: 3 * time.Second})
	waitFor(t, 10*time.Second, "victim probed", func() bool { return upByNode(t, reg, "cluster")[victim.Addr()] == 1 })
	if _, ok := upByNode(t, reg, "cluster")[replica.Addr()]; ok {
		t.Fatal("replica probed although replicas are off")
	}

	if err := rc.ClusterFailover(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "probe moved to the new primary", func() bool {
		up := upByNode(t, reg, "cluster")
		_, old := up[victim.Addr()]
		return up[replica.Addr()] == 1 && !old
	})
}

func gatherCounter(t *testing.T, g prometheus.Gatherer, name string) []*dto.Metric {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()
		}
	}
	return nil
}

func TestSentinelFailoverIsFollowedAndCounted(t *testing.T) {
	primary := redistest.Start(t)
	replica := redistest.Start(t, fmt.Sprintf("replicaof 127.0.0.1 %d", primary.Port))
	ctx := context.Background()
	waitFor(t, 10*time.Second, "replica in sync", func() bool {
		info, _ := replica.Client().Info(ctx, "replication").Result()
		return strings.Contains(info, "master_link_status:up")
	})
	sentinel := redistest.StartSentinel(t, "mymaster", primary)
	waitFor(t, 15*time.Second, "sentinel to see a healthy replica", func() bool {
		r, err := sentinel.Client().Do(ctx, "sentinel", "replicas", "mymaster").Slice()
		return err == nil && len(r) == 1 && strings.Contains(fmt.Sprint(r), "master-link-status ok")
	})

	tg := testTarget(t, primary)
	tg.Name = "queue"
	_, sep, err := ParseAddr(sentinel.URL())
	if err != nil {
		t.Fatal(err)
	}
	tg.Sentinel = &SentinelOptions{MasterName: "mymaster", Sentinels: []prober.Endpoint{sep}, Refresh: 200 * time.Millisecond}
	reg := prometheus.NewRegistry()
	e := New(reg, quietLogger())
	runEngine(t, e, Config{Targets: []Target{tg}, CleanupTimeout: 3 * time.Second})
	waitFor(t, 10*time.Second, "primary probed", func() bool { return upByNode(t, reg, "queue")[primary.Addr()] == 1 })

	// Sentinel may still say NOGOODSLAVE until it has fresh INFO from the
	// replica; ask again for a few seconds.
	waitFor(t, 15*time.Second, "sentinel to accept the failover", func() bool {
		return sentinel.Client().Do(ctx, "sentinel", "failover", "mymaster").Err() == nil
	})
	waitFor(t, 20*time.Second, "probe on the new primary", func() bool {
		up := upByNode(t, reg, "queue")
		_, old := up[primary.Addr()]
		return up[replica.Addr()] == 1 && !old
	})
	var failovers float64
	for _, m := range gatherCounter(t, reg, "redis_prober_changes_total") {
		if labelValue(m, "target") == "queue" && labelValue(m, "kind") == "failover" {
			failovers = m.GetCounter().GetValue()
		}
	}
	if failovers != 1 {
		t.Errorf("failovers counted = %v, want 1", failovers)
	}
}

// A Cluster whose first seed is down is still found through the others.
func TestClusterFoundThroughLaterSeed(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	dead := redistest.Start(t)
	dead.Kill()
	reg := runSeededTarget(t, "cluster", dead, cl.Nodes[2])
	waitFor(t, 10*time.Second, "three shards up through the second seed", func() bool {
		return shardsUp(upByNode(t, reg, "cluster"), cl)
	})
}

// runSeededTarget runs a target named name at srv, with seed as a further
// Cluster seed and a fast topology refresh, and returns its registry.
func runSeededTarget(t *testing.T, name string, srv, seed *redistest.Server) *prometheus.Registry {
	t.Helper()
	tg := testTarget(t, srv)
	tg.Name = name
	tg.Cluster = ClusterOptions{Refresh: 300 * time.Millisecond}
	_, ep, err := ParseAddr(seed.URL())
	if err != nil {
		t.Fatal(err)
	}
	tg.Cluster.Seeds = []prober.Endpoint{ep}
	reg := prometheus.NewRegistry()
	runEngine(t, New(reg, quietLogger()), Config{Targets: []Target{tg}, CleanupTimeout: 3 * time.Second})
	return reg
}

// shardsUp tells whether every node of cl is up in up (upByNode).
func shardsUp(up map[string]float64, cl *redistest.Cluster) bool {
	for _, s := range cl.Nodes {
		if up[s.Addr()] != 1 {
			return false
		}
	}
	return true
}

// A target that is one plain server runs its node on the target's own
// goroutine, with the topology check as one of the node's tasks: when the
// check finds a Cluster (here the server is gone and a seed answers), the
// single node stops, its series go, and every shard is probed.
func TestSingleServerBecomesCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	plain := redistest.Start(t)
	reg := runSeededTarget(t, "moving", plain, cl.Nodes[0])
	waitFor(t, 10*time.Second, "the plain server up", func() bool { return upByNode(t, reg, "moving")[""] == 1 })
	plain.Kill()
	waitFor(t, 15*time.Second, "three shards up and the single node gone", func() bool {
		up := upByNode(t, reg, "moving")
		_, single := up[""]
		return !single && shardsUp(up, cl)
	})
}

// A plain target costs one goroutine once its probe connections are open:
// its node's housekeeping loop, on the target's own goroutine (topology
// check included); the probe workers are the poller's.
func TestPlainTargetIsOneGoroutine(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the probe loop is Linux's: elsewhere every probe connection has a goroutine")
	}
	srv := redistest.Start(t)
	const n = 5
	var targets []Target
	for i := range n {
		tg := testTarget(t, srv)
		tg.Name = fmt.Sprintf("plain-%d", i)
		tg.Probe.Namespace.Tag = tg.Name
		tg.ConnectInterval = 0
		targets = append(targets, tg)
	}
	reg := prometheus.NewRegistry()
	e := New(reg, quietLogger())
	runEngine(t, e, Config{Targets: targets, CleanupTimeout: 3 * time.Second})
	waitFor(t, 10*time.Second, "every probe connection on the poller", func() bool {
		return e.poller.Connections() == n*targets[0].Probe.Connections
	})
	buf := make([]byte, 4<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	counts := map[string]int{}
	for _, g := range strings.Split(stacks, "\n\n") {
		switch {
		case strings.Contains(g, "prober.(*worker).run("):
			counts["probe worker"]++
		case strings.Contains(g, "engine.(*Engine).runGroup.func"):
			counts["node of a group"]++
		case strings.Contains(g, "engine.(*Engine).runSingle("):
			counts["single node"]++
		}
	}
	if counts["single node"] != n || counts["probe worker"] != 0 || counts["node of a group"] != 0 {
		t.Errorf("goroutines of %d plain targets: %v; want %d single nodes and nothing else", n, counts, n)
	}
}
