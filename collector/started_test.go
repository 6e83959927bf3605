package collector

import (
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/redis-prober/redis-prober/internal/host"
)

// TestSinceStartOnTheProcessCollectors: the Go and process collectors'
// counters and summaries carry the process start, except those named;
// gauges stay gauges.
func TestSinceStartOnTheProcessCollectors(t *testing.T) {
	started := ProcessStarted(host.DefaultPaths(), os.Getpid())
	if runtime.GOOS != "linux" {
		if !started.IsZero() {
			t.Fatalf("ProcessStarted on %s = %v, want zero", runtime.GOOS, started)
		}
		started = time.Now().Add(-time.Minute)
	} else if d := time.Since(started); started.IsZero() || d < 0 || d > 10*time.Minute {
		t.Fatalf("ProcessStarted = %v (%v ago), want this test binary's start", started, d)
	}
	except := []string{"process_network_receive_bytes_total", "process_network_transmit_bytes_total"}
	mfs := gatherAll(t,
		SinceStart(collectors.NewGoCollector(), started),
		SinceStart(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), started, except...))
	var with int
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			start, has, cumulative := startOf(m)
			excepted := mf.GetName() == except[0] || mf.GetName() == except[1]
			switch {
			case !cumulative && has:
				t.Errorf("%s is no counter but has a created timestamp", mf.GetName())
			case cumulative && excepted && has:
				t.Errorf("%s was excepted but has a created timestamp %v", mf.GetName(), start)
			case cumulative && !excepted && (!has || !start.Equal(started)):
				t.Errorf("%s starts at %v (has %v), want %v", mf.GetName(), start, has, started)
			case has:
				with++
			}
		}
	}
	// go_gc_duration_seconds, go_memstats_{alloc_bytes,mallocs,frees}_total
	// and, on Linux, process_cpu_seconds_total.
	if with < 4 {
		t.Errorf("%d series with the process start, want at least 4", with)
	}
	if c := collectors.NewGoCollector(); SinceStart(c, time.Time{}) != c {
		t.Error("a zero start wraps the collector")
	}
}
