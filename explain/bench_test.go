package explain

import (
	"os"
	"strconv"
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

// BenchmarkProcSample is one /proc sample of a process (the benchmark's
// own), as SampleProc takes it of a local redis-server.
func BenchmarkProcSample(b *testing.B) {
	s := procSampler{paths: collector.DefaultPaths(), pid: os.Getpid(), dir: "/proc/" + strconv.Itoa(os.Getpid())}
	b.ReportAllocs()
	for i := range b.N {
		s.sample(int64(i+1) * int64(time.Millisecond))
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
