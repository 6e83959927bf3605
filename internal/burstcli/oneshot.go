package burstcli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/version"
	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/internal/host"
	"github.com/redis-prober/redis-prober/internal/usage"
	"github.com/redis-prober/redis-prober/prober"
	"github.com/redis-prober/redis-prober/prober/burst"
	"github.com/redis-prober/redis-prober/prober/report"
)

// OneShot are the values of the flags of `redis-prober burst` beyond the
// server's address.
type OneShot struct {
	// PlanName is --plan, the name the reports give the plan ("cli"
	// when the flags alone made it).
	PlanName string
	Plan     PlanFlags
	Steps    StepFlags
	// Step is --step: a step-load search instead of one burst.
	Step        bool
	KeyPrefix   string
	JSONOut     string
	Percentiles string
	// Report is --report, the Markdown report of a step-load search.
	Report string
	// Trials is --trials; TrialsSet is true when it was given.
	Trials    int
	TrialsSet bool
	// Paths are where the environment snapshot reads the host.
	Paths host.Paths
	// Tag names this prober in the key namespace.
	Tag string
}

// Run validates the flags and runs the burst, the trials or the step-load
// search against the server name at ep, printing to stdout as memtier does
// and writing the reports asked for. A bad flag value is a usage.Error; a
// burst that did not complete is an error that says why.
func (o *OneShot) Run(ctx context.Context, name string, ep prober.Endpoint, log *slog.Logger, stdout io.Writer) error {
	if err := prober.ValidatePrefix(o.KeyPrefix); err != nil {
		return usage.Errorf("--key-prefix: %v", err)
	}
	pcts, err := parsePercentiles(o.Percentiles)
	if err != nil {
		return err
	}
	pf := o.Plan
	if pf.TestTime == 0 && pf.Requests == 0 {
		pf.Requests = 10000 // memtier's default: 10000 requests per client
	}
	if pf.TestTime == 0 {
		pf.TestTime = burst.CLILimits.MaxTestTime - pf.Warmup // --requests ends it; this is the ceiling
	}
	plan, guards, err := pf.Plan(cmp.Or(o.PlanName, "cli"), prober.Namespace{Prefix: o.KeyPrefix, Tag: o.Tag}, burst.CLILimits)
	if err != nil {
		return err
	}
	if o.Trials < 1 || o.Trials > 100 {
		return usage.Errorf("--trials: %d must be from 1 to 100", o.Trials)
	}
	var sp burst.StepPlan
	if o.Step && o.TrialsSet {
		return usage.Errorf("--trials: a step-load search runs once; drop --trials or --step")
	}
	if o.Step {
		if sp, err = o.Steps.Plan(burst.CLILimits, plan.Warmup); err != nil {
			return err
		}
		plan.KeyTTL = sp.Duration(plan.Warmup) + time.Minute
	} else if o.Report != "" {
		return usage.Errorf("--report: only with --step")
	}
	control := ep.NewClient(plan.Timeout, 2)
	defer control.Close()
	if err := checkReachable(ctx, control, name, plan.Timeout); err != nil {
		return err
	}
	burster := &burst.Runner{Endpoint: ep, Control: control, Guards: guards, Log: log}
	bar := newProgressBar(stdout)
	if bar != nil {
		burster.Progress = bar.update
	}
	ver := version.Version
	if ver == "" {
		ver = "devel" // built without the Makefile's version ldflags
	}
	envSnap := report.SnapshotEnvironment(ctx, control, o.Paths, ver, version.Revision)

	var rep *report.Report
	var res *burst.Result
	if o.Step {
		sr := burster.RunSteps(ctx, plan, sp)
		bar.finish()
		res = &sr.Final
		if !sr.Measured() {
			if err := notStarted(res, name); err != nil {
				return err
			}
		}
		rep = report.NewStepReport(name, &sr, sp, envSnap, pcts)
		writeStepTable(stdout, &sr)
		if o.Report != "" {
			if err := writeMarkdownReport(o.Report, rep); err != nil {
				return err
			}
		}
	} else {
		run := func() burst.Result { r := burster.Run(ctx, plan); bar.finish(); return r }
		after := func(i int, r *burst.Result) error {
			if i == 1 && r.Outcome == burst.OutcomeFailed {
				return notStarted(r, name) // nothing measured: no figures, no report
			}
			return writeTrialStats(stdout, i, o.Trials, r, pcts)
		}
		var completed []burst.Result
		if rep, res, completed, err = runTrials(trialRun{n: o.Trials, run: run, after: after, target: name, env: envSnap, pcts: pcts}); err != nil {
			return err
		}
		writeTrialSummary(stdout, completed)
	}
	if o.JSONOut != "" {
		if err := writeFileAtomic(o.JSONOut, rep.WriteJSON); err != nil {
			return err
		}
	}
	switch res.Outcome {
	case burst.OutcomeCompleted:
		return nil
	case burst.OutcomeSkipped:
		return fmt.Errorf("burst skipped (%s): %s", res.Reason, res.Detail)
	default:
		return fmt.Errorf("burst %s (%s): %s", res.Outcome, res.Reason, res.Detail)
	}
}

// checkReachable fails with one line naming the server when it does not
// answer a PING, before anything is measured, logged or written: a report
// of a search that never reached the server would read as a verdict on it.
func checkReachable(ctx context.Context, c *redis.Client, name string, timeout time.Duration) error {
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := c.Ping(pctx).Err(); err != nil {
		return fmt.Errorf("cannot reach Redis at %s: %w", name, err)
	}
	return nil
}

// notStarted is the error of a burst that failed before it measured
// anything (INFO refused, the server gone after the PING): no figures, so
// no report.
func notStarted(res *burst.Result, name string) error {
	if res.Outcome != burst.OutcomeFailed {
		return nil
	}
	return fmt.Errorf("burst on %s failed before it measured anything (%s): %s", name, res.Reason, res.Detail)
}

func parsePercentiles(s string) ([]float64, error) {
	var out []float64
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		f, err := strconv.ParseFloat(part, 64)
		if err != nil || f <= 0 || f > 100 {
			return nil, usage.Errorf("--print-percentiles: %q is not a percentile above 0 and at most 100", part)
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil, usage.Errorf("--print-percentiles: no percentile given")
	}
	return out, nil
}
