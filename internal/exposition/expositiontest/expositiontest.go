// Package expositiontest compares gathered metric families in tests: the
// prober's own gathering (exposition.Builder, exposition.Registry,
// collector.Targets, prober.Metrics) must give what client_golang's
// registry gives.
package expositiontest

import (
	"bytes"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"
)

// Equal fails t unless got holds the families of want, in order, each
// equal field for field; a difference is shown in the text format. what
// names the gathering in the message.
func Equal(t testing.TB, what string, got, want []*dto.MetricFamily) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d families, the registry %d", what, len(got), len(want))
	}
	for i := range want {
		if !proto.Equal(got[i], want[i]) {
			t.Errorf("%s: family %s differs from the registry's:\n got %s\nwant %s",
				what, want[i].GetName(), text(t, got[i]), text(t, want[i]))
		}
	}
}

// SameGather fails t unless ours gathers what the registry theirs
// gathers (Equal), both without error.
func SameGather(t testing.TB, what string, ours, theirs prometheus.Gatherer) {
	t.Helper()
	want, err := theirs.Gather()
	if err != nil {
		t.Fatalf("%s: the registry: %v", what, err)
	}
	got, err := ours.Gather()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	Equal(t, what, got, want)
}

func text(t testing.TB, mf *dto.MetricFamily) string {
	t.Helper()
	var b bytes.Buffer
	if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// NativeBuckets expands a native histogram's positive spans and deltas
// into bucket index → count (buckets with a count only), failing t on a
// negative count or deltas the spans do not cover.
func NativeBuckets(t testing.TB, h *dto.Histogram) map[int]int64 {
	t.Helper()
	out := map[int]int64{}
	idx, d := 0, 0
	var count int64
	for _, s := range h.GetPositiveSpan() {
		idx += int(s.GetOffset())
		for range s.GetLength() {
			if d >= len(h.GetPositiveDelta()) {
				t.Fatalf("spans cover more than the %d deltas", len(h.GetPositiveDelta()))
			}
			count += h.GetPositiveDelta()[d]
			d++
			if count < 0 {
				t.Fatalf("negative bucket count at %d", idx)
			}
			if count > 0 {
				out[idx] = count
			}
			idx++
		}
	}
	if d != len(h.GetPositiveDelta()) {
		t.Fatalf("%d deltas, spans cover %d", len(h.GetPositiveDelta()), d)
	}
	return out
}
