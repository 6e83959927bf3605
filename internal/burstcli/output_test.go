package burstcli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/redis-prober/redis-prober/prober/burst"
	"github.com/redis-prober/redis-prober/prober/report"
)

// stepResult is a result of a step at rate whose every request took lat,
// run for secs; cut, when not "", is the governor's reason for aborting it
// (with the few ops it ran).
func stepResult(rate float64, lat time.Duration, cut string) burst.Result {
	ops := int64(rate)
	if cut != "" {
		ops = 10
	}
	h := hdrhistogram.New(100, int64(time.Minute), 3)
	for range ops {
		_ = h.RecordValue(int64(lat))
	}
	r := burst.Result{Plan: burst.Plan{Rate: rate}, Outcome: burst.OutcomeCompleted, Elapsed: time.Second,
		Total: &burst.CommandStats{Ops: ops, Hist: h}}
	if cut != "" {
		r.Outcome, r.Reason = burst.OutcomeAborted, cut
	}
	return r
}

// unsteadySearch is issue 40's search on a busy host: 2,000 ops/s missed
// the objective, missed again when confirmed, was aborted by the governor
// on a later try, and passed only on the last: it is the knee, by one of
// four tries.
func unsteadySearch() *burst.StepResult {
	row := func(rate float64, lat time.Duration, why, cut string, confirm, knee bool) burst.StepRow {
		res := stepResult(rate, lat, cut)
		return burst.StepRow{Rate: rate, Achieved: res.OpsPerSec(), Passed: why == "", Why: why, Confirm: confirm, Knee: knee, Result: res}
	}
	ms := time.Millisecond
	return &burst.StepResult{
		Steps: []burst.StepRow{
			row(1000, ms, "", "", false, false),
			row(2000, 9*ms, "objective", "", false, false),
			row(2000, 9*ms, "objective", "", true, false),
			row(1414, ms, "", "", false, false),
			row(2000, 0, burst.ReasonP99, burst.ReasonP99, true, false),
			row(2000, ms, "", "", true, true),
			row(4000, 0, burst.ReasonP99, burst.ReasonP99, false, false),
		},
		Capacity: 2000, Rate: 2000, Stop: burst.ReasonP99,
	}
}

// TestStepTableSaysWhatHappenedToEachStep: a step the governor aborted
// shows why and no figures (not "0" and "0.000"), a knee that passed one
// of several tries is unsteady, and the search's stop reason is in the
// words of the Markdown report.
func TestStepTableSaysWhatHappenedToEachStep(t *testing.T) {
	var b bytes.Buffer
	writeStepTable(&b, unsteadySearch())
	out := b.String()
	lines := strings.Split(out, "\n")
	var cut []string
	for _, l := range lines {
		if strings.Contains(l, "abort threshold") && !strings.HasPrefix(l, "Capacity") {
			cut = append(cut, l)
		}
	}
	if len(cut) != 2 {
		t.Fatalf("%d lines say the step was aborted, want 2:\n%s", len(cut), out)
	}
	for _, l := range cut {
		f := strings.Fields(l)
		if strings.Count(l, report.NoFigure) != 5 || f[2] != report.NoFigure || strings.Contains(l, "0.000") {
			t.Errorf("aborted step shows figures: %q", l)
		}
	}
	for _, want := range []string{
		"the knee (unsteady: passed 1 of 4 tries)",
		"(stopped: " + report.StopText(burst.ReasonP99) + ")",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "stopped: p99)") {
		t.Errorf("the stop reason is the code, not its words:\n%s", out)
	}
}
