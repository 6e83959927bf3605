package explain

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redis-prober/redis-prober/internal/exposition/expositiontest"
)

// TestMetricsGatherAsTheRegistry: the families Metrics builds itself are
// those a client_golang registry gathers from its Collect, series for
// series and in the same order, for nodes added in no particular order
// (single servers and Cluster nodes, counts of every cause, thresholds and
// shares of their own), after one leaves and with none.
func TestMetricsGatherAsTheRegistry(t *testing.T) {
	t.Parallel()
	m := NewMetrics()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	expositiontest.SameGather(t, "no node", m, reg)
	var removes []func()
	for _, i := range []int{7, 2, 11, 0, 5, 3, 9} {
		n, _ := newTestNode(Config{Threshold: time.Duration(i+1) * time.Millisecond})
		n.mu.Lock()
		for c := range NumCauses {
			if (int(c)+i)%3 != 0 {
				n.counts[c] = uint64(i*100 + int(c))
				n.countMinute(n.now().Unix()/60, c)
			}
		}
		n.mu.Unlock()
		target, node := fmt.Sprintf("t%c", 'a'+i%4), ""
		if i%2 == 1 {
			node = fmt.Sprintf("10.0.0.%d:6379", 9-i)
		}
		removes = append(removes, m.Add(target, node, n))
	}
	expositiontest.SameGather(t, "seven nodes", m, reg)
	removes[2]()
	expositiontest.SameGather(t, "a node gone", m, reg)
	for _, r := range removes {
		r()
	}
	expositiontest.SameGather(t, "all gone", m, reg)
}
