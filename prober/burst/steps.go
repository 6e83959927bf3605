package burst

import (
	"context"
	"math"
	"time"
)

// StepPlan is a step-load capacity search: the rate starts at Start and
// rises by Increase every StepTime until the p99 exceeds Objective, errors
// exceed MaxErrorRatio, the server cannot keep up, or the governor aborts;
// or until the search's own bounds (MaxRate, MaxSteps, MaxTime, the plan's
// bytes) are reached, when every step met the objective and the capacity
// found is only a lower bound.
type StepPlan struct {
	Start    float64
	Increase float64
	MaxRate  float64 // 0: no rate ceiling
	StepTime time.Duration
	MaxSteps int // 0: no fixed number of steps
	// MaxTime bounds the whole search, every step with its warm-up; 0: none.
	MaxTime       time.Duration
	Objective     time.Duration
	MaxErrorRatio float64
}

// minAchieved is the share of its target rate a step must reach: below it
// the server (or the prober) is saturated and the latency of a higher
// rate would not be measured, only queued.
const minAchieved = 0.9

// Validate checks the search's ranges.
func (s StepPlan) Validate() error {
	switch {
	case s.Start <= 0:
		return fieldErr("step-start", "%v must be above 0", s.Start)
	case s.Increase <= 0:
		return fieldErr("step-increase", "%v must be above 0", s.Increase)
	case s.MaxRate < 0 || (s.MaxRate > 0 && s.MaxRate < s.Start):
		return fieldErr("step-max-rate", "%v must be 0 (none) or at least the start rate %v", s.MaxRate, s.Start)
	case s.StepTime < 100*time.Millisecond:
		return fieldErr("step-duration", "%v must be at least 100ms", s.StepTime)
	case s.MaxSteps < 0 || s.MaxSteps > 1000:
		return fieldErr("step-max-steps", "%d must be from 0 (no fixed number) to 1000", s.MaxSteps)
	case s.MaxTime < 0:
		return fieldErr("step-max-time", "must not be negative")
	case s.MaxSteps == 0 && s.MaxRate == 0 && s.MaxTime == 0:
		return fieldErr("step-max-steps", "0 needs another bound: a maximum rate or time")
	case s.Objective <= 0:
		return fieldErr("objective", "must be above 0")
	case s.MaxErrorRatio < 0 || s.MaxErrorRatio > 1:
		return fieldErr("step-max-errors", "%v must be from 0 to 1", s.MaxErrorRatio)
	}
	return nil
}

// Steps returns how many steps the search can take at most with a warm-up
// before each, and the bound that sets it: max-steps, max-rate or time.
func (s StepPlan) Steps(warmup time.Duration) (int, string) {
	n, bound := math.MaxInt, ""
	if s.MaxSteps > 0 {
		n, bound = s.MaxSteps, "max-steps"
	}
	if s.MaxRate > 0 {
		if r := int((s.MaxRate-s.Start)/s.Increase) + 1; r <= n {
			n, bound = r, "max-rate"
		}
	}
	if s.MaxTime > 0 {
		if t := int(s.MaxTime / (s.StepTime + warmup)); t < n {
			n, bound = t, "time"
		}
	}
	return n, bound
}

// Duration is the longest the search can last.
func (s StepPlan) Duration(warmup time.Duration) time.Duration {
	n, _ := s.Steps(warmup)
	return time.Duration(n) * (s.StepTime + warmup)
}

// StepRow is one step of the search.
type StepRow struct {
	Rate     float64 // target ops/s
	Achieved float64 // measured ops/s
	Passed   bool
	Why      string // why the step failed, empty when it passed
	Result   Result
}

// StepResult is the whole search.
type StepResult struct {
	Plan     Plan
	Steps    []StepRow
	Capacity float64 // achieved ops/s of the highest passing step, 0 if none
	Rate     float64 // target rate of that step
	// Stop says why the search ended: objective, errors, saturated,
	// max-rate, max-steps, time, bytes, or the governor's reason.
	Stop string
	// LowerBound is set when the last step still met the objective: the
	// search stopped at its own ceiling (Stop is max-rate, max-steps, time
	// or bytes), not at the server's, which can take at least Capacity.
	LowerBound bool
	// Final is the search as one burst: its outcome, reason, totals of all
	// steps, cleanup figures.
	Final Result
}

// Measured reports whether any step got a reply to measure.
func (s *StepResult) Measured() bool {
	for _, row := range s.Steps {
		if row.Result.Total != nil && row.Result.Total.Ops > 0 {
			return true
		}
	}
	return false
}

// RunSteps runs a step-load search with plan's shape (its Rate, TestTime
// and Requests are the steps'). The governor admits it once and watches
// every step; keys are deleted once at the end, whatever ended it.
func (b *Runner) RunSteps(ctx context.Context, plan Plan, sp StepPlan) StepResult {
	out := StepResult{Plan: plan}
	final := Result{Plan: plan, Start: time.Now(), KeysWritten: -1}
	admit := plan
	admit.Rate, admit.TestTime = 0, sp.Duration(plan.Warmup)
	if d := b.Admit(ctx, admit, &final); !d.OK() {
		final.decide(d)
		out.Stop, out.Final = d.Reason, final
		b.logResult(&final)
		return out
	}
	written := newWrittenKeys(plan)
	total := newCommandStats("totals")
	var elapsed time.Duration
	var bytes int64
	final.Outcome, final.Reason = OutcomeCompleted, ReasonNone
	steps, bound := sp.Steps(plan.Warmup)
	for i := 0; i < steps; i++ {
		rate := sp.Start + float64(i)*sp.Increase
		p := plan
		p.Rate, p.TestTime, p.Requests = rate, sp.StepTime, 0
		p.MaxBytes = plan.MaxBytes - bytes
		if p.MaxBytes <= 0 {
			out.Stop = "bytes"
			break
		}
		res := Result{Plan: p, KeysWritten: -1}
		b.load(ctx, p, written, &res)
		bytes += res.BytesWritten
		if res.Total != nil {
			total.merge(res.Total)
			elapsed += res.Elapsed
		}
		row := StepRow{Rate: rate, Achieved: res.OpsPerSec(), Result: res}
		row.Why = stepVerdict(sp, &res)
		row.Passed = row.Why == ""
		out.Steps = append(out.Steps, row)
		if b.Log != nil {
			b.Log.Info("step", "rate", rate, "achieved", int64(row.Achieved), "p99", p99Of(&res), "passed", row.Passed, "why", row.Why)
		}
		if res.Outcome != OutcomeCompleted {
			final.Outcome, final.Reason, final.Detail = res.Outcome, res.Reason, res.Detail
		}
		if !row.Passed {
			out.Stop = row.Why
			break
		}
		out.Capacity, out.Rate = row.Achieved, rate
		if res.Bound == "bytes" {
			out.Stop = "bytes"
			break
		}
	}
	if out.Stop == "" {
		out.Stop = bound
	}
	if n := len(out.Steps); n > 0 && out.Steps[n-1].Passed {
		out.LowerBound = true
	}
	final.End = time.Now()
	if len(out.Steps) > 0 {
		final.MeasureStart = out.Steps[0].Result.MeasureStart
	}
	final.Total, final.Elapsed, final.BytesWritten, final.Bound = total, elapsed, bytes, out.Stop
	b.cleanup(ctx, plan, written, &final)
	out.Final = final
	b.logResult(&final)
	return out
}

// stepVerdict says why a step fails the objective, or "" when it passes.
func stepVerdict(sp StepPlan, r *Result) string {
	switch {
	case r.Outcome == OutcomeAborted || r.Outcome == OutcomeFailed || r.Outcome == OutcomeSkipped:
		return r.Reason
	case r.Total == nil || r.Total.Ops == 0:
		return "no-replies"
	case float64(r.Total.Errors+r.Total.Timeouts) > sp.MaxErrorRatio*float64(r.Total.Ops):
		return "errors"
	case r.Total.Quantile(0.99) > sp.Objective:
		return "objective"
	case r.OpsPerSec() < minAchieved*r.Plan.Rate:
		return "saturated"
	}
	return ""
}

func p99Of(r *Result) time.Duration {
	if r.Total == nil {
		return 0
	}
	return r.Total.Quantile(0.99)
}
