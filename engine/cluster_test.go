package engine

import (
	"strings"
	"testing"
)

func TestCRC16MatchesRedis(t *testing.T) {
	// Values from the Redis Cluster specification and CLUSTER KEYSLOT.
	for _, tc := range []struct {
		in   string
		slot int
	}{
		{"123456789", 0x31C3 % slotCount},
		{"foo", 12182},
		{"bar", 5061},
		{"user1000", 3443},
	} {
		if got := slotOf(tc.in); got != tc.slot {
			t.Errorf("slotOf(%q) = %d, want %d", tc.in, got, tc.slot)
		}
	}
}

func TestParseClusterNodes(t *testing.T) {
	text := `07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004,host-a slave e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 4 connected
67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:30002@31002 master - 0 1426238316232 2 connected 5461-10922
292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 127.0.0.1:30003@31003 master - 0 1426238318243 3 connected 10923-16383
6ec23923021cf3ffec47632106199cb7f496ce01 127.0.0.1:30005@31005 slave 67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 0 1426238316232 5 connected
824fe116063bc5fcf9f4ffd895bc17aee7731ac3 127.0.0.1:30006@31006 slave 292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 0 1426238317741 6 connected
e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 0-5460 [5461->-67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1]
aaaa :0@0 master,noaddr - 0 0 0 disconnected
`
	nodes, err := parseClusterNodes(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 6 {
		t.Fatalf("%d nodes, want 6 (noaddr left out)", len(nodes))
	}
	primaries := 0
	for _, n := range nodes {
		if n.primary {
			primaries++
			if len(n.slots) != 1 {
				t.Errorf("%s: slots %v", n.addr, n.slots)
			}
		}
	}
	if primaries != 3 {
		t.Errorf("%d primaries, want 3", primaries)
	}
	if nodes[0].addr != "127.0.0.1:30004" || nodes[0].primaryID != "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca" {
		t.Errorf("replica parsed as %+v", nodes[0])
	}
	v6, err := parseClusterNodes("bbbb 2001:db8::1:7000@17000 master - 0 0 1 connected 0-10\ncccc [2001:db8::2]:7000@17000 master - 0 0 1 connected 11-20\n")
	if err != nil || len(v6) != 2 || v6[0].addr != "[2001:db8::1]:7000" || v6[1].addr != "[2001:db8::2]:7000" {
		t.Errorf("IPv6 nodes parsed as %+v (%v), want [2001:db8::1]:7000 and [2001:db8::2]:7000", v6, err)
	}
	if _, err := parseClusterNodes("id 1.2.3.4:1@2 master - 0 0 1 connected 9-x\n"); err == nil {
		t.Error("a bad slot range was accepted")
	}
}

func TestTagForSlots(t *testing.T) {
	ranges := [][2]int{{5461, 10922}}
	tag, ok := tagForSlots("host-1", ranges)
	if !ok {
		t.Fatal("no tag found")
	}
	if s := slotOf(tag); s < 5461 || s > 10922 {
		t.Errorf("tag %q hashes to slot %d, outside the node's range", tag, s)
	}
	if _, ok := tagForSlots("x", nil); ok {
		t.Error("a tag for a node without slots")
	}
}

// The tag cache finds the very tags tagForSlots finds, one by one or many in
// one pass, and keeps only the slot sets still in use.
func TestTagCacheMatchesTagForSlots(t *testing.T) {
	var sets [][][2]int
	for i := range 40 {
		a := (i * 997) % slotCount
		sets = append(sets, [][2]int{{a, a}}, [][2]int{{a, min(a+i*50, slotCount-1)}, {(a + 8000) % slotCount, (a + 8000) % slotCount}})
	}
	for _, batch := range [][][][2]int{sets[:3], sets} {
		c := &tagCache{base: "host-1-abcd"}
		got := c.lookup(batch)
		for i, r := range batch {
			want, _ := tagForSlots("host-1-abcd", r)
			if got[i] != want {
				t.Fatalf("slots %v: tag %q, tagForSlots says %q", r, got[i], want)
			}
		}
		if len(c.tags) > len(batch) {
			t.Errorf("%d cached slot sets for %d in use", len(c.tags), len(batch))
		}
	}
}

// thousandSingleSlotPrimaries is a hostile CLUSTER NODES: 6,000 primaries
// with one slot each, of which the default limit keeps 1,000.
func thousandSingleSlotPrimaries(t testing.TB) []clusterNode {
	t.Helper()
	var text strings.Builder
	for i := range 6000 {
		text.WriteString(primaryLine(i, docAddr(i)))
	}
	nodes, err := parseClusterNodes(text.String())
	if err != nil {
		t.Fatal(err)
	}
	return nodes
}

// Every node gets a tag, and a second refresh of the same topology takes
// its tags from the cache (proved by marking the cached ones) instead of
// searching again.
func TestClusterSpecsOfAThousandSingleSlotPrimariesAreCached(t *testing.T) {
	nodes := thousandSingleSlotPrimaries(t)
	log, _ := bufferLogger()
	tg := Target{}
	tg.Probe.Namespace.Tag = "host-1234-5e2a91c0"
	cache := &tagCache{base: tg.Probe.Namespace.Tag}
	specs := clusterSpecs(tg, nodes, newNodeGuard(DiscoveryOptions{}, nil, newSpellLog(log)), cache)
	if len(specs) != DefaultMaxNodes {
		t.Fatalf("%d nodes, want %d", len(specs), DefaultMaxNodes)
	}
	for _, s := range specs {
		if s.tag == "" {
			t.Fatalf("node %s has no tag", s.node)
		}
	}
	for k, v := range cache.tags {
		cache.tags[k] = "cached-" + v
	}
	for _, s := range clusterSpecs(tg, nodes, newNodeGuard(DiscoveryOptions{}, nil, newSpellLog(log)), cache) {
		if !strings.HasPrefix(s.tag, "cached-") {
			t.Fatalf("node %s: tag %q was searched again, not taken from the cache", s.node, s.tag)
		}
	}
}

// BenchmarkClusterSpecsThousandPrimaries is the first refresh of a
// thousand single-slot primaries (one pass over the tags; a search per
// node took 2.5 s of CPU): go test -run '^$' -bench ClusterSpecs ./engine.
func BenchmarkClusterSpecsThousandPrimaries(b *testing.B) {
	nodes := thousandSingleSlotPrimaries(b)
	log, _ := bufferLogger()
	tg := Target{}
	tg.Probe.Namespace.Tag = "host-1234-5e2a91c0"
	for b.Loop() {
		clusterSpecs(tg, nodes, newNodeGuard(DiscoveryOptions{}, nil, newSpellLog(log)), &tagCache{base: tg.Probe.Namespace.Tag})
	}
}
