package exposition_test

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// The A/B of the hand-written gathering against client_golang's own
// (issue 26, part 2), at 100 and 1,000 targets of a world (see newWorld):
// BenchmarkGather{Ours,Registry}, exposition.Registry, whose big
// collectors build their own families, against prometheus.Registry
// collecting the same collectors. (The hand-written protobuf encoder and
// handler were measured the same way and removed: docs/performance.md.)
//
// Beside ns/op each reports cpu-ns/op, the process's user and system CPU
// a op (a Gather runs on several goroutines; the garbage collector on
// others). make bench-exposition runs them in interleaved rounds.
var benchTargets = []int{100, 1000}

// worlds keeps the world of each size for the benchmarks of one run: at
// 1,000 targets one takes seconds to build.
var worlds = map[int]*world{}

func benchWorld(b *testing.B, targets int) *world {
	b.Helper()
	if w := worlds[targets]; w != nil {
		return w
	}
	w := newWorld(b, targets)
	worlds[targets] = w
	return w
}

// eachSize runs f as a sub-benchmark targets=N for each size.
func eachSize(b *testing.B, f func(b *testing.B, w *world)) {
	for _, n := range benchTargets {
		b.Run(fmt.Sprintf("targets=%d", n), func(b *testing.B) { f(b, benchWorld(b, n)) })
	}
}

// loop runs op as the benchmark's loop and reports its CPU time a op.
func loop(b *testing.B, op func()) {
	b.ReportAllocs()
	start := cpuTime(b)
	for b.Loop() {
		op()
	}
	b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
}

func BenchmarkGatherOurs(b *testing.B) {
	eachSize(b, func(b *testing.B, w *world) { benchGather(b, w.ours) })
}

func BenchmarkGatherRegistry(b *testing.B) {
	eachSize(b, func(b *testing.B, w *world) { benchGather(b, w.theirs) })
}

func benchGather(b *testing.B, g prometheus.Gatherer) {
	var n int
	loop(b, func() {
		mfs, err := g.Gather()
		if err != nil {
			b.Fatal(err)
		}
		n = series(mfs)
	})
	b.ReportMetric(float64(n), "series")
}
