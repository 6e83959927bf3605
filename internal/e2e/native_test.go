package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/promtest"
	"github.com/redis-prober/redis-prober/internal/redistest"
)

// TestNativeHistogramsOnlyWhenAsked scrapes one prober with three
// Prometheus servers of the version under test, each asking for native
// histograms differently, and reads what each stored of the probe latency:
// the native histogram where the way it asked works on that version, the
// classic _bucket series (and no native one) where it does not. On 3.9 and
// later only scrape_native_histograms: true works: the feature flag, all
// that a config written for 3.5 has, leaves Prometheus on the classic
// buckets.
func TestNativeHistogramsOnlyWhenAsked(t *testing.T) {
	promtest.Binary(t) // skip (or fail under CI) before building anything
	major, minor := promtest.Version(t)
	srv := redistest.Start(t)
	p := startProber(t, buildProber(t, repoRoot(t)), "--redis.addr="+srv.URL(),
		"--probe.rate=20", "--probe.connect-interval=0s", "--burst.interval=0s", "--log.level=warn")

	cases := []struct {
		name   string
		native promtest.Native
		want   bool // the native histogram is stored, not the classic buckets
	}{
		{"as this version needs", promtest.NativeAsNeeded, true},
		{"not asked", promtest.NativeOff, false},
		{"feature flag only", promtest.NativeFlagOnly, !promtest.AtLeast(major, minor, 3, 9)},
	}
	proms := make([]*promtest.Server, len(cases))
	for i, c := range cases {
		proms[i] = promtest.Start(t, promtest.Config{Targets: []string{p.addr}, Native: c.native})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const (
		native  = `redis_prober_latency_seconds{job="redis-prober", phase="probe"}`
		classic = `redis_prober_latency_seconds_bucket{job="redis-prober", phase="probe"}`
	)
	for i, c := range cases {
		// A few scrapes of a prober that has probed: whichever form the
		// histogram is stored in, it is there by now.
		waitForQuery(ctx, t, proms[i], 30*time.Second, `count_over_time(redis_prober_requests_total{job="redis-prober", phase="probe"}[1m]) >= 3`,
			func(got []promtest.Sample) bool { return len(got) > 0 })
		nat, err := proms[i].Query(ctx, native)
		if err != nil {
			t.Fatal(err)
		}
		var histograms, floats int
		for _, s := range nat {
			if s.Histogram {
				histograms++
			} else {
				floats++
			}
		}
		buckets, err := proms[i].Query(ctx, classic)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("Prometheus %d.%d, %s: %d native histogram series, %d classic _bucket series", major, minor, c.name, histograms, len(buckets))
		switch {
		case floats > 0:
			t.Errorf("%s: %d float series named %s", c.name, floats, native)
		case c.want && (histograms == 0 || len(buckets) > 0):
			t.Errorf("%s: want the native histogram only, got %d native series and %d classic _bucket series", c.name, histograms, len(buckets))
		case !c.want && (histograms > 0 || len(buckets) == 0):
			t.Errorf("%s: want the classic buckets only, got %d native series and %d classic _bucket series", c.name, histograms, len(buckets))
		}
	}
}
