package burst

import (
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/redistest"
)

// testStepPlan's steps pass on any host that serves them: a step is
// saturated when its last reply comes a tenth of the step late, and a 1 s
// step takes a 111 ms stall for that (a 300 ms one took 33 ms of a busy
// host's wake-up); an objective of 1 s leaves the tail to the tests of the
// objective, which set their own.
func testStepPlan() StepPlan {
	return StepPlan{Start: 400, Factor: 1.5, Precision: 0.05, StepTime: time.Second, MaxSteps: 3,
		Objective: time.Second, MaxErrorRatio: 0.001}
}

func TestStepLoadStopsAtObjective(t *testing.T) {
	srv := redistest.Start(t)
	sp := testStepPlan()
	sp.Objective = time.Nanosecond
	res := testRunner(t, srv).RunSteps(t.Context(), testPlan(), sp)
	// The miss is run once more before it is believed: two steps.
	if res.Stop != "objective" || len(res.Steps) != 2 || !res.Steps[1].Confirm || res.Capacity != 0 || res.LowerBound {
		t.Fatalf("stop %q after %d steps, capacity %.0f, lower bound %v", res.Stop, len(res.Steps), res.Capacity, res.LowerBound)
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
		{"max steps", StepPlan{Start: 1000, Factor: 2, Precision: 0.05, StepTime: 10 * time.Second, MaxSteps: 3, MaxTime: time.Hour, Objective: time.Millisecond}, 3, "max-steps"},
		{"time", StepPlan{Start: 1000, Factor: 2, Precision: 0.05, StepTime: 10 * time.Second, MaxTime: time.Hour, Objective: time.Millisecond}, 327, "time"},
		{"time ties max steps", StepPlan{Start: 1000, Factor: 2, Precision: 0.05, StepTime: 10 * time.Second, MaxSteps: 327, MaxTime: time.Hour, Objective: time.Millisecond}, 327, "max-steps"},
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
	unbounded := StepPlan{Start: 1000, Factor: 2, Precision: 0.05, StepTime: 10 * time.Second, MaxRate: 5000, Objective: time.Millisecond}
	if err := unbounded.Validate(); err == nil {
		t.Fatal("a search with no bound at all validated")
	}
}

// TestKneeSearch walks the search's choice of rates on a server whose knee
// is given: a geometric ramp, each miss run twice, then bisection to
// within the precision, and the top miss run once more at the end; a miss
// that does not repeat is not believed, nor one that does not come back
// at the end (a host busy for a few seconds).
func TestKneeSearch(t *testing.T) {
	sp := StepPlan{Start: 1000, Factor: 2, Precision: 0.05}
	for _, tc := range []struct {
		name  string
		knee  float64         // rates above it miss
		flaky map[float64]int // misses of a rate under the knee (a busy host) before it passes
		stop  string
		// the rates run, in order
		rates []float64
	}{
		{"knee between ramp steps", 5000, nil, "objective",
			[]float64{1000, 2000, 4000, 8000, 8000, 5657, 5657, 4757, 5188, 5188, 4968, 5188}},
		{"first step misses", 500, nil, "objective", []float64{1000, 1000}},
		{"one chance miss is not believed", 5000, map[float64]int{2000: 1}, "objective",
			[]float64{1000, 2000, 2000, 4000, 8000, 8000, 5657, 5657, 4757, 5188, 5188, 4968, 5188}},
		// 4,000 missed twice in a row (the host was busy for seconds):
		// run again after the bisection below it, it passes, and the
		// search goes on up to the true knee.
		{"a confirmed miss that does not come back", 5000, map[float64]int{4000: 2}, "objective",
			[]float64{1000, 2000, 4000, 4000, 2828, 3363, 3668, 3830, 4000, 8000, 8000, 5657, 5657, 4757, 5188, 5188, 4968, 5188}},
		// The knee's own miss comes back: a third miss is believed at once.
		{"a miss that comes back ends the search", 3000, nil, "objective",
			[]float64{1000, 2000, 4000, 4000, 2828, 3363, 3363, 3084, 3084, 2953, 3084}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newKneeSearch(sp)
			var ran []float64
			flaky := map[float64]int{}
			for r, v := range tc.flaky {
				flaky[r] = v
			}
			rate, stop := sp.Start, ""
			for i := 0; rate > 0 && i < 50; i++ {
				ran = append(ran, rate)
				passed := rate <= tc.knee
				if flaky[rate] > 0 {
					passed = false
					flaky[rate]--
				}
				why := ""
				if !passed {
					why = "objective"
				}
				rate, stop = k.next(rate, passed, why)
			}
			if stop != tc.stop || !equalRates(ran, tc.rates) {
				t.Fatalf("ran %v, stop %q; want %v, %q", ran, stop, tc.rates, tc.stop)
			}
		})
	}
	// A ceiling: the ramp ends on it, and a pass there ends the search.
	k := newKneeSearch(StepPlan{Start: 1000, Factor: 4, Precision: 0.05, MaxRate: 10000})
	if r, _ := k.next(1000, true, ""); r != 4000 {
		t.Fatalf("after 1000: %v", r)
	}
	if r, _ := k.next(4000, true, ""); r != 10000 {
		t.Fatalf("after 4000: %v, want the ceiling", r)
	}
	if r, stop := k.next(10000, true, ""); r != 0 || stop != "max-rate" {
		t.Fatalf("after the ceiling: %v %q", r, stop)
	}
}

func equalRates(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A step the governor aborts on its p99 is a miss above the knee, not the
// end of the search: it is run once more, and the search itself completes
// (a search of misses only finds no capacity, and says why).
func TestStepLoadGovernorAbortIsAMiss(t *testing.T) {
	srv := redistest.Start(t)
	b := testRunner(t, srv)
	b.Guards.AbortP99 = time.Nanosecond
	res := b.RunSteps(t.Context(), testPlan(), testStepPlan())
	if len(res.Steps) != 2 || !res.Steps[1].Confirm || res.Steps[0].Why != ReasonP99 || res.Stop != ReasonP99 {
		t.Fatalf("%d steps, stop %q, first %q", len(res.Steps), res.Stop, res.Steps[0].Why)
	}
	if res.Final.Outcome != OutcomeCompleted || res.Capacity != 0 || res.LowerBound {
		t.Fatalf("search outcome %s (%s), capacity %.0f, lower bound %v", res.Final.Outcome, res.Final.Reason, res.Capacity, res.LowerBound)
	}
	// The reports show an aborted step without figures (issue 40): it
	// must read as cut short.
	for i := range res.Steps {
		if !res.Steps[i].Cut() {
			t.Errorf("step %d, aborted by the governor (outcome %s), is not cut short", i, res.Steps[i].Result.Outcome)
		}
	}
}
