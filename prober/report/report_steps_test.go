package report

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/redis-prober/redis-prober/prober/burst"
)

// busySearch is issue 40's step search on a busy host, as its report:
// steps in the search's order (a ramp, a confirmation, bisection, late
// rechecks), two aborted by the governor, and a knee at 12,000 ops/s that
// passed one of its three tries, near the right edge of the chart.
func busySearch() *Report {
	rep := stepReport()
	step := func(rate, achieved, p99 float64, why string, confirm, knee bool) StepReport {
		s := StepReport{Rate: rate, Achieved: achieved, Passed: why == "", Why: why, Confirm: confirm, Knee: knee,
			Outcome: burst.OutcomeCompleted, P50Ms: p99 / 4, P99Ms: p99, P999Ms: p99 * 2}
		if why == burst.ReasonP99 {
			s = StepReport{Rate: rate, Why: why, Confirm: confirm, Outcome: burst.OutcomeAborted}
		}
		s.Verdict = StepVerdict(s.Passed, s.Why, s.Confirm, s.Knee)
		return s
	}
	rep.Steps = []StepReport{
		step(3000, 3000, 0.4, "", false, false),
		step(6000, 5990, 0.6, "", false, false),
		step(12000, 11900, 7, "objective", false, false),
		step(12000, 0, 0, burst.ReasonP99, true, false),
		step(8485, 8400, 0.9, "", false, false),
		step(10088, 10000, 1.2, "", false, false),
		step(11000, 10900, 1.8, "", false, false),
		step(12000, 11950, 2.5, "", true, true),
		step(24000, 0, 0, burst.ReasonP99, false, false),
	}
	rep.Capacity = &CapacityReport{OpsPerSec: 11950, Rate: 12000, Stop: burst.ReasonP99, StopReason: StopText(burst.ReasonP99),
		KneePassed: 1, KneeTries: 3}
	return rep
}

// TestStepMarkdownSaysWhatHappenedToEachStep: an aborted step says why and
// has no figures ("—", not 0 and 0.000), the unsteady knee is marked, and
// the stop reason reads as on the terminal and in the JSON.
func TestStepMarkdownSaysWhatHappenedToEachStep(t *testing.T) {
	rep := busySearch()
	var md bytes.Buffer
	if err := WriteStepMarkdown(&md, rep, "capacity.svg"); err != nil {
		t.Fatal(err)
	}
	out := md.String()
	for _, want := range []string{
		"| 4 | 12,000 | — | — | — | — | 0.000% | failed: aborted by the governor: sliding-window p99 above the abort threshold (confirming run) |",
		"| 9 | 24,000 | — | — | — | — |",
		"The knee is unsteady (unsteady: passed 1 of 3 tries at its rate)",
		"The search stopped: " + StopText(burst.ReasonP99) + ".",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "| 0 | 0.000 |") {
		t.Errorf("markdown shows an aborted step's figures as zeros:\n%s", out)
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Steps    []map[string]any `json:"steps"`
		Capacity map[string]any   `json:"capacity"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Capacity["stop_reason"] != StopText(burst.ReasonP99) || back.Capacity["knee_tries"] != 3.0 || back.Capacity["knee_passed"] != 1.0 {
		t.Errorf("JSON capacity %v: want the stop reason in words and the knee's tries", back.Capacity)
	}
	cut := back.Steps[3]
	for _, k := range []string{"achieved_ops_per_sec", "p50_ms", "p99_ms", "p999_ms"} {
		if _, ok := cut[k]; ok {
			t.Errorf("JSON: the aborted step has %s: %v", k, cut)
		}
	}
	if !strings.Contains(cut["verdict"].(string), "abort threshold") {
		t.Errorf("JSON: the aborted step's verdict %q", cut["verdict"])
	}
}

// TestStepChartDrawsStepsInRateOrder: the curve follows the target rate
// (the search's order zigzagged), the aborted steps are off the curve and
// marked along the top at their rate (not at the origin), and the knee's
// label stays inside the chart near its right edge.
func TestStepChartDrawsStepsInRateOrder(t *testing.T) {
	var svg bytes.Buffer
	if err := WriteStepChart(&svg, busySearch()); err != nil {
		t.Fatal(err)
	}
	out := svg.String()
	p99 := regexp.MustCompile(`<polyline fill="none" stroke="#ff7f0e" stroke-width="2" points="([^"]*)"/>`).FindStringSubmatch(out)
	if p99 == nil {
		t.Fatalf("no p99 line:\n%s", out)
	}
	pts := strings.Fields(p99[1])
	if len(pts) != 7 {
		t.Fatalf("p99 line has %d points, want the 7 measured steps: %s", len(pts), p99[1])
	}
	last := -1.0
	for _, pt := range pts {
		xy := strings.Split(pt, ",")
		x, _ := strconv.ParseFloat(xy[0], 64)
		y, _ := strconv.ParseFloat(xy[1], 64)
		if x < last {
			t.Errorf("the line goes back from x %v to %v: %s", last, x, p99[1])
		}
		if x <= 70 || y >= 370 {
			t.Errorf("a point at the origin's edge (%v, %v): %s", x, y, p99[1])
		}
		last = x
	}
	if n := strings.Count(out, `class="cut"`); n != 2 {
		t.Errorf("%d aborted steps marked, want 2:\n%s", n, out)
	}
	knee := regexp.MustCompile(`<text x="([0-9.]+)" y="[0-9.]+" text-anchor="(\w+)" fill="#2ca02c">([^<]*)</text>`).FindStringSubmatch(out)
	if knee == nil || knee[3] != "knee 11,950 ops/s (unsteady: passed 1 of 3 tries)" {
		t.Fatalf("knee label %q:\n%s", knee, out)
	}
	x, _ := strconv.ParseFloat(knee[1], 64)
	half := 3.5 * float64(len([]rune(knee[3])))
	lo, hi := x-half, x+half
	switch knee[2] {
	case "end":
		lo, hi = x-2*half, x
	case "start":
		lo, hi = x, x+2*half
	}
	if lo < 0 || hi > 760 {
		t.Errorf("the knee's label spans %.0f..%.0f, outside the chart's 0..760 (anchor %s at %v)", lo, hi, knee[2], x)
	}
}
