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
	h, err := DecodeHistogram(back.Trials[0].Totals.Latency.Histogram)
	if err != nil || h.TotalCount() != res.Final.Total.Ops {
		t.Fatalf("histogram round trip: %v, %d counts of %d ops", err, h.TotalCount(), res.Final.Total.Ops)
	}
	var md, svg bytes.Buffer
	if err := WriteStepMarkdown(&md, rep, "steps.svg"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| 3 | 1,200 |", "![", "(steps.svg)", "Highest rate that met p99 < 50ms"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
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
	if res.Stop != "objective" || len(res.Steps) != 1 || res.Capacity != 0 {
		t.Fatalf("stop %q after %d steps, capacity %.0f", res.Stop, len(res.Steps), res.Capacity)
	}
}
