package families

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"
)

// constSeries emits fixed series of one family, in the order given.
type constSeries struct {
	desc   *prometheus.Desc
	typ    prometheus.ValueType
	values [][]string
}

func (c constSeries) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c constSeries) Collect(ch chan<- prometheus.Metric) {
	for i, lvs := range c.values {
		ch <- prometheus.MustNewConstMetric(c.desc, c.typ, float64(i), lvs...)
	}
}

// randomValues are n distinct label value tuples of width labels, drawn
// from values that sort in every way a key could get wrong: empty, one a
// prefix of another, NUL bytes, bytes above 0x7f.
func randomValues(r *rand.Rand, n, width int) [][]string {
	alphabet := []string{"", "a", "ab", "a\x00", "a\x00b", "b", "\x00", "é", "t001", "t010", "127.0.0.1:6379", "z"}
	seen := map[string]bool{}
	var out [][]string
	for len(out) < n {
		lvs := make([]string, width)
		for i := range lvs {
			lvs[i] = alphabet[r.IntN(len(alphabet))]
			if r.IntN(3) == 0 {
				lvs[i] += fmt.Sprint(r.IntN(50))
			}
		}
		k := fmt.Sprintf("%q", lvs)
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, lvs)
	}
	return out
}

// TestBuilderGathersAsTheRegistry gathers the same collectors through a
// client_golang registry and through a Builder: the families must be the
// same, series for series, in the same order.
func TestBuilderGathersAsTheRegistry(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 50 {
		reg := prometheus.NewRegistry()
		var b Builder
		for i, width := range []int{1, 2, 3, 5} {
			name := fmt.Sprintf("fam_%d_%d", round, i)
			labels := make([]string, width)
			for j := range labels {
				labels[j] = fmt.Sprintf("l%d", j)
			}
			c := constSeries{
				desc:   prometheus.NewDesc(name, "help of "+name, labels, nil),
				typ:    prometheus.ValueType(1 + r.IntN(2)),
				values: randomValues(r, 1+r.IntN(300), width),
			}
			reg.MustRegister(c)
			b.Collect(name, "help of "+name, c)
		}
		want, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got, err := b.Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("round %d: %d families, the registry %d", round, len(got), len(want))
		}
		for i := range want {
			if !proto.Equal(got[i], want[i]) {
				t.Fatalf("round %d: family %s differs from the registry's:\n got %s\nwant %s",
					round, want[i].GetName(), text(t, got[i]), text(t, want[i]))
			}
		}
	}
}

func text(t *testing.T, mf *dto.MetricFamily) string {
	t.Helper()
	var b []byte
	w := &sliceWriter{&b}
	if _, err := expfmt.MetricFamilyToText(w, mf); err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type sliceWriter struct{ b *[]byte }

func (w *sliceWriter) Write(p []byte) (int, error) { *w.b = append(*w.b, p...); return len(p), nil }

// TestBuilderRefusesADuplicate: a series collected twice is dropped with
// an error, as the registry refuses it.
func TestBuilderRefusesADuplicate(t *testing.T) {
	c := constSeries{
		desc:   prometheus.NewDesc("dup", "h", []string{"a"}, nil),
		typ:    prometheus.GaugeValue,
		values: [][]string{{"x"}, {"y"}, {"x"}},
	}
	var b Builder
	b.Collect("dup", "h", c)
	mfs, err := b.Result()
	if err == nil {
		t.Fatal("no error for a series collected twice")
	}
	if len(mfs) != 1 || len(mfs[0].Metric) != 2 {
		t.Fatalf("families %v, want one with the two distinct series", mfs)
	}
}

// TestBuilderRefusesAMixedFamily: a series of another type than its
// family's first is dropped with an error.
func TestBuilderRefusesAMixedFamily(t *testing.T) {
	d := prometheus.NewDesc("mixed", "h", []string{"a"}, nil)
	var b Builder
	b.Collect("mixed", "h", mixed{d})
	mfs, err := b.Result()
	if err == nil {
		t.Fatal("no error for a counter in a gauge family")
	}
	if len(mfs) != 1 || len(mfs[0].Metric) != 1 || mfs[0].GetType() != dto.MetricType_GAUGE {
		t.Fatalf("families %v, want the gauge alone", mfs)
	}
}

type mixed struct{ d *prometheus.Desc }

func (m mixed) Describe(ch chan<- *prometheus.Desc) { ch <- m.d }
func (m mixed) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(m.d, prometheus.GaugeValue, 1, "g")
	ch <- prometheus.MustNewConstMetric(m.d, prometheus.CounterValue, 1, "c")
}

// TestBuilderLeavesOutAnEmptyFamily, as the registry does.
func TestBuilderLeavesOutAnEmptyFamily(t *testing.T) {
	var b Builder
	b.Collect("empty", "h", constSeries{desc: prometheus.NewDesc("empty", "h", nil, nil)})
	if mfs, err := b.Result(); err != nil || len(mfs) != 0 {
		t.Fatalf("got %v, %v; want no family", mfs, err)
	}
}
