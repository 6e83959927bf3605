package compare

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/redis-prober/redis-prober/prober/burst"
	"github.com/redis-prober/redis-prober/prober/report"
)

// Schema names the JSON layout of a comparison.
const Schema = "redis-prober/compare/v1"

// Verdicts of one compared figure.
const (
	VerdictRegressed = "regressed"
	VerdictImproved  = "improved"
	VerdictNoChange  = "no significant change"
	// VerdictInconclusive: the interval holds both no change and a
	// regression larger than the threshold, or there is no interval (a
	// side of one trial), so the trials can tell neither "regressed" nor
	// "no regression": run more trials.
	VerdictInconclusive = "inconclusive"
)

// Overall verdicts of a comparison (Comparison.Verdict): a regression
// anywhere wins over an inconclusive figure.
const (
	OverallRegressed    = "regressed"
	OverallInconclusive = "inconclusive"
	OverallNoRegression = "no regression"
)

// MinTrials is the fewest completed trials a side that compare judges:
// one trial has no spread, so no difference can be told from noise, and
// every figure is inconclusive.
const MinTrials = 2

// AdviseTrials is the trial count the advice asks for on both sides: the
// interval needs MinTrials, but at the Bonferroni level of a dozen figures
// it is wide until about five (docs/regressions.md works it out).
const AdviseTrials = 5

// Options tune the verdict.
type Options struct {
	// Threshold is the smallest relative change that matters (0.10: 10%).
	Threshold float64
	// Alpha is the family-wise false-alarm rate: the chance that two
	// reports of the same system show a significant change anywhere.
	Alpha float64
}

// Comparison is the result of comparing two burst reports.
type Comparison struct {
	Schema      string          `json:"schema"`
	Before      Side            `json:"before"`
	After       Side            `json:"after"`
	Threshold   float64         `json:"threshold"`
	Alpha       float64         `json:"alpha"`
	Method      string          `json:"method"`
	Confidence  float64         `json:"interval_confidence"`
	Rows        []Row           `json:"rows"`
	Environment []EnvDifference `json:"environment_diff"`
	Notes       []string        `json:"notes,omitempty"`
	Regressed   bool            `json:"regressed"`
	// Inconclusive is true when nothing regressed but some figure's
	// interval reaches beyond the threshold, or a side has one trial:
	// "no regression" is not shown.
	Inconclusive bool `json:"inconclusive"`
	// Verdict is OverallRegressed, OverallInconclusive or
	// OverallNoRegression.
	Verdict string `json:"verdict"`
	// Reason says, when the verdict is inconclusive, why and what would
	// let compare judge.
	Reason string `json:"reason,omitempty"`
	// Noisiest names, when the verdict is inconclusive for noise, the
	// inconclusive figure with the widest spread ("set p99"), whose
	// Detectable is the comparison's.
	Noisiest string `json:"noisiest_figure,omitempty"`
	// Detectable is the Noisiest figure's minimum detectable change.
	Detectable *float64 `json:"detectable_change,omitempty"`
	// TrialsToDetect is about how many trials a side would detect a change
	// of the threshold in the Noisiest figure, at most MaxAdvisedTrials.
	TrialsToDetect int `json:"trials_to_detect_threshold,omitempty"`
}

// Side names one of the two reports.
type Side struct {
	File   string `json:"file"`
	Target string `json:"target"`
	Start  string `json:"start"`
	Trials int    `json:"trials"`
}

// Row is one figure of one command (or "total") before and after.
type Row struct {
	Command string `json:"command"`
	Figure  string `json:"figure"` // p50, p99, p99.9 (ms) or ops/s
	Unit    string `json:"unit"`
	// Before and After are geometric means over the trials.
	Before       float64   `json:"before"`
	After        float64   `json:"after"`
	BeforeTrials []float64 `json:"before_trials"`
	AfterTrials  []float64 `json:"after_trials"`
	// Change is after/before - 1; Low and High bound it (absent with
	// fewer than MinTrials trials on a side).
	Change float64  `json:"change"`
	Low    *float64 `json:"change_low,omitempty"`
	High   *float64 `json:"change_high,omitempty"`
	// Detectable is the smallest change (as a fraction, either way) these
	// trials would detect four times in five at the figure's confidence:
	// the minimum detectable effect of their spread (absent with fewer
	// than MinTrials trials on a side).
	Detectable *float64 `json:"detectable_change,omitempty"`
	Verdict    string   `json:"verdict"`
	// logVars are the variances of the logarithms of the trials' figures
	// (before, after), kept to work out how many trials would do.
	logVars [2]float64
}

// figures are what compare judges, per command: latency is worse when it
// goes up, throughput when it goes down.
var figures = []struct {
	name, unit    string
	higherIsWorse bool
	percentile    float64 // 0 for throughput
}{
	{"p50", "ms", true, 50},
	{"p99", "ms", true, 99},
	{"p99.9", "ms", true, 99.9},
	{"ops/s", "ops/s", false, 0},
}

// ErrIncompatible marks reports that cannot be compared.
var ErrIncompatible = errors.New("reports cannot be compared")

// Compare judges after against before. Reports that cannot be compared
// (another schema, a step-load report, no completed trial, another load
// plan) return an error wrapping ErrIncompatible. The work is linear in the
// number of commands and stops with ctx's error when ctx is done. Every
// number in the result is finite (JSON has no Inf or NaN).
func Compare(ctx context.Context, before, after *report.Report, beforeName, afterName string, opts Options) (*Comparison, error) {
	var notes []string
	bt, err := completedTrials(before, beforeName, &notes)
	if err != nil {
		return nil, err
	}
	at, err := completedTrials(after, afterName, &notes)
	if err != nil {
		return nil, err
	}
	if err := samePlan(before.Plan, after.Plan); err != nil {
		return nil, err
	}
	cmp := &Comparison{
		Schema: Schema, Threshold: opts.Threshold, Alpha: opts.Alpha,
		Before: Side{File: beforeName, Target: before.Target, Start: before.Start.UTC().Format("2006-01-02 15:04:05Z"), Trials: len(bt)},
		After:  Side{File: afterName, Target: after.Target, Start: after.Start.UTC().Format("2006-01-02 15:04:05Z"), Trials: len(at)},
	}

	commands := commandNames(bt, at, &notes)
	// Each trial's commands by name, built once: looking each name up in
	// every trial's list would be quadratic in the number of commands.
	bi, ai := indexCommands(bt), indexCommands(at)
	cmp.Rows = make([]Row, 0, (len(commands)+1)*len(figures))
	for i, cmd := range append(commands, "total") {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		for _, f := range figures {
			bv, err := trialFigures(bt, bi, cmd, f.percentile, beforeName)
			if err != nil {
				return nil, err
			}
			av, err := trialFigures(at, ai, cmd, f.percentile, afterName)
			if err != nil {
				return nil, err
			}
			cmp.Rows = append(cmp.Rows, Row{Command: cmd, Figure: f.name, Unit: f.unit,
				Before: geoMean(bv), After: geoMean(av), BeforeTrials: bv, AfterTrials: av})
		}
	}

	// Bonferroni: every figure is judged at alpha/k, so the chance of a
	// false alarm anywhere stays at most alpha.
	withInterval := len(bt) >= MinTrials && len(at) >= MinTrials
	k := float64(len(cmp.Rows))
	cmp.Confidence = 1 - opts.Alpha/k
	if withInterval {
		cmp.Method = fmt.Sprintf("Welch interval on the logarithms of the per-trial figures, %.4g%% per figure (alpha %g over %d figures, Bonferroni)",
			cmp.Confidence*100, opts.Alpha, len(cmp.Rows))
	} else {
		cmp.Method = fmt.Sprintf("none: fewer than %d trials on a side, no interval", MinTrials)
	}
	quantiles := map[float64]float64{} // by degrees of freedom: one bisection each
	detectQuantiles := map[[2]float64]float64{}
	for i := range cmp.Rows {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		r := &cmp.Rows[i]
		higherIsWorse := figures[i%len(figures)].higherIsWorse
		judge(r, withInterval, higherIsWorse, opts, cmp.Confidence, quantiles, detectQuantiles)
		switch r.Verdict {
		case VerdictRegressed:
			cmp.Regressed = true
		case VerdictInconclusive:
			cmp.Inconclusive = true
		}
	}
	switch {
	case cmp.Regressed:
		cmp.Inconclusive = false
		cmp.Verdict = OverallRegressed
	case !withInterval:
		cmp.Verdict = OverallInconclusive
		cmp.Reason = noSpreadReason(cmp.Before, cmp.After)
	case cmp.Inconclusive:
		cmp.Verdict = OverallInconclusive
		adviseTrials(cmp, opts)
		notes = append(notes, "an inconclusive figure's interval holds both no change and a regression larger than the threshold: "+
			"these trials cannot tell which")
	default:
		cmp.Verdict = OverallNoRegression
	}
	cmp.Environment = EnvDiff(before, after)
	if before.Environment == nil || after.Environment == nil {
		notes = append(notes, "a report has no environment snapshot: the environment diff is incomplete")
	}
	cmp.Notes = notes
	return cmp, nil
}

// noSpreadReason is the reason of a comparison with a side of one trial
// (a report of none is refused before).
func noSpreadReason(before, after Side) string {
	what := "1 trial a side has"
	switch {
	case after.Trials >= MinTrials:
		what = "the before report's 1 trial has"
	case before.Trials >= MinTrials:
		what = "the after report's 1 trial has"
	}
	return fmt.Sprintf("%s no spread to judge a change by; run burst with --trials=%d or more on both sides", what, AdviseTrials)
}

// adviseTrials gives an inconclusive comparison's reason: the smallest
// change its noisiest inconclusive figure could detect, and about how many
// trials a side would detect a change of the threshold there.
func adviseTrials(cmp *Comparison, opts Options) {
	var worst *Row
	for i := range cmp.Rows {
		r := &cmp.Rows[i]
		if r.Verdict == VerdictInconclusive && r.Detectable != nil && (worst == nil || *r.Detectable > *worst.Detectable) {
			worst = r
		}
	}
	cmp.Reason = "the trials are too noisy to tell; run more trials or on a quieter host"
	if worst == nil {
		return
	}
	cmp.Noisiest = worst.Command + " " + worst.Figure
	cmp.Detectable = worst.Detectable
	cmp.TrialsToDetect = trialsToDetect(worst.logVars, math.Log1p(opts.Threshold), 1-cmp.Confidence)
	many := fmt.Sprintf("about %d trials a side", cmp.TrialsToDetect)
	if cmp.TrialsToDetect >= MaxAdvisedTrials {
		many = fmt.Sprintf("more than %d trials a side", MaxAdvisedTrials)
	}
	cmp.Reason = fmt.Sprintf("these trials could detect a change of %s or more (%s, the noisiest figure); %s would detect a %s change, or run on a quieter host",
		changeSize(*worst.Detectable), cmp.Noisiest, many, pct(opts.Threshold, false))
}

// judge sets the change, its interval and the verdict of one row:
// regressed when the change is worse than the threshold and the interval
// excludes no change; improved the other way round; inconclusive when the
// interval still holds a regression larger than the threshold (these
// trials cannot rule it out), or when there is no interval (a side without
// spread cannot tell a change from noise); otherwise no significant change.
func judge(r *Row, withInterval, higherIsWorse bool, opts Options, confidence float64, quantiles map[float64]float64, detectQuantiles map[[2]float64]float64) {
	// In logarithms: after/before of two huge (or tiny) figures would
	// overflow to +Inf, which JSON cannot carry.
	r.Change = finiteExpm1(logMean(r.AfterTrials) - logMean(r.BeforeTrials))
	if !withInterval {
		r.Verdict = VerdictInconclusive
		return
	}
	worse, better := r.Change > opts.Threshold, r.Change < -opts.Threshold
	if !higherIsWorse {
		worse, better = better, worse
	}
	_, lo, hi := logRatioInterval(r.BeforeTrials, r.AfterTrials, 1-confidence, quantiles)
	low, high := finiteExpm1(lo), finiteExpm1(hi)
	r.Low, r.High = &low, &high
	_, r.logVars[0] = meanVar(logs(r.BeforeTrials))
	_, r.logVars[1] = meanVar(logs(r.AfterTrials))
	detectable := finiteExpm1(minDetectable(r.logVars, len(r.BeforeTrials), len(r.AfterTrials), 1-confidence, detectQuantiles))
	r.Detectable = &detectable
	up, down := low > 0, high < 0
	if !higherIsWorse {
		up, down = down, up
	}
	sigWorse, sigBetter := worse && up, better && down
	// The worse end of the interval: a regression larger than the
	// threshold is still possible.
	mayBeWorse := high > opts.Threshold
	if !higherIsWorse {
		mayBeWorse = low < -opts.Threshold
	}
	switch {
	case sigWorse:
		r.Verdict = VerdictRegressed
	case sigBetter:
		r.Verdict = VerdictImproved
	case mayBeWorse:
		r.Verdict = VerdictInconclusive
	default:
		r.Verdict = VerdictNoChange
	}
}

func completedTrials(r *report.Report, name string, notes *[]string) ([]report.TrialReport, error) {
	if r.Schema != report.Schema {
		return nil, fmt.Errorf("%w: %s has schema %q, this redis-prober reads %q", ErrIncompatible, name, r.Schema, report.Schema)
	}
	if r.StepPlan != nil {
		return nil, fmt.Errorf("%w: %s is a step-load report; compare reads burst reports (redis-prober burst --trials=N --json-out-file=...)", ErrIncompatible, name)
	}
	var out []report.TrialReport
	for _, t := range r.Trials {
		if t.Outcome == burst.OutcomeCompleted && t.Totals.Ops > 0 {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s has no completed trial (outcome %s: %s)", ErrIncompatible, name, r.Outcome, r.Reason)
	}
	if n := len(r.Trials) - len(out); n > 0 {
		*notes = append(*notes, fmt.Sprintf("%s: %d of %d trials did not complete and are left out", name, n, len(r.Trials)))
	}
	return out, nil
}

// samePlan refuses reports of different loads: their latency differs for
// reasons that are not a change of the system.
func samePlan(b, a report.PlanReport) error {
	var diffs []string
	check := func(name string, x, y any) {
		if fmt.Sprint(x) != fmt.Sprint(y) {
			diffs = append(diffs, fmt.Sprintf("%s %v vs %v", name, x, y))
		}
	}
	check("clients", b.Clients, a.Clients)
	check("pipeline", b.Pipeline, a.Pipeline)
	check("command mix", mixText(b.Mix), mixText(a.Mix))
	check("key pattern", b.KeyPattern, a.KeyPattern)
	check("key range", fmt.Sprintf("%d-%d", b.KeyMinimum, b.KeyMaximum), fmt.Sprintf("%d-%d", a.KeyMinimum, a.KeyMaximum))
	check("data size", fmt.Sprintf("%d-%d", b.DataSize, b.DataSizeMax), fmt.Sprintf("%d-%d", a.DataSize, a.DataSizeMax))
	check("rate", b.Rate, a.Rate)
	if len(diffs) > 0 {
		return fmt.Errorf("%w: the load plans differ (%s); run both bursts with the same options", ErrIncompatible, strings.Join(diffs, ", "))
	}
	return nil
}

func mixText(mix []burst.MixEntry) string {
	parts := make([]string, len(mix))
	for i, m := range mix {
		parts[i] = fmt.Sprintf("%v", m)
	}
	return strings.Join(parts, ",")
}

// commandNames are the commands of before's first trial that after has
// too, in before's order.
func commandNames(bt, at []report.TrialReport, notes *[]string) []string {
	has := func(ts []report.TrialReport) map[string]bool {
		m := map[string]bool{}
		for _, c := range ts[0].Commands {
			m[c.Command] = true
		}
		return m
	}
	inAfter := has(at)
	inBefore := has(bt)
	var out []string
	seen := map[string]bool{}
	for _, c := range bt[0].Commands {
		if seen[c.Command] {
			continue // a name twice (a hand-made report): one row
		}
		seen[c.Command] = true
		if inAfter[c.Command] {
			out = append(out, c.Command)
		} else {
			*notes = append(*notes, c.Command+" is only in the before report")
		}
	}
	for _, c := range at[0].Commands {
		if !inBefore[c.Command] && !seen[c.Command] {
			seen[c.Command] = true
			*notes = append(*notes, c.Command+" is only in the after report")
		}
	}
	return out
}

// indexCommands maps each trial's commands by name (the last of a name
// wins, as a scan of the list would find).
func indexCommands(ts []report.TrialReport) []map[string]*report.CommandReport {
	out := make([]map[string]*report.CommandReport, len(ts))
	for i := range ts {
		m := make(map[string]*report.CommandReport, len(ts[i].Commands))
		for j := range ts[i].Commands {
			m[ts[i].Commands[j].Command] = &ts[i].Commands[j]
		}
		out[i] = m
	}
	return out
}

// trialFigures reads one figure of cmd ("total" for the totals) from
// every trial; values are kept above zero so their logarithm exists.
func trialFigures(ts []report.TrialReport, index []map[string]*report.CommandReport, cmd string, percentile float64, name string) ([]float64, error) {
	out := make([]float64, 0, len(ts))
	for i, t := range ts {
		c, ok := &t.Totals, cmd == "total"
		if !ok {
			c, ok = index[i][cmd]
		}
		if !ok {
			return nil, fmt.Errorf("%w: %s trial %d has no figures for %s", ErrIncompatible, name, t.Trial, cmd)
		}
		v := c.OpsPerSec
		if percentile > 0 {
			i := slices.IndexFunc(c.Latency.Percentiles, func(p report.PercentileReport) bool { return p.Percentile == percentile })
			if i < 0 {
				return nil, fmt.Errorf("%w: %s trial %d has no p%s for %s", ErrIncompatible, name, t.Trial,
					strconv.FormatFloat(percentile, 'f', -1, 64), cmd)
			}
			v = c.Latency.Percentiles[i].Ms
		}
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return nil, fmt.Errorf("%w: %s trial %d: %v is not a figure", ErrIncompatible, name, t.Trial, v)
		}
		out = append(out, max(v, 1e-3)) // a microsecond, a thousandth of an op/s
	}
	return out, nil
}

func geoMean(xs []float64) float64 { return finiteExp(logMean(xs)) }

func logMean(xs []float64) float64 {
	m, _ := meanVar(logs(xs))
	return m
}

// finiteExp is e^x, at most math.MaxFloat64. math.Exp overflows a little
// before the largest float (e^709.73 is +Inf on amd64, though it is below
// 1.8e308), so the last stretch goes through a square.
func finiteExp(x float64) float64 {
	v := math.Exp(x)
	if math.IsInf(v, 1) {
		h := math.Exp(x / 2)
		v = h * h
	}
	if math.IsInf(v, 1) || math.IsNaN(v) {
		return math.MaxFloat64
	}
	return v
}

// finiteExpm1 is e^x - 1, at most math.MaxFloat64.
func finiteExpm1(x float64) float64 {
	if x > 1 {
		return finiteExp(x) - 1
	}
	return math.Expm1(x)
}

// VerdictExit is the exit code of a verdict the output already tells; a
// command line exits with it and prints no error.
type VerdictExit int

// ExitInconclusive is compare's exit code for an inconclusive verdict:
// nothing is proven to have regressed, but "no regression" cannot be
// claimed either (1 is a regression, 2 bad input).
const ExitInconclusive VerdictExit = 3

func (e VerdictExit) Error() string { return fmt.Sprintf("verdict exit code %d", int(e)) }

// SilentExitCode is the exit code.
func (e VerdictExit) SilentExitCode() int { return int(e) }
