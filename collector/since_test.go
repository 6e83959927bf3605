package collector

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/redis-prober/redis-prober/internal/host"
	"github.com/redis-prober/redis-prober/internal/redisinfo"
	"github.com/redis-prober/redis-prober/internal/redistest"
)

func sinceInfo(runID string, uptime, commands int) redisinfo.Info {
	return redisinfo.Info{"run_id": runID, "uptime_in_seconds": fmt.Sprint(uptime), "total_commands_processed": fmt.Sprint(commands)}
}

// TestServerSinceFollowsRestartsAndResets: the server's counters count
// from its start (never after it), from the refresh before the one that
// saw total_commands_processed go back (CONFIG RESETSTAT), and the latency
// totals from the refresh before an event's count went back or the event
// went away (LATENCY RESET); a restart starts both over.
func TestServerSinceFollowsRestartsAndResets(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 16, 0, 0, 400e6, time.UTC)
	var s serverSince
	got := s.info(sinceInfo("a", 100, 1000), t0)
	start := time.Date(2026, 12, 3, 15, 58, 19, 0, time.UTC) // 16:00:00.4 - 101 s, whole seconds
	if !got.Stats.Equal(start) || !got.Latency.Equal(start) || got.stats == nil || !got.stats.AsTime().Equal(start) {
		t.Fatalf("first read: %+v, want both at %v", got, start)
	}
	first := got.stats
	ev := func(count int64) []LatencyEvent {
		return []LatencyEvent{{Event: "command", Count: count, HasTotals: true}, {Event: "fork", Count: 1, HasTotals: true}}
	}
	s.events(ev(5))

	t1 := t0.Add(time.Second)
	got = s.info(sinceInfo("a", 101, 1010), t1)
	got = s.events(ev(7))
	if !got.Stats.Equal(start) || !got.Latency.Equal(start) || got.stats != first {
		t.Fatalf("counters that grew: %+v, want both still at %v, the same stamp", got, start)
	}

	t2 := t1.Add(time.Second)
	s.info(sinceInfo("a", 102, 1020), t2)
	got = s.events(ev(1)) // LATENCY RESET, then one spike, between t1 and t2
	if !got.Latency.Equal(t1) || !got.Stats.Equal(start) || !got.latency.AsTime().Equal(t1) {
		t.Fatalf("after an event's count went back: %+v, want latency at %v, stats at %v", got, t1, start)
	}

	t3 := t2.Add(time.Second)
	got = s.info(sinceInfo("a", 103, 3), t3) // CONFIG RESETSTAT between t2 and t3
	if !got.Stats.Equal(t2) || !got.Latency.Equal(t1) {
		t.Fatalf("after total_commands_processed went back: %+v, want stats at %v, latency at %v", got, t2, t1)
	}
	t4 := t3.Add(time.Second)
	s.info(sinceInfo("a", 104, 10), t4)
	got = s.events([]LatencyEvent{{Event: "command", Count: 2, HasTotals: true}}) // fork gone: reset
	if !got.Latency.Equal(t3) {
		t.Fatalf("after an event went away: %+v, want latency at %v", got, t3)
	}

	t5 := t4.Add(time.Second)
	got = s.info(sinceInfo("b", 2, 5), t5) // a restart
	restart := t5.Add(-3 * time.Second).Truncate(time.Second)
	if !got.Stats.Equal(restart) || !got.Latency.Equal(restart) {
		t.Fatalf("after a restart: %+v, want both at %v", got, restart)
	}

	got = s.info(redisinfo.Info{"run_id": "c"}, t5.Add(time.Second))
	if !got.Stats.IsZero() || got.stats != nil || got.latency != nil {
		t.Fatalf("without uptime_in_seconds: %+v, want no start", got)
	}
}

func TestParseBootTime(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "captured", "stat"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := host.ParseBootTime(b)
	if err != nil || got.Unix() != 1795985059 {
		t.Fatalf("ParseBootTime = %v, %v; want 1795985059", got, err)
	}
	for _, bad := range []string{"cpu 1 2 3\n", "btime x\n", "btime -5\n"} {
		if _, err := host.ParseBootTime([]byte(bad)); err == nil {
			t.Errorf("ParseBootTime(%q): no error", bad)
		}
	}
}

// startOf returns the created timestamp of a counter, histogram or
// summary, and whether m is one of them.
func startOf(m *dto.Metric) (start time.Time, has, cumulative bool) {
	switch {
	case m.Counter != nil:
		return m.Counter.GetCreatedTimestamp().AsTime(), m.Counter.CreatedTimestamp != nil, true
	case m.Histogram != nil:
		return m.Histogram.GetCreatedTimestamp().AsTime(), m.Histogram.CreatedTimestamp != nil, true
	case m.Summary != nil:
		return m.Summary.GetCreatedTimestamp().AsTime(), m.Summary.CreatedTimestamp != nil, true
	}
	return time.Time{}, false, false
}

// TestRealCountersCarryTheirStart: on a real server, every counter and
// histogram of a target and of the host collectors carries a created
// timestamp, through Collect and through Gather alike: the server's
// since it started (not after, at most a few seconds before), the
// process's since the redis-server process started, the host's since
// boot, the prober's own since the target was added.
func TestRealCountersCarryTheirStart(t *testing.T) {
	v := redistest.BinaryVersion(t)
	before := time.Now().Truncate(time.Second)
	srv := redistest.Start(t, "latency-monitor-threshold 1", "enable-debug-command yes")
	c := srv.Client()
	if err := c.Do(t.Context(), "debug", "sleep", "0.01").Err(); err != nil {
		t.Fatal(err)
	}
	set := NewTargets()
	tgt := set.NewTarget(TargetConfig{Name: "live", Paths: host.DefaultPaths(), Commands: []string{"ping", "get"}}, c)
	added := time.Now()
	if _, err := set.Add(tgt); err != nil {
		t.Fatal(err)
	}
	tgt.Refresh(t.Context())
	if err := c.Do(t.Context(), "debug", "sleep", "0.01").Err(); err != nil {
		t.Fatal(err)
	}
	tgt.Refresh(t.Context())
	after := time.Now()
	hostc := NewHost(host.DefaultPaths(), AllEnabled(), nil)
	boot, bootErr := host.DefaultPaths().Host().BootTime()

	gathered, err := set.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []struct {
		name string
		mfs  []*dto.MetricFamily
	}{{"Gather", gathered}, {"Collect", gatherAll(t, set, hostc)}} {
		var cumulative int
		seen := map[string]bool{}
		for _, mf := range path.mfs {
			for _, m := range mf.GetMetric() {
				start, has, cum := startOf(m)
				if !cum {
					continue
				}
				cumulative++
				seen[mf.GetName()] = true
				if !has {
					t.Errorf("%s: %s %v has no created timestamp", path.name, mf.GetName(), m.GetLabel())
					continue
				}
				var lo, hi time.Time
				switch mf.GetName() {
				case "redis_prober_host_swap_in_pages_total", "redis_prober_host_swap_out_pages_total",
					"redis_prober_host_compact_stalls_total", "redis_prober_host_thp_events_total",
					"redis_prober_host_memory_pressure_seconds_total":
					// btime moves when the wall clock is stepped.
					lo, hi = boot.Add(-5*time.Second), boot.Add(5*time.Second)
				case "redis_prober_collector_dropped_series_total", "redis_prober_fork_seconds", "redis_prober_server_commandlog_slow_seconds":
					lo, hi = added, after
				default: // the server's and its process's
					lo, hi = before.Add(-2*time.Second), after
				}
				if start.Before(lo) || start.After(hi) {
					t.Errorf("%s: %s %v starts at %v, want in [%v, %v]", path.name, mf.GetName(), m.GetLabel(), start, lo, hi)
				}
			}
		}
		want := []string{"redis_prober_forks_total", "redis_prober_server_latency_seconds"}
		if v.Flavor == "valkey" && v.AtLeast(8, 1) {
			want = append(want, "redis_prober_server_latency_event_spikes_total")
		}
		if path.name == "Collect" && bootErr == nil {
			want = append(want, "redis_prober_host_swap_in_pages_total")
		}
		for _, name := range want {
			if !seen[name] {
				t.Errorf("%s on %s: no %s series (saw %v)", path.name, v, name, seen)
			}
		}
		t.Logf("%s on %s: %d counters and histograms, every one with its start", path.name, v, cumulative)
	}
}

var _ prometheus.Gatherer = (*Targets)(nil)
