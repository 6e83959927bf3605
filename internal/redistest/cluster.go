package redistest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of primaries started for a test.
type Cluster struct {
	Nodes []*Server
}

// StartCluster starts n cluster-enabled servers, splits the 16384 slots
// evenly between them, joins them and waits for cluster_state:ok.
func StartCluster(t testing.TB, n int, directives ...string) *Cluster {
	t.Helper()
	c := &Cluster{}
	for range n {
		c.Nodes = append(c.Nodes, Start(t, append([]string{
			"cluster-enabled yes", "cluster-config-file nodes.conf", "cluster-node-timeout 2000",
		}, directives...)...))
	}
	ctx := context.Background()
	per := 16384 / n
	for i, s := range c.Nodes {
		lo, hi := i*per, (i+1)*per-1
		if i == n-1 {
			hi = 16383
		}
		cl := s.Client()
		if err := cl.ClusterAddSlotsRange(ctx, lo, hi).Err(); err != nil {
			t.Fatalf("redistest: addslots on %s: %v", s.Addr(), err)
		}
	}
	first := c.Nodes[0].Client()
	for _, s := range c.Nodes[1:] {
		if err := first.ClusterMeet(ctx, "127.0.0.1", fmt.Sprint(s.Port)).Err(); err != nil {
			t.Fatalf("redistest: cluster meet: %v", err)
		}
	}
	c.WaitOK(t)
	return c
}

// WaitOK waits until every node reports cluster_state:ok and knows all
// nodes.
func (c *Cluster) WaitOK(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for _, s := range c.Nodes {
		cl := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2, DisableIdentity: true})
		for {
			info, _ := cl.ClusterInfo(ctx).Result()
			nodes, _ := cl.ClusterNodes(ctx).Result()
			if strings.Contains(info, "cluster_state:ok") && strings.Count(strings.TrimSpace(nodes), "\n")+1 >= len(c.Nodes) {
				break
			}
			if time.Now().After(deadline) {
				cl.Close()
				t.Fatalf("redistest: cluster not ok after 20s: %s", info)
			}
			time.Sleep(50 * time.Millisecond)
		}
		cl.Close()
	}
}

// StartSentinel starts a Sentinel watching primary under masterName.
func StartSentinel(t testing.TB, masterName string, primary *Server) *Server {
	t.Helper()
	s := &Server{t: t, bin: Binary(t), Dir: t.TempDir()}
	var lastErr error
	for range 5 {
		s.Port = FreePort(t)
		conf := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nlogfile %s/sentinel.log\nprotected-mode no\n"+
			"sentinel monitor %s 127.0.0.1 %d 1\nsentinel down-after-milliseconds %s 1000\n"+
			"sentinel failover-timeout %s 5000\nsentinel parallel-syncs %s 1\n",
			s.Port, s.Dir, s.Dir, masterName, primary.Port, masterName, masterName, masterName)
		path := s.Dir + "/sentinel.conf"
		if err := writeFile(path, conf); err != nil {
			t.Fatal(err)
		}
		s.args = []string{path, "--sentinel"}
		if lastErr = s.start(); lastErr == nil {
			t.Cleanup(s.Stop)
			return s
		}
	}
	t.Fatalf("redistest: start sentinel: %v", lastErr)
	return nil
}
