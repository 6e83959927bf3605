package prober

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/redistest"
)

func testStepPlan() StepPlan {
	return StepPlan{Start: 400, Increase: 400, StepTime: 300 * time.Millisecond, MaxSteps: 3,
		Objective: 50 * time.Millisecond, MaxErrorRatio: 0.001}
}

func TestStepLoadFindsCapacity(t *testing.T) {
	srv := redistest.Start(t)
	plan := testPlan()
	plan.KeyTTL = time.Minute
	sp := testStepPlan()
	res := testBurster(t, srv).RunSteps(t.Context(), plan, sp)
	if res.Final.Outcome != OutcomeCompleted || res.Stop != "max-steps" || len(res.Steps) != 3 {
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
	rep := NewStepReport("redis://x", &res, sp, &Environment{}, []float64{50, 99})
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Schema != ReportSchema || len(back.Steps) != 3 || back.Capacity.Rate != 1200 || len(back.Trials) != 1 {
		t.Fatalf("report: %+v", back)
	}
	if !back.Capacity.LowerBound || !strings.Contains(js.String(), `"capacity_is_lower_bound": true`) {
		t.Fatalf("the JSON report does not say the capacity is a lower bound: %+v", back.Capacity)
	}
	h, err := DecodeHistogram(back.Trials[0].Totals.Latency.Histogram)
	if err != nil || h.TotalCount() != res.Final.Total.Ops {
		t.Fatalf("histogram round trip: %v, %d counts of %d ops", err, h.TotalCount(), res.Final.Total.Ops)
	}
	var md, svg bytes.Buffer
	if err := WriteStepMarkdown(&md, rep, "steps.svg"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| 3 | 1,200 |", "![", "(steps.svg)", "**At least ", "ops/s met p99 < 50ms",
		"the ramp's ceiling, not the server's", "The search stopped: the most steps allowed were run."} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	if strings.Contains(md.String(), "Highest rate that met") {
		t.Errorf("markdown calls the ramp's ceiling the highest rate that met the objective:\n%s", md.String())
	}
	if err := WriteStepChart(&svg, rep); err != nil {
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

func TestStepLoadStopsAtObjective(t *testing.T) {
	srv := redistest.Start(t)
	sp := testStepPlan()
	sp.Objective = time.Nanosecond
	res := testBurster(t, srv).RunSteps(t.Context(), testPlan(), sp)
	if res.Stop != "objective" || len(res.Steps) != 1 || res.Capacity != 0 || res.LowerBound {
		t.Fatalf("stop %q after %d steps, capacity %.0f, lower bound %v", res.Stop, len(res.Steps), res.Capacity, res.LowerBound)
	}
}

// A search that reaches a rate the server cannot serve (open-loop: the
// queue shows in the p99, else as saturation) stops there, and
// its capacity is the server's, not a lower bound.
func TestStepLoadCapacityBelowCeiling(t *testing.T) {
	srv := redistest.Start(t)
	plan := testPlan()
	plan.Clients, plan.Pipeline = 1, 1
	sp := testStepPlan()
	sp.Increase = 10_000_000 // the second step asks for 10M ops/s of one connection
	res := testBurster(t, srv).RunSteps(t.Context(), plan, sp)
	if (res.Stop != "saturated" && res.Stop != "objective") || len(res.Steps) != 2 || res.Rate != sp.Start || res.LowerBound {
		t.Fatalf("stop %q after %d steps, capacity %.0f at %.0f, lower bound %v", res.Stop, len(res.Steps), res.Capacity, res.Rate, res.LowerBound)
	}
	rep := NewStepReport("redis://x", &res, sp, &Environment{}, []float64{50, 99})
	var md bytes.Buffer
	if err := WriteStepMarkdown(&md, rep, "steps.svg"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "**Highest rate that met p99 < 50ms") || strings.Contains(md.String(), "At least") {
		t.Fatalf("markdown:\n%s", md.String())
	}
}

func TestStepPlanBounds(t *testing.T) {
	warmup := time.Second
	for _, tc := range []struct {
		name  string
		sp    StepPlan
		steps int
		bound string
	}{
		{"max steps", StepPlan{Start: 1000, Increase: 1000, StepTime: 10 * time.Second, MaxSteps: 3, MaxTime: time.Hour, Objective: time.Millisecond}, 3, "max-steps"},
		{"max rate", StepPlan{Start: 1000, Increase: 1000, StepTime: 10 * time.Second, MaxRate: 5000, MaxSteps: 20, Objective: time.Millisecond}, 5, "max-rate"},
		{"max rate ties max steps", StepPlan{Start: 1000, Increase: 1000, StepTime: 10 * time.Second, MaxRate: 3000, MaxSteps: 3, Objective: time.Millisecond}, 3, "max-rate"},
		// No fixed number of steps: the ramp goes on for the time bound,
		// far past 20 steps (20k ops/s).
		{"time", StepPlan{Start: 1000, Increase: 1000, StepTime: 10 * time.Second, MaxTime: time.Hour, Objective: time.Millisecond}, 327, "time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.sp.Validate(); err != nil {
				t.Fatal(err)
			}
			if n, bound := tc.sp.Steps(warmup); n != tc.steps || bound != tc.bound {
				t.Fatalf("Steps = %d (%s), want %d (%s)", n, bound, tc.steps, tc.bound)
			}
		})
	}
	unbounded := StepPlan{Start: 1000, Increase: 1000, StepTime: 10 * time.Second, Objective: time.Millisecond}
	if err := unbounded.Validate(); err == nil {
		t.Fatal("a search with no bound at all validated")
	}
}
