package burst_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/redistest"
	"github.com/redis-prober/redis-prober/prober/burst"
	"github.com/redis-prober/redis-prober/prober/report"
)

// The report of a real step-load: these tests run a search and render it.

func TestStepLoadFindsCapacity(t *testing.T) {
	srv := redistest.Start(t)
	plan := burst.NewTestPlan()
	plan.KeyTTL = time.Minute
	sp := burst.NewTestStepPlan()
	res := burst.NewTestRunner(t, srv).RunSteps(t.Context(), plan, sp)
	if res.Final.Outcome != burst.OutcomeCompleted || res.Stop != "max-steps" || len(res.Steps) != 3 {
		t.Fatalf("outcome %s (%s), stop %q, %d steps", res.Final.Outcome, res.Final.Reason, res.Stop, len(res.Steps))
	}
	for i, s := range res.Steps {
		if want := []float64{400, 600, 900}[i]; !s.Passed || s.Rate != want || s.Knee != (i == 2) {
			t.Fatalf("step %d: rate %v, passed %v, knee %v; want %v, passed, the knee the last", i, s.Rate, s.Passed, s.Knee, want)
		}
		// The first replies of a new socket may come before the kernel
		// has turned receive stamps on (a deferred work item): those few
		// are timed by the prober's clock.
		if r := s.Result; r.Stamped < r.Total.Ops*9/10 || r.Lag == nil || r.Lag.TotalCount() != r.Total.Ops {
			t.Fatalf("step %d: %d of %d requests stamped, %d lags", i, r.Stamped, r.Total.Ops, r.Lag.TotalCount())
		}
	}
	if f := res.Final; f.Lag == nil || f.Lag.TotalCount() != f.Total.Ops || f.Stamped == 0 || f.ClientCPU <= 0 {
		t.Fatalf("the search as one burst lacks its steps' client figures: stamped %d of %d, cpu %v", f.Stamped, f.Total.Ops, f.ClientCPU)
	}
	if res.Rate != 900 || res.Capacity < 800 {
		t.Fatalf("capacity %.0f at rate %.0f, want about 900", res.Capacity, res.Rate)
	}
	// Every step met the objective: 900 is the search's own bound, not the
	// server's, and every output must say so.
	if !res.LowerBound {
		t.Fatal("a search whose every step met the objective does not call its capacity a lower bound")
	}
	if keys := srv.Keys(t.Context(), plan.Namespace.Prefix+"*"); len(keys) != 0 {
		t.Fatalf("%d keys left", len(keys))
	}

	// The report: JSON with every step, Markdown with the table, an SVG
	// chart that parses.
	rep := report.NewStepReport("redis://x", &res, sp, &report.Environment{}, []float64{50, 99})
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back report.Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Schema != report.Schema || len(back.Steps) != 3 || back.Capacity.Rate != 900 || len(back.Trials) != 1 ||
		!back.Steps[2].Knee || back.Steps[0].Client.StampedOps == 0 || back.Steps[0].Client.Clock == "user" {
		t.Fatalf("report: %+v", back)
	}
	if !back.Capacity.LowerBound || !strings.Contains(js.String(), `"capacity_is_lower_bound": true`) {
		t.Fatalf("the JSON report does not say the capacity is a lower bound: %+v", back.Capacity)
	}
	h, err := report.DecodeHistogram(back.Trials[0].Totals.Latency.Histogram)
	if err != nil || h.TotalCount() != res.Final.Total.Ops {
		t.Fatalf("histogram round trip: %v, %d counts of %d ops", err, h.TotalCount(), res.Final.Total.Ops)
	}
	var md, svg bytes.Buffer
	if err := report.WriteStepMarkdown(&md, rep, "steps.svg"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| 3 | 900 |", "← knee", "![", "(steps.svg)", "**At least ", "ops/s met p99 < 1s",
		"a lower bound, not the server's knee", "The search stopped: the most steps allowed were run."} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	if strings.Contains(md.String(), "Highest rate that met") {
		t.Errorf("markdown calls the search's own bound the highest rate that met the objective:\n%s", md.String())
	}
	if err := report.WriteStepChart(&svg, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(svg.String(), ">knee ") {
		t.Errorf("the chart does not mark the knee:\n%s", svg.String())
	}
	dec := xml.NewDecoder(&svg)
	for {
		if _, err := dec.Token(); err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("SVG does not parse: %v", err)
			}
			break
		}
	}
}

// A step one connection cannot drive (the second asks it for 40,000 ops/s
// of round trips) is client-bound, the rate named: at that rate this
// client, not Redis, was the limit (Redis's wire time, the latency,
// stayed low while the sends fell behind). Confirmed, it is the top of
// the bisection like a miss, so the search still finds what this client
// can drive below it; while a client-bound rate is the lowest miss,
// nothing is said of Redis above it, and the capacity is a lower bound.
func TestStepLoadClientBound(t *testing.T) {
	srv := redistest.Start(t)
	plan := burst.NewTestPlan()
	plan.Clients, plan.Pipeline = 1, 1
	sp := burst.NewTestStepPlan()
	sp.Factor, sp.Precision, sp.MaxSteps = 100, 1, 6
	res := burst.NewTestRunner(t, srv).RunSteps(t.Context(), plan, sp)
	for i, row := range res.Steps {
		t.Logf("step %d: %.0f ops/s, achieved %.0f, %q", i, row.Rate, row.Achieved, row.Why)
	}
	if len(res.Steps) < 4 || res.Steps[1].Why != "client-bound" || res.Steps[2].Rate != 40000 || !res.Steps[2].Confirm {
		t.Fatalf("the 40,000 ops/s step was not client-bound and confirmed")
	}
	// Below it the search bisected (√(400·40000) = 4000 next) and found
	// more than the first rate.
	if res.Steps[3].Rate != 4000 || res.Rate <= 400 {
		t.Fatalf("no bisection below the client-bound rate: step 4 at %.0f, capacity at %.0f", res.Steps[3].Rate, res.Rate)
	}
	if res.ClientBound != 0 && (res.ClientBound <= res.Rate || !res.LowerBound) {
		t.Fatalf("client-bound at %.0f with the capacity at %.0f, lower bound %v", res.ClientBound, res.Rate, res.LowerBound)
	}
	if res.Stop == "client-bound" && res.ClientBound == 0 {
		t.Fatal("stopped client-bound without the rate")
	}
	last := res.Steps[1].Result
	if last.Total.Quantile(0.99) >= last.LagQuantile(0.99) || last.KeptSchedule() {
		t.Fatalf("client-bound step: p99 %v, lag p99 %v, kept schedule %v", last.Total.Quantile(0.99), last.LagQuantile(0.99), last.KeptSchedule())
	}
	rep := report.NewStepReport("redis://x", &res, sp, &report.Environment{}, []float64{50, 99})
	var md bytes.Buffer
	if err := report.WriteStepMarkdown(&md, rep, "steps.svg"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "client-bound") || !strings.Contains(md.String(), "At least") || !strings.Contains(md.String(), "← knee") {
		t.Fatalf("markdown:\n%s", md.String())
	}
	if rep.Capacity.ClientBound != res.ClientBound {
		t.Fatalf("JSON capacity: %+v", rep.Capacity)
	}
}
