package explain

import (
	"os"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/collector"
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
		info, err := collector.ParseInfo(text)
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
