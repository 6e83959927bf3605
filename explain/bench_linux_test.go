//go:build linux

package explain

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/host"
)

// BenchmarkProcSample is one /proc sample of a process (the benchmark's
// own), as SampleProc takes it of a local redis-server.
func BenchmarkProcSample(b *testing.B) {
	s := procSampler{paths: host.DefaultPaths(), pid: os.Getpid(), dir: "/proc/" + strconv.Itoa(os.Getpid())}
	b.ReportAllocs()
	for i := range b.N {
		s.sample(int64(i+1) * int64(time.Millisecond))
	}
}
