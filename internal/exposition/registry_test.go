package exposition

import (
	"errors"
	"regexp"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// described is a family collector with a descriptor, as collector.Targets
// is one: fixed families, no series through Collect.
type described struct {
	desc *prometheus.Desc
	fixedFamilies
}

func newDescribed() *described {
	return &described{desc: prometheus.NewDesc("d", "d", []string{"l"}, nil),
		fixedFamilies: fixedFamilies{family("d", "d", dto.MetricType_GAUGE, "1")}}
}

func (d *described) Describe(ch chan<- *prometheus.Desc) { ch <- d.desc }

// TestRegistryRegister: a family collector registers once, with the
// registry's checks of its descriptors, and unregisters; other collectors
// go to the registry.
func TestRegistryRegister(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	set := newDescribed()
	if err := r.Register(set); err != nil {
		t.Fatal(err)
	}
	var are prometheus.AlreadyRegisteredError
	if err := r.Register(set); !errors.As(err, &are) {
		t.Errorf("a second Register: %v, want AlreadyRegisteredError", err)
	}
	// Another one has the same descriptors: refused, as by the registry.
	if err := r.Register(newDescribed()); err == nil {
		t.Error("a second family collector with the same descriptors was registered")
	}
	if !r.Unregister(set) {
		t.Error("Unregister of the family collector: false")
	}
	if err := r.Register(newDescribed()); err != nil {
		t.Errorf("a family collector after the first one's Unregister: %v", err)
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "x", Help: "x"})
	r.MustRegister(g)
	mfs, err := r.Gather()
	if err != nil || len(mfs) != 2 || mfs[0].GetName() != "d" || mfs[1].GetName() != "x" {
		t.Errorf("Gather = %v, %v; want the family collector's d and the gauge x", mfs, err)
	}
}

// TestRegistryConflicts: a family gathered twice with another type or
// help is an error and served once; a series gathered twice is an error
// and served once.
func TestRegistryConflicts(t *testing.T) {
	t.Parallel()
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
				if CompareMetrics(mfs[0].GetMetric()[i], m) >= 0 {
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
