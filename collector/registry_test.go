package collector

import (
	"bytes"
	"errors"
	"regexp"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/redis-prober/redis-prober/internal/families"
	"github.com/redis-prober/redis-prober/internal/families/familiestest"
	"google.golang.org/protobuf/proto"
)

// gatherSet builds a set of several targets: two nodes of one, one with
// its own collectors, events and histograms to sort, drops counted.
func gatherSet(t testing.TB) *Targets {
	t.Helper()
	info := readFixture(t, "info", "redis-8.0.txt")
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
	for _, c := range []familyCollector{set, set.Health().(familyCollector)} {
		want := gatherAll(t, c)
		got, err := c.Gather()
		if err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 {
			t.Fatal("nothing gathered")
		}
		familiestest.Equal(t, "Gather", got, want)
	}
}

// TestRegistryGathersAsTheRegistry: the registry serves the set, its
// Health and the host collectors (whose health families the set shares)
// as client_golang's registry does, byte for byte in the text format but
// for the host collectors' durations, which change between two reads.
func TestRegistryGathersAsTheRegistry(t *testing.T) {
	set := gatherSet(t)
	host := NewHost(hostPaths("tuned"), AllEnabled(), nil)
	ours := NewRegistry()
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

// TestRegistryRegister: a family collector registers once, with the
// registry's checks of its descriptors, and unregisters; other collectors
// go to the registry.
func TestRegistryRegister(t *testing.T) {
	r := NewRegistry()
	set := NewTargets()
	if err := r.Register(set); err != nil {
		t.Fatal(err)
	}
	var are prometheus.AlreadyRegisteredError
	if err := r.Register(set); !errors.As(err, &are) {
		t.Errorf("a second Register: %v, want AlreadyRegisteredError", err)
	}
	// Another set has the same descriptors: refused, as by the registry.
	if err := r.Register(NewTargets()); err == nil {
		t.Error("a second set with the same descriptors was registered")
	}
	if !r.Unregister(set) {
		t.Error("Unregister of the set: false")
	}
	if err := r.Register(NewTargets()); err != nil {
		t.Errorf("a set after the first one's Unregister: %v", err)
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "x", Help: "x"})
	r.MustRegister(g)
	mfs, err := r.Gather()
	if err != nil || len(mfs) != 1 || mfs[0].GetName() != "x" {
		t.Errorf("Gather = %v, %v; want the gauge x alone", mfs, err)
	}
}

// TestRegistryConflicts: a family gathered twice with another type or
// help is an error and served once; a series gathered twice is an error
// and served once.
func TestRegistryConflicts(t *testing.T) {
	for _, tc := range []struct {
		name string
		mine []*dto.MetricFamily
		want string
	}{
		{"type", []*dto.MetricFamily{family("x", "x", dto.MetricType_COUNTER, "1")}, "is a GAUGE"},
		{"help", []*dto.MetricFamily{family("x", "other", dto.MetricType_GAUGE, "1")}, `with help "other"`},
		{"series", []*dto.MetricFamily{family("x", "x", dto.MetricType_GAUGE, "0", "2")}, "collected before"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRegistry()
			g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "x", Help: "x"}, []string{"l"})
			g.WithLabelValues("0").Set(1)
			mine := fixedFamilies(tc.mine)
			r.MustRegister(g, &mine)
			mfs, err := r.Gather()
			if err == nil || !regexp.MustCompile(regexp.QuoteMeta(tc.want)).MatchString(err.Error()) {
				t.Errorf("err = %v, want one with %q", err, tc.want)
			}
			if len(mfs) != 1 || mfs[0].GetName() != "x" {
				t.Fatalf("families %v, want x once", mfs)
			}
			for i, m := range mfs[0].GetMetric()[1:] {
				if families.Compare(mfs[0].GetMetric()[i], m) >= 0 {
					t.Errorf("x is not sorted or has a duplicate: %v", mfs[0].GetMetric())
				}
			}
		})
	}
}

// family is a family named name of gauges (or counters) with label l
// set to each of values.
func family(name, help string, typ dto.MetricType, values ...string) *dto.MetricFamily {
	mf := &dto.MetricFamily{Name: proto.String(name), Help: proto.String(help), Type: typ.Enum()}
	for _, v := range values {
		m := &dto.Metric{Label: []*dto.LabelPair{{Name: proto.String("l"), Value: proto.String(v)}}}
		if typ == dto.MetricType_COUNTER {
			m.Counter = &dto.Counter{Value: proto.Float64(1)}
		} else {
			m.Gauge = &dto.Gauge{Value: proto.Float64(1)}
		}
		mf.Metric = append(mf.Metric, m)
	}
	return mf
}

// fixedFamilies is a family collector that gathers fresh copies of its
// families.
type fixedFamilies []*dto.MetricFamily

func (*fixedFamilies) Describe(chan<- *prometheus.Desc) {}
func (*fixedFamilies) Collect(chan<- prometheus.Metric) {}
func (f *fixedFamilies) Gather() ([]*dto.MetricFamily, error) {
	out := make([]*dto.MetricFamily, len(*f))
	for i, mf := range *f {
		out[i] = proto.Clone(mf).(*dto.MetricFamily)
	}
	return out, nil
}

// BenchmarkRegistryGather1000: one Gather of 1,000 refreshed targets
// through the Registry (BenchmarkTargetsGather1000 is client_golang's).
func BenchmarkRegistryGather1000(b *testing.B) { benchGather1000(b, NewRegistry()) }
