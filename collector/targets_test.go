package collector

import (
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/encoding/prototext"
)

// seriesText is every series of mfs as text, sorted, without the timing
// family and the created timestamps, which differ between two reads.
func seriesText(t testing.TB, mfs []*dto.MetricFamily) []string {
	t.Helper()
	var out []string
	for _, mf := range mfs {
		if mf.GetName() == "redis_prober_collector_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if c := m.GetCounter(); c != nil {
				c.CreatedTimestamp = nil
			}
			if h := m.GetHistogram(); h != nil {
				h.CreatedTimestamp = nil
			}
			out = append(out, mf.GetName()+" "+mf.GetHelp()+" "+mf.GetType().String()+" "+prototext.Format(m))
		}
	}
	slices.Sort(out)
	return out
}

func gatherAll(t testing.TB, cs ...prometheus.Collector) []*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

// TestTargetsCollectWhatEachTargetAloneDoes: one set of several targets
// (two nodes of one, one refreshed before it is added with series to
// drop) exposes exactly the series of the same targets collected alone.
func TestTargetsCollectWhatEachTargetAloneDoes(t *testing.T) {
	info := infoFixture(t, "info", "redis-8.0.txt")
	doer := func() *replayDoer {
		return &replayDoer{info: info, config: defaultConfig(), commandstats: "# Commandstats\r\n",
			// The same event twice: 3 latency series dropped.
			latest: []any{
				[]any{"fork", int64(1795985000), int64(5), int64(12)},
				[]any{"fork", int64(1795985001), int64(6), int64(13)},
			},
			histogram: []any{"get", []any{"calls", int64(3), "histogram_usec", []any{int64(1), int64(2), int64(2), int64(3)}}},
		}
	}
	cfgs := []TargetConfig{
		{Name: "a", Node: "10.0.0.1:6379", Commands: []string{"get"}, Paths: hostPaths("tuned")},
		{Name: "a", Node: "10.0.0.2:6379", Commands: []string{"get"}, Paths: hostPaths("tuned"), ServerClassicBuckets: true},
		{Name: "b", Commands: []string{"get"}, Paths: hostPaths("untuned"), Enabled: Enabled{"latency": true}},
	}
	set := NewTargets()
	var want []string
	for _, cfg := range cfgs {
		alone := NewTarget(cfg, doer())
		alone.Refresh(t.Context())
		want = append(want, seriesText(t, gatherAll(t, alone))...)

		tgt := set.NewTarget(cfg, doer())
		tgt.Refresh(t.Context()) // before Add: its drops wait
		if _, err := set.Add(tgt); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(want)
	got := seriesText(t, gatherAll(t, set, set.Health()))
	if !slices.Equal(got, want) {
		t.Errorf("the set's series differ from its targets' alone:\ngot  %d: %q\nwant %d: %q", len(got), got, len(want), want)
	}
	var dropped float64
	for _, mf := range gatherAll(t, set, set.Health()) {
		if mf.GetName() == "redis_prober_collector_dropped_series_total" {
			for _, m := range mf.GetMetric() {
				dropped += m.GetCounter().GetValue()
			}
		}
	}
	if dropped != 3*3 {
		t.Errorf("dropped series over the set = %v, want 9 (3 a target, counted before Add)", dropped)
	}
}

// TestTargetsAddRemove: a duplicate target and node, a target of another
// set and a second Add are refused; remove takes every series of the
// target away, its fork histogram and dropped counters too, and only its.
func TestTargetsAddRemove(t *testing.T) {
	d := &replayDoer{info: infoFixture(t, "info", "redis-8.0.txt"), config: defaultConfig(), latest: []any{}}
	set := NewTargets()
	cfg := TargetConfig{Name: "a", Node: "n1", Paths: hostPaths("tuned")}
	a := set.NewTarget(cfg, d)
	if got := seriesText(t, gatherAll(t, a)); len(got) != 0 {
		t.Errorf("a target not added yet has series: %q", got)
	}
	removeA, err := set.Add(a)
	if err != nil {
		t.Fatal(err)
	}
	b := set.NewTarget(TargetConfig{Name: "a", Node: "n2", Paths: hostPaths("tuned")}, d)
	removeB, err := set.Add(b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := set.Add(set.NewTarget(cfg, d)); err == nil {
		t.Error("a duplicate target and node was added")
	}
	if _, err := set.Add(a); err == nil {
		t.Error("a target was added twice")
	}
	if _, err := NewTargets().Add(b); err == nil {
		t.Error("a target of another set was added")
	}
	a.Refresh(t.Context())
	b.Refresh(t.Context())
	onlyB := seriesText(t, gatherAll(t, b))
	removeA()
	removeA() // twice is harmless
	if got := seriesText(t, gatherAll(t, set, set.Health())); !slices.Equal(got, onlyB) {
		t.Errorf("after remove, the set has %d series, want the other target's %d:\n%q", len(got), len(onlyB), got)
	}
	// The same labels may come back, from zero.
	a2 := set.NewTarget(cfg, d)
	if _, err := set.Add(a2); err != nil {
		t.Fatalf("the removed target's labels cannot come back: %v", err)
	}
	removeB()
	a2.Refresh(t.Context())
	if got, want := seriesText(t, gatherAll(t, set, set.Health())), seriesText(t, gatherAll(t, a2)); !slices.Equal(got, want) || len(got) == 0 {
		t.Errorf("after the other's remove: %d series, want the new target's %d", len(got), len(want))
	}
}

// benchTargets builds n targets of one set from fixtures, refreshed and
// added.
func benchTargets(b *testing.B, set *Targets, d Doer, n int) []*Target {
	ts := make([]*Target, n)
	for i := range ts {
		ts[i] = set.NewTarget(TargetConfig{Name: fmt.Sprintf("target-%04d", i), Node: "10.0.0.1:6379", Commands: []string{"get"}, Paths: hostPaths("tuned")}, d)
		if _, err := set.Add(ts[i]); err != nil {
			b.Fatal(err)
		}
	}
	return ts
}

func benchDoer(b *testing.B) *replayDoer {
	return &replayDoer{info: infoFixture(b, "info", "redis-8.0.txt"), config: defaultConfig(),
		latest:       []any{[]any{"fork", int64(1795985000), int64(5), int64(12)}},
		histogram:    []any{"get", []any{"calls", int64(3000), "histogram_usec", []any{int64(1), int64(2100), int64(2), int64(2950)}}},
		commandstats: "# Commandstats\r\ncmdstat_get:calls=3000,usec=2850\r\n"}
}

// BenchmarkTargetsBuild1000: the collectors of 1,000 targets, made and
// registered (before refresh). live-B is the heap they keep.
func BenchmarkTargetsBuild1000(b *testing.B) {
	d := benchDoer(b)
	b.ReportAllocs()
	var live uint64
	for b.Loop() {
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		reg := prometheus.NewRegistry()
		set := NewTargets()
		if err := reg.Register(set); err != nil {
			b.Fatal(err)
		}
		if err := reg.Register(set.Health()); err != nil {
			b.Fatal(err)
		}
		ts := benchTargets(b, set, d, 1000)
		runtime.GC()
		runtime.ReadMemStats(&m1)
		live = m1.HeapAlloc - m0.HeapAlloc
		runtime.KeepAlive(reg)
		runtime.KeepAlive(ts)
	}
	b.ReportMetric(float64(live), "live-B")
}

// BenchmarkTargetsGather1000: one Gather of 1,000 refreshed targets.
func BenchmarkTargetsGather1000(b *testing.B) { benchGather1000(b, prometheus.NewRegistry()) }

// benchGather1000 gathers 1,000 refreshed targets registered on reg.
func benchGather1000(b *testing.B, reg interface {
	prometheus.Registerer
	prometheus.Gatherer
}) {
	d := benchDoer(b)
	set := NewTargets()
	reg.MustRegister(set, set.Health())
	for _, t := range benchTargets(b, set, d, 1000) {
		t.Refresh(b.Context())
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		mfs, err := reg.Gather()
		if err != nil {
			b.Fatal(err)
		}
		n = 0
		for _, mf := range mfs {
			n += len(mf.GetMetric())
		}
	}
	b.ReportMetric(float64(n), "series")
}

// TestTargetsRefuseInvalidLabels: a target or node label that is not
// valid UTF-8 is refused by Add (client_golang would panic on it), and a
// Target alone with one still refreshes.
func TestTargetsRefuseInvalidLabels(t *testing.T) {
	d := &replayDoer{info: infoFixture(t, "info", "redis-8.0.txt"), config: defaultConfig(), latest: []any{}}
	set := NewTargets()
	if _, err := set.Add(set.NewTarget(TargetConfig{Name: "bad\xff", Paths: hostPaths("tuned")}, d)); err == nil {
		t.Error("a target label that is not UTF-8 was added")
	}
	alone := NewTarget(TargetConfig{Name: "a", Node: "\xfe", Paths: hostPaths("tuned")}, d)
	alone.Refresh(t.Context())
	if alone.Snapshot().Info == nil {
		t.Error("no INFO in the snapshot")
	}
	if got := seriesText(t, gatherAll(t, alone)); len(got) != 0 {
		t.Errorf("series of a node label that is not UTF-8: %q", got)
	}
}

// TestTargetsBesideHost: the set and its Health register beside the host
// collectors, whose health families they share (target="" and node=""
// there as const labels), and one pedantic Gather holds both kinds. A
// target's collector durations are there when it asks for them
// (--collector.per-target-duration), its successes always.
func TestTargetsBesideHost(t *testing.T) {
	for _, duration := range []bool{true, false} {
		t.Run(fmt.Sprintf("duration=%v", duration), func(t *testing.T) { testTargetsBesideHost(t, duration) })
	}
}

func testTargetsBesideHost(t *testing.T, duration bool) {
	d := &replayDoer{info: infoFixture(t, "info", "redis-8.0.txt"), config: defaultConfig(), latest: []any{}}
	set := NewTargets()
	tgt := set.NewTarget(TargetConfig{Name: "a", Node: "n1", Paths: hostPaths("tuned"), Duration: duration}, d)
	tgt.Refresh(t.Context())
	if _, err := set.Add(tgt); err != nil {
		t.Fatal(err)
	}
	host := NewHost(hostPaths("tuned"), AllEnabled(), nil)
	mfs := gatherAll(t, host, set, set.Health())
	got := seriesText(t, mfs)
	want := append(seriesText(t, gatherAll(t, host)), seriesText(t, gatherAll(t, tgt))...)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("host and set together: %d series, want the host's and the target's %d", len(got), len(want))
	}
	count := func(name string) (hosts, targets int) {
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "target" && l.GetValue() == "" {
						hosts++
					} else if l.GetName() == "target" {
						targets++
					}
				}
			}
		}
		return hosts, targets
	}
	hosts, targets := count("redis_prober_collector_success")
	if hosts == 0 || targets == 0 {
		t.Errorf("collector_success: %d host and %d target series, want both", hosts, targets)
	}
	hostDurations, targetDurations := count("redis_prober_collector_duration_seconds")
	if hostDurations != hosts || (targetDurations == targets) != duration || (!duration && targetDurations != 0) {
		t.Errorf("collector_duration_seconds: %d host and %d target series (success: %d and %d), target durations asked: %v",
			hostDurations, targetDurations, hosts, targets, duration)
	}
}
