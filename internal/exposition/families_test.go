package exposition

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis-prober/redis-prober/internal/exposition/expositiontest"
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
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 50 {
		reg := prometheus.NewRegistry()
		var b Builder
		for i, width := range []int{1, 2, 3, 5} {
			name := fmt.Sprintf("fam_%d_%d", round, 3-i) // collected out of name order
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
			b.Collect(name, "help of "+name, c, nil)
		}
		expositiontest.SameGather(t, fmt.Sprintf("round %d", round), prometheus.GathererFunc(b.Result), reg)
		if t.Failed() {
			return
		}
	}
}

// TestBuilderRefusesADuplicate: a series collected twice is dropped with
// an error, as the registry refuses it.
func TestBuilderRefusesADuplicate(t *testing.T) {
	t.Parallel()
	c := constSeries{
		desc:   prometheus.NewDesc("dup", "h", []string{"a"}, nil),
		typ:    prometheus.GaugeValue,
		values: [][]string{{"x"}, {"y"}, {"x"}},
	}
	var b Builder
	b.Collect("dup", "h", c, nil)
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
	t.Parallel()
	d := prometheus.NewDesc("mixed", "h", []string{"a"}, nil)
	var b Builder
	b.Collect("mixed", "h", mixed{d}, nil)
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
	t.Parallel()
	var b Builder
	b.Collect("empty", "h", constSeries{desc: prometheus.NewDesc("empty", "h", nil, nil)}, nil)
	if mfs, err := b.Result(); err != nil || len(mfs) != 0 {
		t.Fatalf("got %v, %v; want no family", mfs, err)
	}
}

// shuffled hands out the same metrics at every Collect, in a new order
// each time, as a vector's map does.
type shuffled struct {
	r  *rand.Rand
	ms []prometheus.Metric
}

func (s *shuffled) Describe(chan<- *prometheus.Desc) {}

func (s *shuffled) Collect(ch chan<- prometheus.Metric) {
	for _, i := range s.r.Perm(len(s.ms)) {
		ch <- s.ms[i]
	}
}

// TestOrderFollowsTheSeries: a family gathered with an Order is sorted as
// the registry sorts it at every Gather, while its series stay the same
// (placed from the last order) and after series come, go, or collide.
func TestOrderFollowsTheSeries(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	vec := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "g", Help: "h"}, []string{"a", "b"})
	src := &shuffled{r: r}
	seen := map[prometheus.Metric]bool{}
	add := func(n int) {
		for _, lvs := range randomValues(r, n, 2) {
			if g, err := vec.GetMetricWithLabelValues(lvs...); err == nil && !seen[g] {
				seen[g] = true
				src.ms = append(src.ms, g)
			}
		}
	}
	var o Order
	check := func(step string, wantErr bool) {
		t.Helper()
		want := slices.Clone(src.ms)
		var b Builder
		b.Collect("g", "h", src, &o)
		mfs, err := b.Result()
		if (err != nil) != wantErr {
			t.Fatalf("%s: error %v, want one: %v", step, err, wantErr)
		}
		if len(mfs) != 1 {
			t.Fatalf("%s: %d families", step, len(mfs))
		}
		got := mfs[0].Metric
		if !slices.IsSortedFunc(got, func(a, b *dto.Metric) int {
			if c := CompareMetrics(a, b); c != 0 {
				return c
			}
			return 1 // equal neighbours: a duplicate left in
		}) {
			t.Fatalf("%s: series out of order or duplicated", step)
		}
		if !wantErr && len(got) != len(want) {
			t.Fatalf("%s: %d series, want %d", step, len(got), len(want))
		}
		if b.sorted[mfs[0]] == wantErr {
			t.Fatalf("%s: sorted by the Order: %v, want %v", step, b.sorted[mfs[0]], !wantErr)
		}
	}
	add(200)
	check("first", false)
	check("same series", false)
	check("same series again", false)
	add(20)
	check("more series", false)
	src.ms = src.ms[7:]
	check("fewer series", false)
	src.ms = append(src.ms, src.ms[3])
	check("one collected twice", true)
	src.ms = src.ms[:len(src.ms)-1]
	check("after the duplicate", false)
	check("after the duplicate, placed", false)
}
