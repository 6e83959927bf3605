package burst

import (
	"context"
	"math"
	"time"
)

// StepPlan is a step-load capacity search for the knee: the rate starts at
// Start and grows by Factor each step (a geometric ramp) until a step
// misses the objective (its p99 above Objective, or errors above
// MaxErrorRatio); every miss is run once more before it is believed; then
// the search bisects between the highest rate that met the objective and
// the lowest confirmed miss until they are within Precision of each other,
// and runs that miss once more (a host busy for seconds misses twice in a
// row): a pass there takes the search up again.
// A step the client could not drive (it sent late and fell short of the
// rate while Redis still met the objective) ends the search as
// client-bound: a statement about this host, never about Redis. The
// search's own bounds (MaxRate, MaxSteps, MaxTime, the plan's bytes) may
// end it first; the capacity found is then only a lower bound.
type StepPlan struct {
	Start     float64
	Factor    float64 // the ramp's growth per step, above 1
	Precision float64 // the bisection ends when the miss is within this share of the pass
	MaxRate   float64 // 0: no rate ceiling
	StepTime  time.Duration
	MaxSteps  int // 0: no fixed number of steps
	// MaxTime bounds the whole search, every step with its warm-up; 0: none.
	MaxTime       time.Duration
	Objective     time.Duration
	MaxErrorRatio float64
}

// minAchieved is the share of its target rate a step must reach: below it
// the rate was not delivered, and the step's latency is not that of the
// rate asked for.
const minAchieved = 0.9

// Validate checks the search's ranges.
func (s StepPlan) Validate() error {
	switch {
	case s.Start <= 0:
		return fieldErr("step-start", "%v must be above 0", s.Start)
	case s.Factor <= 1 || s.Factor > 100:
		return fieldErr("step-factor", "%v must be above 1 and at most 100", s.Factor)
	case s.Precision <= 0 || s.Precision >= 1:
		return fieldErr("step-precision", "%v must be above 0 and below 1", s.Precision)
	case s.MaxRate < 0 || (s.MaxRate > 0 && s.MaxRate < s.Start):
		return fieldErr("step-max-rate", "%v must be 0 (none) or at least the start rate %v", s.MaxRate, s.Start)
	case s.StepTime < 100*time.Millisecond:
		return fieldErr("step-duration", "%v must be at least 100ms", s.StepTime)
	case s.MaxSteps < 0 || s.MaxSteps > 1000:
		return fieldErr("step-max-steps", "%d must be from 0 (no fixed number) to 1000", s.MaxSteps)
	case s.MaxTime < 0:
		return fieldErr("step-max-time", "must not be negative")
	case s.MaxSteps == 0 && s.MaxTime == 0:
		return fieldErr("step-max-steps", "0 needs another bound: a maximum time")
	case s.Objective <= 0:
		return fieldErr("objective", "must be above 0")
	case s.MaxErrorRatio < 0 || s.MaxErrorRatio > 1:
		return fieldErr("step-max-errors", "%v must be from 0 to 1", s.MaxErrorRatio)
	}
	return nil
}

// Steps returns how many steps the search can take at most with a warm-up
// before each, and the bound that sets it: max-steps or time.
func (s StepPlan) Steps(warmup time.Duration) (int, string) {
	n, bound := math.MaxInt, ""
	if s.MaxSteps > 0 {
		n, bound = s.MaxSteps, "max-steps"
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
	// Confirm marks a step that ran a missed rate once more; Knee, the
	// step whose rate is the capacity found.
	Confirm, Knee bool
	Result        Result
}

// StepResult is the whole search.
type StepResult struct {
	Plan     Plan
	Steps    []StepRow
	Capacity float64 // achieved ops/s of the highest passing step, 0 if none
	Rate     float64 // target rate of that step
	// Stop says why the search ended: objective, errors or saturated (the
	// knee is found), client-bound, max-rate, max-steps, time, bytes, or the
	// governor's reason.
	Stop string
	// ClientBound is the lowest rate the client could not drive, when
	// that was the lowest miss the search bisected below (Stop is then
	// client-bound, unless its own bound stopped it first): the search
	// says nothing of Redis above it.
	ClientBound float64
	// LowerBound is set when the last step still met the objective: the
	// search stopped at its own ceiling (Stop is max-rate, max-steps, time
	// or bytes), not at the server's, which can take at least Capacity.
	LowerBound bool
	// Final is the search as one burst: its outcome, reason, totals of all
	// steps, cleanup figures.
	Final Result
}

// Cut reports whether the step ended before its time (the governor
// aborted it, or it failed or was skipped): its figures are of a cut-short
// run, not of its rate, and reports show none.
func (r *StepRow) Cut() bool {
	return r.Result.Outcome != OutcomeCompleted
}

// KneeTries counts the steps run at the knee's rate and how many of them
// met the objective: a knee that passed one of three tries (a miss,
// its confirmation, then a pass on the late recheck) is unsteady. Both
// are 0 without a knee.
func (s *StepResult) KneeTries() (passed, tries int) {
	if s.Rate <= 0 {
		return 0, 0
	}
	for _, row := range s.Steps {
		if row.Rate == s.Rate {
			tries++
			if row.Passed {
				passed++
			}
		}
	}
	return passed, tries
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
	// The search as one burst has its steps' client figures too: their
	// lags, stamped requests and CPU (weighted by each step's wall time).
	lag, stamped := newLatencyHist(), int64(0)
	var cpu, wall float64
	final.Outcome, final.Reason = OutcomeCompleted, ReasonNone
	steps, bound := sp.Steps(plan.Warmup)
	search := newKneeSearch(sp)
	for rate := sp.Start; rate > 0; {
		if len(out.Steps) >= steps {
			out.Stop = bound
			break
		}
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
		if res.Lag != nil {
			lag.Merge(res.Lag)
			stamped += res.Stamped
		}
		if w := res.End.Sub(res.Start).Seconds(); w > 0 {
			cpu, wall = cpu+res.ClientCPU*w, wall+w
		}
		row := StepRow{Rate: rate, Achieved: res.OpsPerSec(), Result: res, Confirm: search.confirming || search.rechecking}
		row.Why = stepVerdict(sp, &res)
		row.Passed = row.Why == ""
		out.Steps = append(out.Steps, row)
		switch {
		case b.Log == nil:
		case row.Cut():
			// No figures: they are of a fraction of the step, not its rate.
			b.Log.Info("step", "rate", rate, "outcome", res.Outcome, "passed", false, "why", row.Why)
		default:
			b.Log.Info("step", "rate", rate, "achieved", int64(row.Achieved), "p99", p99Of(&res),
				"schedule_lag_p99", res.LagQuantile(0.99), "clock", res.Clock(), "passed", row.Passed, "why", row.Why)
		}
		// A step above the knee that the governor aborted (its p99 or its
		// errors) is a miss like any other: the search confirms it and
		// bisects below. Any other end (memory, a stop, a failure) ends
		// the search, and is the search's outcome.
		miss := row.Why == ReasonP99 || row.Why == ReasonErrors
		if res.Outcome != OutcomeCompleted && !miss {
			final.Outcome, final.Reason, final.Detail = res.Outcome, res.Reason, res.Detail
		}
		if row.Passed {
			if rate > out.Rate {
				out.Capacity, out.Rate = row.Achieved, rate
			}
			if res.Bound == "bytes" {
				out.Stop = "bytes"
				break
			}
		}
		switch row.Why {
		case "", "objective", "errors", "saturated", ReasonP99, "client-bound":
		default: // an abort or a failure: the search cannot go on
			out.Stop = row.Why
		}
		if out.Stop != "" {
			break
		}
		rate, out.Stop = search.next(rate, row.Passed, row.Why)
	}
	// A rate this client could not drive (confirmed) is the top of the
	// bisection like a miss, but says nothing of Redis: when it is the
	// lowest miss, the capacity found is what this client could drive.
	out.ClientBound = search.clientBound
	if out.Stop == "" {
		out.Stop = bound
	}
	for i := len(out.Steps) - 1; i >= 0; i-- {
		if out.Steps[i].Passed && out.Steps[i].Rate == out.Rate {
			out.Steps[i].Knee = true
			break
		}
	}
	// The capacity is a lower bound unless a confirmed miss sits within
	// the precision above it: the search stopped on its own bound.
	out.LowerBound = out.Capacity > 0 && out.Stop != "objective" && out.Stop != "errors" && out.Stop != "saturated" && out.Stop != ReasonP99
	final.End = time.Now()
	if len(out.Steps) > 0 {
		final.MeasureStart = out.Steps[0].Result.MeasureStart
	}
	final.Total, final.Elapsed, final.BytesWritten, final.Bound = total, elapsed, bytes, out.Stop
	final.Lag, final.Stamped = lag, stamped
	if wall > 0 {
		final.ClientCPU = cpu / wall
	}
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
		// Redis met the objective, yet the rate was not delivered. Either
		// the connections were busy with Redis (saturated: the server, or
		// too few connections for its round trips) or this client sent
		// late: its lag, which the latency leaves out, tells which.
		if r.LagQuantile(0.99) > r.Total.Quantile(0.99) {
			return "client-bound"
		}
		return "saturated"
	}
	return ""
}

// kneeSearch chooses the rate of each step: a geometric ramp until a
// confirmed miss, then bisection between the highest pass and the lowest
// confirmed miss.
type kneeSearch struct {
	sp         StepPlan
	pass, miss float64 // highest passing rate, lowest confirmed miss (0: none yet)
	missWhy    string
	confirming bool // the next step runs a missed rate again
	// clientBound is the lowest confirmed rate this client could not
	// drive (0: none), while it is the lowest miss.
	clientBound float64
	// misses are the confirmed misses above pass, by rate, and why each.
	misses map[float64]string
	// rechecking: the next step runs the lowest confirmed miss once more,
	// late (see next); rechecks counts those runs.
	rechecking bool
	rechecks   int
}

// maxRechecks bounds the late runs of a confirmed miss in one search.
const maxRechecks = 2

func newKneeSearch(sp StepPlan) *kneeSearch { return &kneeSearch{sp: sp} }

// next takes the outcome of the step at rate and returns the next rate,
// or 0 and why the search is over.
func (k *kneeSearch) next(rate float64, passed bool, why string) (float64, string) {
	if k.rechecking {
		k.rechecking = false
		if !passed {
			return 0, k.missWhy // missed three times: believed
		}
		// The miss was a passing episode of the host: the next confirmed
		// miss above is the bound again, or the ramp goes on.
		delete(k.misses, rate)
		k.pass = max(k.pass, rate)
		k.miss, k.missWhy, k.clientBound = 0, "", 0
		for m, w := range k.misses {
			if m <= k.pass {
				delete(k.misses, m)
			} else if k.miss == 0 || m < k.miss {
				k.miss, k.missWhy = m, w
			}
		}
		if k.missWhy == "client-bound" {
			k.clientBound = k.miss
		}
		return k.after(rate)
	}
	switch {
	case passed:
		k.pass = max(k.pass, rate)
		k.confirming = false
	case !k.confirming:
		// One miss may be chance (a fork, another client's burst): the
		// rate runs once more before the miss is believed.
		k.confirming = true
		return rate, ""
	default:
		k.confirming = false
		if k.misses == nil {
			k.misses = map[float64]string{}
		}
		k.misses[rate] = why
		if k.miss == 0 || rate < k.miss {
			k.miss, k.missWhy = rate, why
			k.clientBound = 0
			if why == "client-bound" {
				k.clientBound = rate
			}
		}
	}
	return k.after(rate)
}

// after chooses the rate after a step at rate: up the ramp, or the
// bisection's next, or the end.
func (k *kneeSearch) after(rate float64) (float64, string) {
	if k.miss == 0 { // still ramping
		up := rate * k.sp.Factor
		if k.sp.MaxRate > 0 && up > k.sp.MaxRate {
			if k.pass >= k.sp.MaxRate {
				return 0, "max-rate"
			}
			up = k.sp.MaxRate
		}
		return math.Round(up), ""
	}
	if k.pass == 0 {
		return 0, k.missWhy // the first rate already missed: the knee is below Start
	}
	mid := math.Round(math.Sqrt(k.pass * k.miss))
	if k.miss <= k.pass*(1+k.sp.Precision) || mid <= k.pass || mid >= k.miss {
		// The bisection is done. Its top was a miss run twice in a row,
		// seconds apart: a host busy for those seconds (another tenant of
		// the VM, a backup) misses both, and the search then bisects down
		// to a fraction of the knee. The miss runs once more, now,
		// tens of seconds later; only a third miss is believed.
		if k.rechecks < maxRechecks {
			k.rechecks++
			k.rechecking = true
			return k.miss, ""
		}
		return 0, k.missWhy
	}
	return mid, ""
}

func p99Of(r *Result) time.Duration {
	if r.Total == nil {
		return 0
	}
	return r.Total.Quantile(0.99)
}
