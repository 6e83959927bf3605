package collector

import (
	"bytes"
	"regexp"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/redis-prober/redis-prober/internal/exposition"
	"github.com/redis-prober/redis-prober/internal/exposition/expositiontest"
)

// gatherSet builds a set of several targets: two nodes of one, one with
// its own collectors, events and histograms to sort, drops counted.
func gatherSet(t testing.TB) *Targets {
	t.Helper()
	info := infoFixture(t, "info", "redis-8.0.txt")
	set := NewTargets()
	cfgs := []TargetConfig{
		{Name: "b", Node: "10.0.0.2:6379", Commands: []string{"get", "set"}, Paths: hostPaths("tuned")},
		{Name: "a", Node: "10.0.0.2:6379", Commands: []string{"get"}, Paths: hostPaths("untuned"), ServerClassicBuckets: true},
		{Name: "a", Node: "10.0.0.1:6379", Commands: []string{"get"}, Paths: hostPaths("tuned")},
		{Name: "c", Commands: []string{"get"}, Paths: hostPaths("untuned"), Enabled: Enabled{"latency": true, "checks": true}},
	}
	for i, cfg := range cfgs {
		d := &replayDoer{info: info, config: defaultConfig(), commandstats: "# Commandstats\r\ncmdstat_get:calls=3,usec=9\r\n",
			latest: []any{
				[]any{"fork", int64(1795985000 + i), int64(5), int64(12)},
				[]any{"command", int64(1795985001), int64(6 + i), int64(13)},
				[]any{"fork", int64(1795985001), int64(6), int64(13)}, // repeated: dropped
			},
			histogram: []any{
				"set", []any{"calls", int64(2), "histogram_usec", []any{int64(1), int64(2)}},
				"get", []any{"calls", int64(3), "histogram_usec", []any{int64(1), int64(2), int64(2), int64(3)}},
			},
		}
		tgt := set.NewTarget(cfg, d)
		tgt.Refresh(t.Context())
		if _, err := set.Add(tgt); err != nil {
			t.Fatal(err)
		}
	}
	return set
}

// TestTargetsGatherAsTheRegistry: a set's own Gather (and its Health's)
// returns exactly the families a pedantic registry gathers from its
// Collect, in the same order.
func TestTargetsGatherAsTheRegistry(t *testing.T) {
	set := gatherSet(t)
	type familyCollector interface {
		prometheus.Collector
		prometheus.Gatherer
	}
	for _, c := range []familyCollector{set, set.Health().(familyCollector)} {
		want := gatherAll(t, c)
		got, err := c.Gather()
		if err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 {
			t.Fatal("nothing gathered")
		}
		expositiontest.Equal(t, "Gather", got, want)
	}
}

// TestRegistryGathersAsTheRegistry: exposition.Registry serves the set,
// its Health and the host collectors (whose health families the set
// shares) as client_golang's registry does, byte for byte in the text format but
// for the host collectors' durations, which change between two reads.
func TestRegistryGathersAsTheRegistry(t *testing.T) {
	set := gatherSet(t)
	host := NewHost(hostPaths("tuned"), AllEnabled(), nil)
	ours := exposition.NewRegistry()
	ours.MustRegister(host, set, set.Health())
	theirs := prometheus.NewPedanticRegistry()
	theirs.MustRegister(host, set, set.Health())

	text := func(g prometheus.Gatherer) string {
		t.Helper()
		mfs, err := g.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		for _, mf := range mfs {
			if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
				t.Fatal(err)
			}
		}
		return regexp.MustCompile(`(?m)^(redis_prober_collector_duration_seconds\{collector="[a-z]+",node="",target=""\}) .*$`).
			ReplaceAllString(b.String(), "$1 X")
	}
	got, want := text(ours), text(theirs)
	if got != want {
		t.Errorf("the registry's text differs from client_golang's:\ngot\n%s\nwant\n%s", got, want)
	}
	if !regexp.MustCompile(`collector_success\{collector="thp",node="",target=""\}`).MatchString(got) ||
		!regexp.MustCompile(`collector_success\{collector="info",node="10.0.0.1:6379",target="a"\}`).MatchString(got) {
		t.Error("the host's or the targets' health series are missing")
	}
}

// BenchmarkRegistryGather1000: one Gather of 1,000 refreshed targets
// through exposition.Registry (BenchmarkTargetsGather1000 is
// client_golang's).
func BenchmarkRegistryGather1000(b *testing.B) { benchGather1000(b, exposition.NewRegistry()) }
