package explain

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redis-prober/redis-prober/internal/nodeid"
	"github.com/redis-prober/redis-prober/internal/redisinfo"
	"github.com/redis-prober/redis-prober/prober"
)

// BenchmarkInfoTick is what a Tick does with an INFO reply: parse it and
// diff it against the last.
func BenchmarkInfoTick(b *testing.B) {
	raw, err := os.ReadFile("testdata/info-7.0-during-bgsave.txt")
	if err != nil {
		b.Fatal(err)
	}
	text := string(raw)
	prev := infoSnap{}
	b.ReportAllocs()
	for i := range b.N {
		info, err := redisinfo.Parse(text)
		if err != nil {
			b.Fatal(err)
		}
		cur := snapOf(info, int64(i+1))
		_ = infoEvidence(prev, cur)
		prev = cur
	}
}

// BenchmarkObserve is the probe's hot path: a fast request and a slow one.
func BenchmarkObserve(b *testing.B) {
	n := NewNode(Config{Threshold: time.Millisecond})
	rec := n.Tap(prober.NopRecorder{})
	b.ReportAllocs()
	for i := range b.N {
		rec.RecordClientDelay(10 * time.Microsecond)
		rec.Record(0, prober.ResultOK, 200*time.Microsecond)
		if i%1000 == 0 {
			n.Settle(time.Now().UnixNano())
		}
	}
}

// BenchmarkMetricsGather is explain's part of a scrape at 1,000 targets,
// as a client_golang registry gathers it from Collect.
func BenchmarkMetricsGather(b *testing.B) {
	m := NewMetrics()
	for i := range 1000 {
		m.Add(nodeid.ID{Target: fmt.Sprintf("t%03d", i)}, NewNode(Config{Threshold: time.Millisecond}))
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	b.ReportAllocs()
	for range b.N {
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}
