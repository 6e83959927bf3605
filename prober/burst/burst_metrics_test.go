package burst

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/redis-prober/redis-prober/internal/redistest"
)

// After a real burst the burst series pass promlint (which promtool check
// metrics runs): the last burst's quantiles are a summary, not a gauge
// with a quantile label; and a removed target takes them along.
func TestBurstMetricsLintAfterABurst(t *testing.T) {
	srv := redistest.Start(t)
	plan := testPlan()
	plan.TestTime = 500 * time.Millisecond
	res := testRunner(t, srv).Run(t.Context(), plan)
	if res.Total == nil || res.Total.Ops == 0 {
		t.Fatalf("burst ran no requests: %s %s", res.Outcome, res.Detail)
	}
	reg := prometheus.NewPedanticRegistry()
	m := NewMetrics(reg)
	m.Init("t", "", plan.Name)
	m.Observe("t", "", &res)
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	got, err := testutil.GatherAndCount(reg, "redis_prober_burst_last_latency_seconds")
	if err != nil || got != 1 {
		t.Fatalf("%d last-latency series (%v), want one summary", got, err)
	}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != "redis_prober_burst_last_latency_seconds" {
			continue
		}
		s := mf.GetMetric()[0].GetSummary()
		if s.GetSampleCount() != uint64(res.Total.Ops) || len(s.GetQuantile()) != 3 {
			t.Errorf("summary count %d quantiles %d, want %d and 3", s.GetSampleCount(), len(s.GetQuantile()), res.Total.Ops)
		}
		if !strings.HasPrefix(mf.GetHelp(), "Latency quantiles") {
			t.Errorf("help %q", mf.GetHelp())
		}
	}
	for _, name := range []string{"redis_prober_burst_last_schedule_lag_seconds", "redis_prober_burst_last_kept_schedule"} {
		if got, err := testutil.GatherAndCount(reg, name); err != nil || got != 1 {
			t.Errorf("%d %s series (%v), want one", got, name, err)
		}
	}
	// The paced burst over TCP was timed by the kernel (mixed when the
	// socket's first replies came before the kernel turned its receive
	// stamps on, as on a busy host): one clock series.
	want := "\n# HELP redis_prober_burst_last_clock_info " + lastClockHelp(t, reg) + "\n# TYPE redis_prober_burst_last_clock_info gauge\n" +
		`redis_prober_burst_last_clock_info{clock="` + res.Clock() + `",node="",plan="test",target="t"} 1` + "\n"
	if res.Clock() == "user" {
		t.Errorf("a paced burst over TCP on the %s clock, want kernel (or mixed)", res.Clock())
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "redis_prober_burst_last_clock_info"); err != nil {
		t.Error(err)
	}
	// Another run on another clock replaces the series.
	user := res
	user.Stamped = 0
	m.Observe("t", "", &user)
	if got, _ := testutil.GatherAndCount(reg, "redis_prober_burst_last_clock_info"); got != 1 {
		t.Errorf("%d clock series after a run on the user clock, want 1", got)
	}
	m.Forget("t")
	if got, _ := testutil.GatherAndCount(reg, "redis_prober_burst_last_latency_seconds", "redis_prober_burst_last_schedule_lag_seconds", "redis_prober_burst_last_clock_info"); got != 0 {
		t.Errorf("%d last-latency series after Forget", got)
	}
}

// lastClockHelp is the help text of the clock series, as registered.
func lastClockHelp(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "redis_prober_burst_last_clock_info" {
			return mf.GetHelp()
		}
	}
	t.Fatal("no redis_prober_burst_last_clock_info")
	return ""
}
