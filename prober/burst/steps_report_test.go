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
		if !s.Passed || s.Rate != sp.Start+float64(i)*sp.Increase {
			t.Fatalf("step %d: %+v", i, s)
		}
	}
	if res.Rate != 1200 || res.Capacity < 1000 {
		t.Fatalf("capacity %.0f at rate %.0f, want about 1200", res.Capacity, res.Rate)
	}
	// Every step met the objective: 1200 is the ramp's ceiling, not the
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
	if back.Schema != report.Schema || len(back.Steps) != 3 || back.Capacity.Rate != 1200 || len(back.Trials) != 1 {
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
	for _, want := range []string{"| 3 | 1,200 |", "![", "(steps.svg)", "**At least ", "ops/s met p99 < 1s",
		"the ramp's ceiling, not the server's", "The search stopped: the most steps allowed were run."} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	if strings.Contains(md.String(), "Highest rate that met") {
		t.Errorf("markdown calls the ramp's ceiling the highest rate that met the objective:\n%s", md.String())
	}
	if err := report.WriteStepChart(&svg, rep); err != nil {
		t.Fatal(err)
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

// A search that reaches a rate the server cannot serve (open-loop: the
// queue shows in the p99, else as saturation) stops there, and
// its capacity is the server's, not a lower bound.
func TestStepLoadCapacityBelowCeiling(t *testing.T) {
	srv := redistest.Start(t)
	plan := burst.NewTestPlan()
	plan.Clients, plan.Pipeline = 1, 1
	sp := burst.NewTestStepPlan()
	sp.Increase = 10_000_000 // the second step asks for 10M ops/s of one connection
	res := burst.NewTestRunner(t, srv).RunSteps(t.Context(), plan, sp)
	if (res.Stop != "saturated" && res.Stop != "objective") || len(res.Steps) != 2 || res.Rate != sp.Start || res.LowerBound {
		t.Fatalf("stop %q after %d steps, capacity %.0f at %.0f, lower bound %v", res.Stop, len(res.Steps), res.Capacity, res.Rate, res.LowerBound)
	}
	rep := report.NewStepReport("redis://x", &res, sp, &report.Environment{}, []float64{50, 99})
	var md bytes.Buffer
	if err := report.WriteStepMarkdown(&md, rep, "steps.svg"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "**Highest rate that met p99 < 1s") || strings.Contains(md.String(), "At least") {
		t.Fatalf("markdown:\n%s", md.String())
	}
}
