package engine

import (
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redis-prober/redis-prober/internal/faulttest"
	"github.com/redis-prober/redis-prober/internal/logtest"
	"github.com/redis-prober/redis-prober/prober"
)

// Hostile Cluster and Sentinel servers: they name thousands of nodes,
// addresses that are not host:port, and nodes outside the allow-list. The
// nodes they name live in the documentation ranges (RFC 5737), so no probe
// ever reaches a real server on this host.

func bulk(s string) faulttest.Reply {
	return faulttest.Bytes(fmt.Sprintf("$%d\r\n%s\r\n", len(s), s))
}

func array(items ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(items))
	for _, s := range items {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(s), s)
	}
	return b.String()
}

// docAddr is the i-th address of a node in 192.0.2.0/24.
func docAddr(i int) string { return fmt.Sprintf("192.0.2.%d:%d", i%250+1, 7000+i/250) }

// primaryLine is a CLUSTER NODES line of a primary owning one slot.
func primaryLine(i int, addr string) string {
	return fmt.Sprintf("%040x %s@17000 master - 0 0 1 connected %d\n", i+1, addr, i%slotCount)
}

// fakeCluster answers INFO with cluster_enabled:1 and CLUSTER NODES with
// whatever nodes() returns at that moment.
func fakeCluster(t *testing.T, nodes func() string) *faulttest.Listener {
	return faulttest.RESP(t, faulttest.Handshake(func(args []string) faulttest.Reply {
		switch {
		case args[0] == "INFO":
			return bulk("# Cluster\r\ncluster_enabled:1\r\n")
		case args[0] == "CLUSTER" && len(args) > 1 && strings.EqualFold(args[1], "nodes"):
			return bulk(nodes())
		case args[0] == "PING":
			return faulttest.Bytes("+PONG\r\n")
		}
		return faulttest.Bytes("-ERR unknown command\r\n")
	}))
}

func hostileTarget(t *testing.T, l *faulttest.Listener) Target {
	t.Helper()
	_, ep, err := ParseAddr(l.URL())
	if err != nil {
		t.Fatal(err)
	}
	ep.Password = "s3cret"
	cmds, err := prober.ParseCommands("ping")
	if err != nil {
		t.Fatal(err)
	}
	return Target{
		Name:     "hostile",
		Endpoint: ep,
		Probe: prober.ProbeConfig{Rate: 2, Timeout: 200 * time.Millisecond, Commands: cmds, Connections: 1,
			DataSize: 16, KeyTTL: time.Minute, Namespace: prober.Namespace{Prefix: "redis-prober:", Tag: "hostile"}},
		SeedInterval: time.Second,
		Objective:    5 * time.Millisecond,
		Cluster:      ClusterOptions{Refresh: 50 * time.Millisecond},
	}
}

// discoveryNodes reads redis_prober_discovery_nodes of a target by outcome.
func discoveryNodes(t *testing.T, g prometheus.Gatherer, target string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, m := range gatherCounter(t, g, "redis_prober_discovery_nodes") {
		if labelValue(m, "target") == target {
			out[labelValue(m, "outcome")] = m.GetGauge().GetValue()
		}
	}
	return out
}

func osThreads(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	t.Fatal("no Threads: line")
	return 0
}

func startHostile(t *testing.T, tg Target) (*prometheus.Registry, *logtest.Buffer, func()) {
	t.Helper()
	log, buf := bufferLogger()
	reg := prometheus.NewRegistry()
	e := New(reg, log)
	reg.MustRegister(e)
	stop := runEngine(t, e, Config{Targets: []Target{tg}, CleanupTimeout: 200 * time.Millisecond})
	return reg, buf, stop
}

// 6,000 primaries used to start 6,000 node loops (two locked OS threads
// each) until the process died of thread exhaustion.
func TestClusterOfThousandsOfNodesIsCapped(t *testing.T) {
	const named, limit = 6000, 20
	var text strings.Builder
	for i := range named {
		text.WriteString(primaryLine(i, docAddr(i)))
	}
	l := fakeCluster(t, text.String)
	goroutines, threads := runtime.NumGoroutine(), osThreads(t)
	tg := hostileTarget(t, l)
	tg.Discovery.MaxNodes = limit
	reg, logs, stop := startHostile(t, tg)

	waitFor(t, 10*time.Second, "the capped node set", func() bool { return len(upByNode(t, reg, "hostile")) == limit })
	time.Sleep(time.Second) // twenty refreshes
	if n := len(upByNode(t, reg, "hostile")); n != limit {
		t.Errorf("%d nodes probed, want %d", n, limit)
	}
	got := discoveryNodes(t, reg, "hostile")
	want := map[string]float64{"probed": limit, "over_limit": named - limit, "invalid": 0, "not_allowed": 0}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("redis_prober_discovery_nodes = %v, want %v", got, want)
	}
	if g := runtime.NumGoroutine(); g > goroutines+limit*12+50 {
		t.Errorf("%d goroutines (%d before): not bounded by the node limit", g, goroutines)
	}
	if th := osThreads(t); th > threads+limit*3+50 {
		t.Errorf("%d OS threads (%d before): not bounded by the node limit", th, threads)
	}
	if n := logs.Lines("more nodes than"); n != 1 {
		t.Errorf("%d log lines about the node limit over twenty refreshes, want 1", n)
	}
	if n := logs.Lines("level="); n > 2+2*limit { // limit, joins, a fault or two per node
		t.Errorf("%d log lines in all; want at most %d", n, 2+2*limit)
	}
	stop()
}

// The default limit applies when none is configured.
func TestDefaultMaxNodes(t *testing.T) {
	var cands []candidate
	for i := range 6000 {
		cands = append(cands, candidate{addr: docAddr(i)})
	}
	log, _ := bufferLogger()
	if got := len(newNodeGuard(DiscoveryOptions{}, nil, newSpellLog(log)).admit(cands)); got != DefaultMaxNodes {
		t.Errorf("%d nodes admitted, want %d", got, DefaultMaxNodes)
	}
}

// Addresses that are not valid host:port (invalid UTF-8 used to panic in
// Metrics.ForNode) are refused and counted, and never become labels.
func TestClusterInvalidNodeAddressesAreRefused(t *testing.T) {
	bad := []string{"\xff\xfe:7000", "192.0.2.1:70000", "192.0.2.2:99999999999", "\x1b[31mred:7000", "192.0.2.4:", "0.0.0.0:7000", "no-port"}
	var text strings.Builder
	for i, a := range bad {
		text.WriteString(primaryLine(i, a))
	}
	text.WriteString(primaryLine(len(bad), "192.0.2.10:7000"))
	l := fakeCluster(t, text.String)
	reg, logs, stop := startHostile(t, hostileTarget(t, l))

	waitFor(t, 10*time.Second, "the one valid node", func() bool { return len(upByNode(t, reg, "hostile")) == 1 })
	time.Sleep(500 * time.Millisecond)
	up := upByNode(t, reg, "hostile")
	if _, ok := up["192.0.2.10:7000"]; !ok || len(up) != 1 {
		t.Errorf("nodes probed: %v, want only 192.0.2.10:7000", up)
	}
	if got := discoveryNodes(t, reg, "hostile"); got["invalid"] != float64(len(bad)) || got["probed"] != 1 {
		t.Errorf("redis_prober_discovery_nodes = %v, want invalid %d, probed 1", got, len(bad))
	}
	if n := logs.Lines("not a valid host:port"); n != 1 {
		t.Errorf("%d log lines about invalid addresses over ten refreshes, want 1", n)
	}
	stop()
}

// With an allow-list, nodes outside it get no connection (and so no
// credentials); without one, every valid node is probed.
func TestClusterAllowList(t *testing.T) {
	outsider := faulttest.RESP(t, func([]string) faulttest.Reply { return faulttest.Bytes("+OK\r\n") })
	nodes := []string{"192.0.2.1:7000", "198.51.100.1:7000", outsider.Addr(), "a.redis.invalid:7000", "evil.example.invalid:7000", "[2001:db8::1]:7000"}
	var text strings.Builder
	for i, a := range nodes {
		text.WriteString(primaryLine(i, a))
	}
	l := fakeCluster(t, text.String)
	tg := hostileTarget(t, l)
	tg.Discovery.AllowedNetworks = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}
	tg.Discovery.AllowedHostnames = []string{"redis.invalid"}
	reg, logs, stop := startHostile(t, tg)

	waitFor(t, 10*time.Second, "the allowed nodes", func() bool { return len(upByNode(t, reg, "hostile")) == 2 })
	time.Sleep(500 * time.Millisecond)
	up := upByNode(t, reg, "hostile")
	for _, a := range []string{"192.0.2.1:7000", "a.redis.invalid:7000"} {
		if _, ok := up[a]; !ok {
			t.Errorf("allowed node %s not probed (probed: %v)", a, up)
		}
	}
	if len(up) != 2 {
		t.Errorf("nodes probed: %v, want the two allowed ones", up)
	}
	if got := discoveryNodes(t, reg, "hostile"); got["not_allowed"] != 4 || got["probed"] != 2 {
		t.Errorf("redis_prober_discovery_nodes = %v, want not_allowed 4, probed 2", got)
	}
	if n := outsider.Accepted(); n != 0 {
		t.Errorf("the node outside the allow-list got %d connections", n)
	}
	if n := logs.Lines("outside the allowed networks"); n != 1 {
		t.Errorf("%d log lines about refused nodes, want 1", n)
	}
	stop()
}

// hostileSentinelTarget is a target whose one Sentinel is a fake: it
// names host:6379 as the primary of "mymaster" and answers SENTINEL
// REPLICAS (or SLAVES) with replicas().
func hostileSentinelTarget(t *testing.T, host string, replicas func() faulttest.Reply) Target {
	t.Helper()
	sentinel := faulttest.RESP(t, faulttest.Handshake(func(args []string) faulttest.Reply {
		if args[0] != "SENTINEL" || len(args) < 2 {
			return faulttest.Bytes("-ERR unknown command\r\n")
		}
		switch strings.ToLower(args[1]) {
		case "get-master-addr-by-name":
			return faulttest.Bytes(array(host, "6379"))
		case "replicas", "slaves":
			return replicas()
		}
		return faulttest.Bytes("-ERR unknown subcommand\r\n")
	}))
	tg := hostileTarget(t, sentinel)
	_, sep, err := ParseAddr(sentinel.URL())
	if err != nil {
		t.Fatal(err)
	}
	tg.Endpoint = prober.Endpoint{Network: "tcp", Password: "s3cret"}
	tg.Sentinel = &SentinelOptions{MasterName: "mymaster", Sentinels: []prober.Endpoint{sep}, ProbeReplicas: true, Refresh: 50 * time.Millisecond}
	return tg
}

// A Sentinel naming thousands of replicas and invalid addresses: capped,
// refused, counted, no panic.
func TestSentinelHostileReplicasAreCapped(t *testing.T) {
	const replicas, limit = 6000, 10
	var reply strings.Builder
	fmt.Fprintf(&reply, "*%d\r\n", replicas+1)
	reply.WriteString(array("name", "bad", "ip", "\xff\xfe", "port", "7000", "flags", "slave"))
	for i := range replicas {
		host, port, _ := strings.Cut(docAddr(i+1), ":")
		reply.WriteString(array("name", "r", "ip", host, "port", port, "flags", "slave"))
	}
	tg := hostileSentinelTarget(t, "192.0.2.1", func() faulttest.Reply { return faulttest.Bytes(reply.String()) })
	tg.Discovery.MaxNodes = limit
	reg, logs, stop := startHostile(t, tg)

	waitFor(t, 10*time.Second, "the capped node set", func() bool { return len(upByNode(t, reg, "hostile")) == limit })
	time.Sleep(500 * time.Millisecond)
	up := upByNode(t, reg, "hostile")
	if _, ok := up["192.0.2.1:6379"]; !ok || len(up) != limit {
		t.Errorf("%d nodes probed (primary among them: %v), want %d with the primary", len(up), ok, limit)
	}
	got := discoveryNodes(t, reg, "hostile")
	want := map[string]float64{"probed": limit, "over_limit": replicas + 1 - limit, "invalid": 1, "not_allowed": 0}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("redis_prober_discovery_nodes = %v, want %v", got, want)
	}
	if n := logs.Lines("more nodes than"); n != 1 {
		t.Errorf("%d log lines about the node limit, want 1", n)
	}
	if n := logs.Lines("not a valid host:port"); n != 1 {
		t.Errorf("%d log lines about invalid addresses, want 1", n)
	}
	stop()
}

// A topology that fails every other refresh, with two different errors,
// logs each error once, not once per refresh.
func TestTopologyFailuresLogOncePerSpell(t *testing.T) {
	good := primaryLine(0, "192.0.2.1:7000")
	replies := []string{good, "short line\n", good, good + "id 192.0.2.2:7000@1 master - 0 0 1 connected 9-x\n"}
	var n int
	mu := make(chan struct{}, 1)
	l := fakeCluster(t, func() string {
		mu <- struct{}{}
		defer func() { <-mu }()
		n++
		return replies[n%len(replies)]
	})
	_, logs, stop := startHostile(t, hostileTarget(t, l))
	time.Sleep(1500 * time.Millisecond) // about thirty refreshes
	stop()
	if f := logs.Lines("topology discovery failed"); f < 1 || f > 2 {
		t.Errorf("%d lines about failed discovery over thirty refreshes, want one per distinct error (2)", f)
	}
	if f, w := logs.Lines("topology discovery failed"), logs.Lines("works again"); w > f {
		t.Errorf("%d 'works again' lines after %d failures logged, want one at most for each", w, f)
	}
}

// A Sentinel whose SENTINEL REPLICAS answer does not come (it hangs up,
// as a timeout or a restart would) says nothing of the replicas: the
// nodes known so far keep their probes, and the failure is logged once.
// One that refuses the command (an error reply) has no replicas to give:
// the primary alone is probed.
func TestSentinelReplicasUnansweredKeepsThem(t *testing.T) {
	for _, tc := range []struct {
		name  string
		later faulttest.Reply // what REPLICAS gets after its first three answers
		nodes int             // probed in the end
		log   int             // "keeping the nodes known so far" lines
	}{
		{"hangs up", faulttest.Reply{}, 4, 1},
		{"refuses", faulttest.Bytes("-ERR unknown subcommand 'replicas'\r\n"), 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked atomic.Int64
			list := "*3\r\n"
			for i := range 3 {
				host, port, _ := strings.Cut(docAddr(i+1), ":")
				list += array("name", "r", "ip", host, "port", port, "flags", "slave")
			}
			tg := hostileSentinelTarget(t, "192.0.2.200", func() faulttest.Reply {
				if asked.Add(1) <= 3 {
					return faulttest.Bytes(list)
				}
				return tc.later
			})
			reg, logs, stop := startHostile(t, tg)
			defer stop()
			waitFor(t, 10*time.Second, "the primary and its three replicas", func() bool { return len(upByNode(t, reg, "hostile")) == 4 })
			// Several rounds past the third answer.
			waitFor(t, 10*time.Second, "rounds after the last answer", func() bool { return asked.Load() >= 10 })
			waitFor(t, 10*time.Second, "the nodes of the later rounds", func() bool { return len(upByNode(t, reg, "hostile")) == tc.nodes })
			if n := logs.Lines("keeping the nodes known so far"); n != tc.log {
				t.Errorf("%d log lines keeping the known nodes, want %d:\n%s", n, tc.log, logs.String())
			}
			// Still so after more rounds.
			at := asked.Load()
			waitFor(t, 10*time.Second, "more rounds", func() bool { return asked.Load() >= at+5 })
			if got := len(upByNode(t, reg, "hostile")); got != tc.nodes {
				t.Errorf("%d nodes probed after more rounds, want %d", got, tc.nodes)
			}
		})
	}
}
