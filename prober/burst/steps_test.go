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
	return StepPlan{Start: 400, Increase: 400, StepTime: time.Second, MaxSteps: 3,
		Objective: time.Second, MaxErrorRatio: 0.001}
}

func TestStepLoadStopsAtObjective(t *testing.T) {
	srv := redistest.Start(t)
	sp := testStepPlan()
	sp.Objective = time.Nanosecond
	res := testRunner(t, srv).RunSteps(t.Context(), testPlan(), sp)
	if res.Stop != "objective" || len(res.Steps) != 1 || res.Capacity != 0 || res.LowerBound {
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
