package burstcli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/redis-prober/redis-prober/prober/burst"
	"github.com/redis-prober/redis-prober/prober/report"
)

// trialRun is one run of the plan; after sees every result as it comes.
type trialRun struct {
	n      int
	run    func() burst.Result
	after  func(i int, r *burst.Result) error
	target string
	env    *report.Environment
	pcts   []float64
}

// runTrials runs the plan n times in a row and builds one report with a
// trial per run, so compare can judge the spread between runs. It stops
// at the first run that does not complete (skipped or aborted by the
// governor): a struggling server is not loaded again. The result returned
// is that run's, or the last one's; completed holds every run that
// completed, for the summary across them.
func runTrials(tr trialRun) (rep *report.Report, last *burst.Result, completed []burst.Result, err error) {
	var r burst.Result
	for i := 1; i <= tr.n; i++ {
		r = tr.run()
		if err := tr.after(i, &r); err != nil {
			return nil, nil, nil, err
		}
		if r.Outcome == burst.OutcomeCompleted {
			completed = append(completed, r)
		}
		if rep == nil {
			rep = report.NewBurstReport(tr.target, &r, tr.env, tr.pcts)
		} else {
			if r.Outcome != burst.OutcomeSkipped && r.Outcome != burst.OutcomeFailed {
				rep.Trials = append(rep.Trials, report.NewTrialReport(i, &r, tr.pcts))
			}
			rep.End = r.End
			rep.Cleanup.KeysWritten += r.KeysWritten
			rep.Cleanup.KeysDeleted += r.KeysDeleted
			if r.CleanupError != "" {
				rep.Cleanup.Error = r.CleanupError
			}
			rep.Outcome, rep.Reason, rep.Detail = r.Outcome, r.Reason, r.Detail
		}
		if r.Outcome != burst.OutcomeCompleted {
			break
		}
	}
	return rep, &r, completed, nil
}

// writeTrialStats prints, as a run ends, one line with its figures (on a
// pipe or in CI, where there is no progress bar, the only sign of life
// between runs) and below it the run's ALL STATS table.
func writeTrialStats(w io.Writer, i, n int, r *burst.Result, pcts []float64) error {
	if i > 1 {
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, trialLine(i, n, r))
	if r.Total == nil {
		return nil
	}
	return report.WriteAllStats(w, r, pcts)
}

// trialLine sums up one run: "trial 2 of 5: completed, 41234 ops/s, p50
// 0.335 ms, p99 1.263 ms, p99.9 2.100 ms (kernel clock); client: lag p99
// 0.020 ms, 0.31 CPU".
func trialLine(i, n int, r *burst.Result) string {
	head := fmt.Sprintf("trial %d of %d: %s", i, n, r.Outcome)
	if r.Outcome != burst.OutcomeCompleted {
		head += fmt.Sprintf(" (%s): %s", r.Reason, r.Detail)
	}
	if r.Total == nil || r.Total.Ops == 0 {
		return head
	}
	line := fmt.Sprintf("%s, %.0f ops/s, p50 %.3f ms, p99 %.3f ms, p99.9 %.3f ms (%s clock); client: lag p99 %.3f ms, %.2f CPU",
		head, r.OpsPerSec(), msOf(r.Total.Quantile(0.5)), msOf(r.Total.Quantile(0.99)), msOf(r.Total.Quantile(0.999)),
		r.Clock(), msOf(r.LagQuantile(0.99)), r.ClientCPU)
	switch {
	case !r.DeliveredRate():
		line += fmt.Sprintf(", client-bound: it delivered %.0f%% of its rate", 100*r.Achieved())
	case !r.KeptSchedule():
		line += ", behind its schedule (lag p99 over 1 ms, kept out of the latency)"
	}
	return line
}

// writeTrialSummary prints the median and range over the completed runs of
// throughput and of the p50, p99 and p99.9 of all commands together.
func writeTrialSummary(w io.Writer, runs []burst.Result) {
	if len(runs) < 2 {
		return
	}
	type row struct {
		name string
		of   func(r *burst.Result) float64
		unit string
	}
	q := func(p float64) func(r *burst.Result) float64 {
		return func(r *burst.Result) float64 { return msOf(r.Total.Quantile(p)) }
	}
	rows := []row{
		{"Ops/sec", func(r *burst.Result) float64 { return r.OpsPerSec() }, "%.2f"},
		{"p50 Latency", q(0.5), "%.5f"},
		{"p99 Latency", q(0.99), "%.5f"},
		{"p99.9 Latency", q(0.999), "%.5f"},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nACROSS %d TRIALS (latencies in ms, all commands)\n%-14s %15s %15s %15s\n", len(runs), "", "median", "min", "max")
	for _, rw := range rows {
		var vs []float64
		for i := range runs {
			if runs[i].Total != nil {
				vs = append(vs, rw.of(&runs[i]))
			}
		}
		if len(vs) == 0 {
			continue
		}
		slices.Sort(vs)
		fmt.Fprintf(&b, "%-14s %15s %15s %15s\n", rw.name, fmt.Sprintf(rw.unit, median(vs)),
			fmt.Sprintf(rw.unit, vs[0]), fmt.Sprintf(rw.unit, vs[len(vs)-1]))
	}
	_, _ = io.WriteString(w, b.String())
}

// median of sorted values.
func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}
