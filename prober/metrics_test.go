package prober

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/redis-prober/redis-prober/internal/exposition/expositiontest"
	"github.com/redis-prober/redis-prober/wire"
)

// The probe phase of redis_prober_latency_seconds keeps its classic
// buckets (the burn-rate rules count below their 5 ms bound); the burst
// phase has native buckets only, plus the +Inf bucket, sum and count of
// every histogram. Both phases live in one family.
func TestLatencyClassicBucketsByPhase(t *testing.T) {
	tests := []struct {
		phase   Phase
		classic []float64
		// textBuckets are the _bucket lines of one command in the text
		// format: the classic bounds and +Inf.
		textBuckets int
	}{
		{PhaseProbe, LatencyBuckets, len(LatencyBuckets) + 1},
		{PhaseBurst, nil, 1},
	}
	samples := []time.Duration{300 * time.Microsecond, 3 * time.Millisecond, 500 * time.Millisecond}
	reg := prometheus.NewPedanticRegistry()
	m := NewMetrics(reg)
	for _, tt := range tests {
		r := m.Commands("t", tt.phase, []string{"get", "set"})
		for _, d := range samples {
			r.Record(0, ResultOK, d)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(mfs, func(mf *dto.MetricFamily) bool { return mf.GetName() == "redis_prober_latency_seconds" })
	if i < 0 {
		t.Fatal("no redis_prober_latency_seconds")
	}
	lat := mfs[i]
	var text bytes.Buffer
	enc := expfmt.NewEncoder(&text, expfmt.NewFormat(expfmt.TypeTextPlain))
	if err := enc.Encode(lat); err != nil {
		t.Fatal(err)
	}
	if problems, err := promlint.NewWithMetricFamilies([]*dto.MetricFamily{lat}).Lint(); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
	for _, tt := range tests {
		t.Run(string(tt.phase), func(t *testing.T) {
			for _, cmd := range []string{"get", "set"} {
				h := histogramOf(t, lat, cmd, tt.phase)
				var bounds []float64
				for _, b := range h.GetBucket() {
					bounds = append(bounds, b.GetUpperBound())
				}
				if !slices.Equal(bounds, tt.classic) {
					t.Errorf("%s: classic bounds %v, want %v", cmd, bounds, tt.classic)
				}
				want := uint64(0)
				if cmd == "get" {
					want = uint64(len(samples))
				}
				if h.GetSampleCount() != want {
					t.Errorf("%s: count %d, want %d", cmd, h.GetSampleCount(), want)
				}
				// The native buckets are there in both phases: the
				// three samples sit in three buckets.
				var native int
				for _, s := range h.GetPositiveSpan() {
					native += int(s.GetLength())
				}
				if want > 0 && native < len(samples) {
					t.Errorf("%s: %d native buckets, want at least %d", cmd, native, len(samples))
				}
				sel := `command="` + cmd + `",node="",phase="` + string(tt.phase) + `",target="t"`
				if n := strings.Count(text.String(), "redis_prober_latency_seconds_bucket{"+sel); n != tt.textBuckets {
					t.Errorf("%s: %d _bucket lines in the text format, want %d", cmd, n, tt.textBuckets)
				}
				for _, suffix := range []string{"_sum{", "_count{"} {
					if !strings.Contains(text.String(), "redis_prober_latency_seconds"+suffix+sel+"}") {
						t.Errorf("%s: no %s series", cmd, strings.Trim(suffix, "{"))
					}
				}
			}
		})
	}
}

func histogramOf(t *testing.T, mf *dto.MetricFamily, command string, phase Phase) *dto.Histogram {
	t.Helper()
	for _, m := range mf.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["command"] == command && labels["phase"] == string(phase) {
			return m.GetHistogram()
		}
	}
	t.Fatalf("no child for command %s, phase %s", command, phase)
	return nil
}

// TestMetricsGatherAsTheRegistry: the families Metrics builds itself (as
// exposition.Registry gathers it) are those a client_golang registry
// gathers from it, series for series and in the same order, for targets
// made in no particular order, with nodes, both phases, connects, changes
// and a clock.
func TestMetricsGatherAsTheRegistry(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := NewMetrics(reg)
	for _, i := range []int{7, 2, 11, 0, 5, 3} {
		target := "t" + strings.Repeat("x", i%3) + string(rune('a'+i))
		r := m.ForTarget(target, []string{"ping", "get", "set"}, 5*time.Millisecond)
		r.Record(i%3, ResultOK, time.Duration(i+1)*100*time.Microsecond)
		r.SetUp(i%2 == 0)
		r.RecordConnect(ResultOK, time.Millisecond)
		r.SetClock(wire.ClockKernel)
		r.RecordClientDelay(time.Duration(i) * time.Microsecond)
		m.Commands(target, PhaseBurst, []string{"get"}).Record(0, ResultTimeout, time.Second)
		m.InitChanges(target, "restart", "config")
		if i%2 == 1 {
			m.Change(target, "config", time.Unix(int64(i), 0))
		}
		n := m.ForNode(target, "10.0.0."+string(rune('9'-i%5))+":6379", []string{"ping"}, time.Millisecond)
		n.Record(0, ResultError, time.Millisecond)
	}
	m.Intrinsic().Observe(.0001)
	expositiontest.SameGather(t, "first gather", m, reg)
	expositiontest.SameGather(t, "second gather, in the order of the first", m, reg)
	m.Forget("txxc")
	expositiontest.SameGather(t, "a target forgotten", m, reg)
	m.ForTarget("tnew", []string{"ping"}, time.Millisecond).Record(0, ResultOK, time.Millisecond)
	expositiontest.SameGather(t, "a target added", m, reg)
}

// TestMetricsGatherConcurrently: scrapes may gather at once, while targets
// come and go and probes record (go test -race).
func TestMetricsGatherConcurrently(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 200 {
			target := "t" + strings.Repeat("x", i%7)
			r := m.ForTarget(target, []string{"ping", "get"}, time.Millisecond)
			r.Record(i%2, ResultOK, time.Duration(i)*time.Microsecond)
			if i%5 == 0 {
				m.Forget(target)
			}
		}
	}()
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			var err error
			for range 20 {
				if _, err = m.Gather(); err != nil {
					break
				}
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	<-done
}

// --probe.classic-buckets: the probe phase's classic bounds are the ones
// chosen, or none; the burst phase keeps none and the native buckets stay.
func TestProbeClassicBucketsChosen(t *testing.T) {
	for _, tt := range []struct {
		name   string
		chosen []float64
	}{
		{"two bounds", []float64{.001, .005}},
		{"none", []float64{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewPedanticRegistry()
			m := NewMetricsWith(reg, MetricsOptions{ProbeBuckets: tt.chosen})
			m.Commands("t", PhaseProbe, []string{"get"}).Record(0, ResultOK, 3*time.Millisecond)
			m.Commands("t", PhaseBurst, []string{"get"}).Record(0, ResultOK, 3*time.Millisecond)
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(mfs, func(mf *dto.MetricFamily) bool { return mf.GetName() == "redis_prober_latency_seconds" })
			if i < 0 {
				t.Fatal("no redis_prober_latency_seconds")
			}
			for phase, want := range map[Phase][]float64{PhaseProbe: tt.chosen, PhaseBurst: nil} {
				h := histogramOf(t, mfs[i], "get", phase)
				var bounds []float64
				for _, b := range h.GetBucket() {
					bounds = append(bounds, b.GetUpperBound())
				}
				if len(bounds) != len(want) || (len(want) > 0 && !slices.Equal(bounds, want)) {
					t.Errorf("%s: classic bounds %v, want %v", phase, bounds, want)
				}
				if len(h.GetPositiveSpan()) == 0 {
					t.Errorf("%s: no native buckets", phase)
				}
			}
		})
	}
}
