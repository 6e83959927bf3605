package engine

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redis-prober/redis-prober/prober"
)

func TestIntrinsicReader(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := prober.NewMetrics(reg)
	h, ok := m.Intrinsic().(prometheus.Metric)
	if !ok {
		t.Fatal("the intrinsic observer is not a readable metric")
	}
	r := newIntrinsicReader(h)
	if _, ok := r.worst(); ok {
		t.Error("a value before any sample")
	}
	for _, tc := range []struct {
		obs  []float64
		want time.Duration
		ok   bool
	}{
		{[]float64{.0004, .0001}, 500 * time.Microsecond, true},
		{[]float64{.0009, .0011}, 2500 * time.Microsecond, true},
		{nil, 0, false},
		{[]float64{.001}, time.Millisecond, true},
		{[]float64{5}, 200 * time.Millisecond, true},
	} {
		for _, v := range tc.obs {
			m.Intrinsic().Observe(v)
		}
		got, ok := r.worst()
		if ok != tc.ok || got != tc.want {
			t.Errorf("after %v: worst %v %v, want %v %v", tc.obs, got, ok, tc.want, tc.ok)
		}
	}
}
