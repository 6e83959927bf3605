package main

import (
	"fmt"

	"github.com/redis-prober/redis-prober/prober"
)

// trialRun is one run of the plan; after sees every result as it comes.
type trialRun struct {
	n      int
	run    func() prober.BurstResult
	after  func(i int, r *prober.BurstResult) error
	target string
	env    *prober.Environment
	pcts   []float64
}

// runTrials runs the plan n times in a row and builds one report with a
// trial per run, so compare can judge the spread between runs. It stops
// at the first run that does not complete (skipped or aborted by the
// governor): a struggling server is not loaded again. The result returned
// is that run's, or the last one's.
func runTrials(tr trialRun) (*prober.Report, *prober.BurstResult, error) {
	var rep *prober.Report
	var last prober.BurstResult
	for i := 1; i <= tr.n; i++ {
		last = tr.run()
		if err := tr.after(i, &last); err != nil {
			return nil, nil, err
		}
		if rep == nil {
			rep = prober.NewBurstReport(tr.target, &last, tr.env, tr.pcts)
		} else {
			if last.Outcome != prober.OutcomeSkipped && last.Outcome != prober.OutcomeFailed {
				rep.Trials = append(rep.Trials, prober.NewTrialReport(i, &last, tr.pcts))
			}
			rep.End = last.End
			rep.Cleanup.KeysWritten += last.KeysWritten
			rep.Cleanup.KeysDeleted += last.KeysDeleted
			if last.CleanupError != "" {
				rep.Cleanup.Error = last.CleanupError
			}
			rep.Outcome, rep.Reason, rep.Detail = last.Outcome, last.Reason, last.Detail
		}
		if last.Outcome != prober.OutcomeCompleted {
			break
		}
	}
	return rep, &last, nil
}

// writeTrialStats prints the ALL STATS table of one run, under a heading
// when there are several.
func writeTrialStats(env *cliEnv, i, n int, r *prober.BurstResult, pcts []float64) error {
	if r.Total == nil {
		return nil
	}
	if n > 1 {
		fmt.Fprintf(env.stdout, "\nTRIAL %d OF %d\n", i, n)
	}
	return prober.WriteAllStats(env.stdout, r, pcts)
}
