package collector

import (
	"math"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/redis-prober/redis-prober/internal/nativebucket"
)

// The server's bucket of bound 2^k µs is written as native schema 0 bucket
// k+nativeOffset: the last native bucket whose upper bound is at or below
// the server's, so a native quantile never reads above the server's bound.
func TestNativeOffset(t *testing.T) {
	for k := 0; k <= 40; k++ {
		server := math.Ldexp(1, k) * 1e-6
		i := k + nativeOffset
		if up := nativebucket.UpperBound(i, 0); up > server || up < server/2 {
			t.Errorf("k=%d: native bucket %d ends at %g, want within a factor 2 below the server's %g", k, i, up, server)
		}
		if got := nativebucket.Index(server, 0); got != i+1 {
			t.Errorf("k=%d: a sample of 2^k µs falls in native bucket %d, want %d", k, got, i+1)
		}
	}
}

// The zero bucket ends where the first native bucket begins, 2^-21 s, so
// no server bucket overlaps it.
func TestServerHistogramZeroThreshold(t *testing.T) {
	hs, _, _ := parseLatencyHistogram(capturedHistogram())
	desc := prometheus.NewDesc("x_seconds", "x", []string{"command"}, nil)
	var m dto.Metric
	if err := newServerHistogram(desc, hs[0], false, nil, "ping").Write(&m); err != nil {
		t.Fatal(err)
	}
	h := m.GetHistogram()
	if h.GetZeroThreshold() != math.Ldexp(1, -21) || h.GetZeroCount() != 0 {
		t.Errorf("zero threshold %g count %d, want 2^-21 and 0", h.GetZeroThreshold(), h.GetZeroCount())
	}
	if first := h.GetPositiveSpan()[0].GetOffset(); nativebucket.UpperBound(int(first)-1, 0) != h.GetZeroThreshold() {
		t.Errorf("the first native bucket %d does not start at the zero threshold %g", first, h.GetZeroThreshold())
	}
}
