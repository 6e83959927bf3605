package doctor

import (
	"strings"
	"testing"
)

// The doctor tells "this host is slow" apart from Redis: a client delay p99
// over 1 ms is named as this host's, a user-space clock says the PING figure
// has this host in it, a quick host says nothing more.
func TestDoctorHostDelay(t *testing.T) {
	ms := func(v float64) float64 { return v / 1000 }
	tests := []struct {
		name      string
		tr        TargetReport
		want, not []string
	}{
		{"quick host", TargetReport{Clock: "kernel", ClientDelay: &LatencyStat{Count: 50, P50Seconds: ms(0.02), P99Seconds: ms(0.1), MaxSeconds: ms(0.2)}},
			[]string{"client delay (reply in this host's kernel until read) p50 0.020 ms, p99 0.100 ms"}, []string{"this host is slow", "no kernel timestamps"}},
		{"slow host", TargetReport{Clock: "kernel", ClientDelay: &LatencyStat{Count: 50, P50Seconds: ms(0.5), P99Seconds: ms(4), MaxSeconds: ms(9)}},
			[]string{"this host is slow: replies waited 4.000 ms (p99)", "not Redis or the network"}, nil},
		{"user clock", TargetReport{Clock: "user"},
			[]string{"no kernel timestamps here"}, []string{"client delay"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			(&textPrinter{w: &b}).hostDelay(tc.tr)
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("missing %q in:\n%s", w, b.String())
				}
			}
			for _, n := range tc.not {
				if strings.Contains(b.String(), n) {
					t.Errorf("unexpected %q in:\n%s", n, b.String())
				}
			}
		})
	}
}
