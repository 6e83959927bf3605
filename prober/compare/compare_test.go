package compare

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/prober/burst"
	"github.com/redis-prober/redis-prober/prober/report"
)

// noise is a fixed spread of trial figures around their mean (±2%).
var noise = []float64{1.00, 1.02, 0.98, 1.01, 0.99}

// fig is one command's figures in a synthetic trial.
type fig struct{ p50, p99, p999, ops float64 }

func synthCommand(name string, f fig) report.CommandReport {
	return report.CommandReport{Command: name, Ops: int64(f.ops), OpsPerSec: f.ops, Latency: report.LatencyReport{
		Percentiles: []report.PercentileReport{{Percentile: 50, Ms: f.p50}, {Percentile: 99, Ms: f.p99}, {Percentile: 99.9, Ms: f.p999}, {Percentile: 100, Ms: f.p999 * 2}}}}
}

// synthReport builds a burst report of n trials of get and set; scale
// multiplies get's figure of the given name ("" for none) in every trial,
// and trial i is further multiplied by noise[(i+shift)%5].
func synthReport(n, shift int, figure string, scale float64) *report.Report {
	rep := &report.Report{Schema: report.Schema, Target: "127.0.0.1:6379", Outcome: burst.OutcomeCompleted,
		Start: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Plan:  report.PlanReport{Name: "cli", Clients: 4, Pipeline: 1, Mix: []burst.MixEntry{{Op: "set", Weight: 1}, {Op: "get", Weight: 10}}, KeyPattern: "R:R", KeyMaximum: 9999, DataSize: 32, Rate: 2000},
		Environment: &report.Environment{
			Host:  report.HostEnv{Kernel: "6.1.0", THPEnabled: "madvise", Sysctls: map[string]string{"vm.swappiness": "1"}},
			Redis: report.RedisEnv{Version: "7.0.15", Config: map[string]string{"appendfsync": "everysec", "appendonly": "no"}},
		}}
	for i := range n {
		k := noise[(i+shift)%len(noise)]
		get := fig{0.10 * k, 0.50 * k, 1.00 * k, 1800 * k}
		set := fig{0.12 * k, 0.60 * k, 1.20 * k, 180 * k}
		switch figure {
		case "p50":
			get.p50 *= scale
		case "p99":
			get.p99 *= scale
		case "ops/s":
			get.ops *= scale
		}
		tot := fig{get.p50, get.p99, get.p999, get.ops + set.ops}
		rep.Trials = append(rep.Trials, report.TrialReport{Trial: i + 1, Outcome: burst.OutcomeCompleted,
			Totals: synthCommand("", tot), Commands: []report.CommandReport{synthCommand("set", set), synthCommand("get", get)}})
	}
	return rep
}

var defaultOpts = Options{Threshold: 0.10, Alpha: 0.05}

func row(t *testing.T, c *Comparison, cmd, figure string) Row {
	t.Helper()
	for _, r := range c.Rows {
		if r.Command == cmd && r.Figure == figure {
			return r
		}
	}
	t.Fatalf("no row %s %s", cmd, figure)
	return Row{}
}

func TestCompareVerdicts(t *testing.T) {
	tests := []struct {
		name      string
		after     *report.Report
		figure    string
		verdict   string
		regressed bool
	}{
		{"30% p99 regression", synthReport(5, 2, "p99", 1.30), "p99", VerdictRegressed, true},
		{"identical distributions", synthReport(5, 2, "", 1), "p99", VerdictNoChange, false},
		{"same figures", synthReport(5, 0, "", 1), "p99", VerdictNoChange, false},
		{"3% under a 10% threshold", synthReport(5, 0, "p99", 1.03), "p99", VerdictNoChange, false},
		{"30% p50 improvement", synthReport(5, 1, "p50", 0.70), "p50", VerdictImproved, false},
		{"30% throughput drop", synthReport(5, 3, "ops/s", 0.70), "ops/s", VerdictRegressed, true},
		{"30% more throughput", synthReport(5, 3, "ops/s", 1.30), "ops/s", VerdictImproved, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Compare(context.Background(), synthReport(5, 0, "", 1), tc.after, "before.json", "after.json", defaultOpts)
			if err != nil {
				t.Fatal(err)
			}
			r := row(t, c, "get", tc.figure)
			if r.Verdict != tc.verdict || c.Regressed != tc.regressed {
				t.Fatalf("get %s: verdict %q (change %+.1f%% [%+.1f%%, %+.1f%%]), regressed %v; want %q, %v",
					tc.figure, r.Verdict, r.Change*100, *r.Low*100, *r.High*100, c.Regressed, tc.verdict, tc.regressed)
			}
			for _, other := range c.Rows {
				if (other.Command != "get" && other.Command != "total") || other.Figure != tc.figure {
					if other.Verdict != VerdictNoChange {
						t.Errorf("%s %s: %s, want no change", other.Command, other.Figure, other.Verdict)
					}
				}
			}
		})
	}
}

func TestCompareNoisyDifferenceIsInconclusive(t *testing.T) {
	// After is 20% slower on average, but its trials spread from 0.6x to
	// 1.8x: three trials can tell that neither from noise nor from a
	// regression beyond the threshold.
	before := synthReport(3, 0, "", 1)
	after := synthReport(3, 0, "", 1)
	for i, k := range []float64{0.6, 1.2, 1.8} {
		after.Trials[i].Commands[1].Latency.Percentiles[1].Ms *= k
	}
	c, err := Compare(context.Background(), before, after, "b", "a", defaultOpts)
	if err != nil {
		t.Fatal(err)
	}
	if r := row(t, c, "get", "p99"); r.Verdict != VerdictInconclusive || c.Regressed || !c.Inconclusive || c.Verdict != OverallInconclusive {
		t.Fatalf("noisy get p99: %s (change %+.1f%% [%+.1f%%, %+.1f%%]), overall %q", r.Verdict, r.Change*100, *r.Low*100, *r.High*100, c.Verdict)
	}
}

// TestCompareWideIntervalIsNeverNoRegression is the report of issue 14: a
// p99 up by several times with an interval from -100% to +millions of
// percent was "no significant change" and exit 0. It is inconclusive, in
// the verdict line of text and markdown and in the JSON.
func TestCompareWideIntervalIsNeverNoRegression(t *testing.T) {
	before := synthReport(5, 0, "", 1)
	after := synthReport(5, 0, "", 1)
	for i, k := range []float64{0.05, 0.5, 3, 40, 300} {
		after.Trials[i].Commands[1].Latency.Percentiles[1].Ms *= k
	}
	c, err := Compare(context.Background(), before, after, "before.json", "after.json", defaultOpts)
	if err != nil {
		t.Fatal(err)
	}
	r := row(t, c, "get", "p99")
	if *r.Low > -0.5 || *r.High < 100 {
		t.Fatalf("the interval [%+.1f%%, %+.1f%%] is not as wide as the case it stands for", *r.Low*100, *r.High*100)
	}
	if r.Verdict != VerdictInconclusive || c.Regressed || !c.Inconclusive || c.Verdict != OverallInconclusive {
		t.Fatalf("get p99 %+.1f%% [%+.1f%%, %+.1f%%]: verdict %q, overall %q (regressed %v, inconclusive %v)",
			r.Change*100, *r.Low*100, *r.High*100, r.Verdict, c.Verdict, c.Regressed, c.Inconclusive)
	}
	// The other figures stay as they were: narrow intervals, no change.
	for _, o := range c.Rows {
		if o.Figure != "p99" || o.Command == "set" {
			if o.Verdict != VerdictNoChange {
				t.Errorf("%s %s: %s, want no significant change", o.Command, o.Figure, o.Verdict)
			}
		}
	}
	var text, md, js strings.Builder
	if err := WriteText(&text, c); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, c); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&js, c); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"text": text.String(), "markdown": md.String()} {
		if !strings.Contains(out, "INCONCLUSIVE, run more trials (get p99") || strings.Contains(out, "no regression") {
			t.Errorf("%s output does not say inconclusive:\n%s", name, out)
		}
	}
	if !strings.Contains(md.String(), "**inconclusive**") {
		t.Errorf("markdown does not mark the row:\n%s", md.String())
	}
	if !strings.Contains(js.String(), `"verdict": "inconclusive"`) || !strings.Contains(js.String(), `"inconclusive": true`) {
		t.Errorf("JSON lacks the verdict:\n%s", js.String())
	}
}

// TestCompareRegressionWinsOverInconclusive: a confirmed regression is the
// verdict even when another figure is inconclusive.
func TestCompareRegressionWinsOverInconclusive(t *testing.T) {
	before := synthReport(5, 0, "", 1)
	after := synthReport(5, 2, "p50", 1.5)
	for i, k := range []float64{0.05, 0.5, 3, 40, 300} {
		after.Trials[i].Commands[0].Latency.Percentiles[1].Ms *= k // set p99
	}
	c, err := Compare(context.Background(), before, after, "b", "a", defaultOpts)
	if err != nil {
		t.Fatal(err)
	}
	if row(t, c, "set", "p99").Verdict != VerdictInconclusive || row(t, c, "get", "p50").Verdict != VerdictRegressed {
		t.Fatalf("rows: set p99 %s, get p50 %s", row(t, c, "set", "p99").Verdict, row(t, c, "get", "p50").Verdict)
	}
	if !c.Regressed || c.Inconclusive || c.Verdict != OverallRegressed {
		t.Fatalf("overall %q (regressed %v, inconclusive %v), want regressed", c.Verdict, c.Regressed, c.Inconclusive)
	}
}

// TestCompareOneTrialIsInconclusive: a side of one trial has no spread, so
// neither a change beyond the threshold nor none at all can be told from
// noise (issue 28: two one-trial bursts of the same idle server came out
// REGRESSED). Every figure is inconclusive, without an interval, and the
// reason asks for trials on both sides.
func TestCompareOneTrialIsInconclusive(t *testing.T) {
	tests := []struct {
		name          string
		before, after *report.Report
		reason        string
	}{
		{"same figures", synthReport(1, 0, "", 1), synthReport(1, 0, "", 1), "1 trial a side has"},
		{"50% p99 regression", synthReport(1, 0, "", 1), synthReport(1, 0, "p99", 1.5), "1 trial a side has"},
		{"30% p50 improvement", synthReport(1, 0, "", 1), synthReport(1, 0, "p50", 0.7), "1 trial a side has"},
		{"one trial before", synthReport(1, 0, "", 1), synthReport(5, 0, "p99", 1.5), "the before report's 1 trial has"},
		{"one trial after", synthReport(5, 0, "", 1), synthReport(1, 0, "p99", 1.5), "the after report's 1 trial has"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Compare(context.Background(), tc.before, tc.after, "b", "a", defaultOpts)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.reason + " no spread to judge a change by; run burst with --trials=5 or more on both sides"
			if c.Verdict != OverallInconclusive || c.Regressed || !c.Inconclusive || c.Reason != want {
				t.Fatalf("overall %q (regressed %v, inconclusive %v), reason %q; want inconclusive, %q",
					c.Verdict, c.Regressed, c.Inconclusive, c.Reason, want)
			}
			for _, r := range c.Rows {
				if r.Verdict != VerdictInconclusive || r.Low != nil || r.High != nil {
					t.Errorf("%s %s: %s, interval %v..%v; want inconclusive, none", r.Command, r.Figure, r.Verdict, r.Low, r.High)
				}
			}
			var text strings.Builder
			if err := WriteText(&text, c); err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(text.String(), "\nVerdict: INCONCLUSIVE, "+want+"\n") {
				t.Errorf("text does not end with the reason:\n%s", text.String())
			}
		})
	}
	// Two trials a side are the fewest with an interval: a change far
	// beyond their spread is judged.
	c, err := Compare(context.Background(), synthReport(2, 0, "", 1), synthReport(2, 0, "p99", 2), "b", "a", defaultOpts)
	if err != nil {
		t.Fatal(err)
	}
	if r := row(t, c, "get", "p99"); r.Low == nil || r.Verdict != VerdictRegressed || c.Verdict != OverallRegressed || c.Reason != "" {
		t.Fatalf("two trials a side, get p99 doubled: %s (interval %v), overall %q, reason %q", r.Verdict, r.Low, c.Verdict, c.Reason)
	}
}

func TestCompareBadInput(t *testing.T) {
	good := func() *report.Report { return synthReport(3, 0, "", 1) }
	tests := []struct {
		name string
		edit func(r *report.Report)
		want string
	}{
		{"schema", func(r *report.Report) { r.Schema = "something/else" }, `schema "something/else"`},
		{"step report", func(r *report.Report) { r.StepPlan = &report.StepPlanReport{} }, "step-load report"},
		{"no trials", func(r *report.Report) { r.Trials, r.Outcome, r.Reason = nil, burst.OutcomeSkipped, "replica" }, "no completed trial"},
		{"another plan", func(r *report.Report) { r.Plan.Clients = 50 }, "clients 4 vs 50"},
		{"missing percentile", func(r *report.Report) { r.Trials[1].Commands[0].Latency.Percentiles = nil }, "trial 2 has no p50 for set"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			after := good()
			tc.edit(after)
			_, err := Compare(context.Background(), good(), after, "before.json", "after.json", defaultOpts)
			if !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrIncompatible naming %q", err, tc.want)
			}
		})
	}
}

func TestEnvDiff(t *testing.T) {
	before, after := synthReport(3, 0, "", 1), synthReport(3, 0, "", 1)
	after.Environment.Redis.Config["appendfsync"] = "always"
	after.Environment.Redis.Config["appendonly"] = "yes"
	after.Environment.Redis.Config["masterauth"] = "s3cret"
	after.Environment.Host.Kernel = "6.12.0"
	after.Environment.Host.Sysctls["vm.swappiness"] = "60"
	var got []string
	for _, d := range EnvDiff(before, after) {
		got = append(got, d.Name+": "+d.Before+" → "+d.After)
	}
	want := "appendfsync: everysec → always|appendonly: no → yes|host.kernel: 6.1.0 → 6.12.0|vm.swappiness: 1 → 60"
	if strings.Join(got, "|") != want {
		t.Fatalf("diff:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.ReplaceAll(want, "|", "\n"))
	}
	if d := EnvDiff(before, before); len(d) != 0 {
		t.Fatalf("a report differs from itself: %v", d)
	}
}

func TestStudentQuantile(t *testing.T) {
	for _, tc := range []struct{ p, df, want float64 }{
		{0.975, 1, 12.706}, {0.975, 4, 2.776}, {0.975, 10, 2.228}, {0.995, 8, 3.355}, {0.975, 1e6, 1.960},
	} {
		if got := studentQuantile(tc.p, tc.df); math.Abs(got-tc.want) > 0.002 {
			t.Errorf("t(%v, df %v) = %.4f, want %.3f", tc.p, tc.df, got, tc.want)
		}
	}
}

// spreadP99 multiplies get's p99 of each trial of rep by the factors in
// turn.
func spreadP99(rep *report.Report, factors ...float64) *report.Report {
	for i := range rep.Trials {
		rep.Trials[i].Commands[1].Latency.Percentiles[1].Ms *= factors[i%len(factors)]
	}
	return rep
}

// TestCompareInconclusiveSaysWhatTrialsCouldDetect is issue 40's case: a
// file compared with itself, its trials noisy, was "inconclusive" with
// nothing saying what change they could have seen or how many trials
// would do. The reason names the minimum detectable change of the noisiest
// figure and the trials a side that would detect the threshold; with that
// many trials of the same spread, the same comparison is conclusive.
func TestCompareInconclusiveSaysWhatTrialsCouldDetect(t *testing.T) {
	factors := []float64{0.7, 1.3, 1.0, 0.8, 1.25}
	self := spreadP99(synthReport(5, 0, "", 1), factors...)
	c, err := Compare(context.Background(), self, self, "a.json", "a.json", defaultOpts)
	if err != nil {
		t.Fatal(err)
	}
	if c.Verdict != OverallInconclusive || c.Noisiest != "get p99" || c.Detectable == nil {
		t.Fatalf("overall %q, noisiest %q, detectable %v; want inconclusive for get p99", c.Verdict, c.Noisiest, c.Detectable)
	}
	if *c.Detectable <= defaultOpts.Threshold || c.TrialsToDetect <= 5 || c.TrialsToDetect >= MaxAdvisedTrials {
		t.Fatalf("detectable %.3f, trials to detect %d: want above the threshold and more than the 5 run", *c.Detectable, c.TrialsToDetect)
	}
	var text strings.Builder
	if err := WriteText(&text, c); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("these trials could detect a change of %s or more (get p99, the noisiest figure); about %d trials a side would detect a 10%% change",
		changeSize(*c.Detectable), c.TrialsToDetect)
	if !strings.Contains(text.String(), "Verdict: INCONCLUSIVE") || !strings.Contains(text.String(), want) {
		t.Errorf("text lacks %q:\n%s", want, text.String())
	}
	for _, r := range c.Rows {
		if r.Detectable == nil || *r.Detectable < 0 {
			t.Errorf("%s %s: detectable %v", r.Command, r.Figure, r.Detectable)
		}
	}

	more := spreadP99(synthReport(c.TrialsToDetect, 0, "", 1), factors...)
	c2, err := Compare(context.Background(), more, more, "a.json", "a.json", defaultOpts)
	if err != nil {
		t.Fatal(err)
	}
	if r := row(t, c2, "get", "p99"); r.Verdict != VerdictNoChange || *r.Detectable > defaultOpts.Threshold {
		t.Errorf("%d trials a side: get p99 %s, detectable %.3f; want no significant change within the threshold",
			c.TrialsToDetect, r.Verdict, *r.Detectable)
	}
}

// TestCompareUnboundedIntervalIsReadable: a bound beyond a doubling (or a
// halving) reads "unbounded", never a figure such as +9622110.1%.
func TestCompareUnboundedIntervalIsReadable(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	tests := []struct {
		low, high *float64
		want      string
	}{
		{f(-0.05), f(0.08), "[-5.0%, +8.0%]"},
		{f(-0.3), f(96221.101), "[-30.0%, unbounded]"},
		{f(-0.9999), f(0.2), "[unbounded, +20.0%]"},
		{f(-0.9999), f(96221.101), "[unbounded]"},
		{nil, nil, "n/a"},
	}
	for _, tc := range tests {
		if got := intervalText(Row{Low: tc.low, High: tc.high}); got != tc.want {
			t.Errorf("interval %v..%v: %q, want %q", tc.low, tc.high, got, tc.want)
		}
	}
	before := synthReport(5, 0, "", 1)
	after := spreadP99(synthReport(5, 0, "", 1), 0.05, 0.5, 3, 40, 300)
	c, err := Compare(context.Background(), before, after, "b", "a", defaultOpts)
	if err != nil {
		t.Fatal(err)
	}
	var text, md strings.Builder
	if err := WriteText(&text, c); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, c); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"text": text.String(), "markdown": md.String()} {
		if !strings.Contains(out, "unbounded") || strings.Contains(out, "-100.0%") || strings.Contains(out, "00.0%]") {
			t.Errorf("%s shows an unbounded interval as figures:\n%s", name, out)
		}
	}
}
