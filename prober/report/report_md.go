package report

import (
	"cmp"
	"embed"
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/redis-prober/redis-prober/internal/safetext"
	"github.com/redis-prober/redis-prober/prober/burst"
)

//go:embed templates/steps.md.tmpl templates/chart.svg.tmpl
var reportTemplates embed.FS

// The report templates are parsed when a report is first written: most
// probers never write one, and parsing at init left every prober's start
// with allocations that stayed live (docs/performance.md, "Measured reasons").
var (
	stepsMD = sync.OnceValue(func() *template.Template {
		return template.Must(template.New("steps.md.tmpl").ParseFS(reportTemplates, "templates/steps.md.tmpl"))
	})
	chartSVG = sync.OnceValue(func() *template.Template {
		return template.Must(template.New("chart.svg.tmpl").Funcs(template.FuncMap{
			"legendY":     func(i int) int { return 40 + 16*i },
			"legendTextX": func(x int) int { return x + 18 },
		}).ParseFS(reportTemplates, "templates/chart.svg.tmpl"))
	})
)

type mdPair struct{ Name, Value string }

type mdStep struct {
	N                              int
	Rate, Achieved, P50, P99, P999 string
	Errors, Verdict                string
}

// WriteStepMarkdown writes the step-load report for a change ticket;
// chartName is the SVG's file name, linked relative to the report.
func WriteStepMarkdown(w io.Writer, rep *Report, chartName string) error {
	if rep.StepPlan == nil || rep.Capacity == nil {
		return fmt.Errorf("not a step-load report")
	}
	objective := time.Duration(rep.StepPlan.ObjectiveSeconds * float64(time.Second))
	data := map[string]any{
		"Target":       MarkdownEscape(rep.Target),
		"Start":        rep.Start.UTC().Format(time.RFC3339),
		"Took":         rep.End.Sub(rep.Start).Round(time.Second).String(),
		"Objective":    objective.String(),
		"MaxErrors":    strconv.FormatFloat(100*rep.StepPlan.MaxErrorRatio, 'f', -1, 64) + "%",
		"Capacity":     "",
		"CapacityRate": thousands(rep.Capacity.Rate),
		"Stop":         MarkdownEscape(StopText(rep.Capacity.Stop)),
		"Unsteady":     UnsteadyText(rep.Capacity.KneePassed, rep.Capacity.KneeTries),
		"LowerBound":   rep.Capacity.LowerBound,
		"Chart":        chartName,
	}
	if rep.Capacity.OpsPerSec > 0 {
		data["Capacity"] = thousands(rep.Capacity.OpsPerSec)
	}
	var steps []mdStep
	for i, s := range rep.Steps {
		verdict := MarkdownEscape(StepVerdict(s.Passed, s.Why, s.Confirm, s.Knee))
		row := mdStep{N: i + 1, Rate: thousands(s.Rate), Achieved: NoFigure, P50: NoFigure, P99: NoFigure, P999: NoFigure,
			Errors: fmt.Sprintf("%.3f%%", 100*s.ErrorRate), Verdict: verdict}
		if !s.Cut() {
			row.Achieved = thousands(s.Achieved)
			row.P50, row.P99, row.P999 = fmt.Sprintf("%.3f", s.P50Ms), fmt.Sprintf("%.3f", s.P99Ms), fmt.Sprintf("%.3f", s.P999Ms)
		}
		steps = append(steps, row)
	}
	data["Steps"] = steps
	p := rep.Plan
	var mix []string
	for _, m := range p.Mix {
		mix = append(mix, fmt.Sprintf("%s:%d", MarkdownEscape(m.Op), m.Weight))
	}
	data["Plan"] = []mdPair{
		{"clients (connections)", strconv.Itoa(p.Clients)},
		{"pipeline", strconv.Itoa(p.Pipeline)},
		{"commands (weights)", strings.Join(mix, ", ")},
		{"keys", fmt.Sprintf("%s over %d..%d", MarkdownEscape(p.KeyPattern), p.KeyMinimum, p.KeyMaximum)},
		{"data size", dataSizeText(p)},
		{"steps", stepsText(rep.StepPlan)},
		{"warm-up per step", fmt.Sprintf("%gs", p.WarmupSeconds)},
		{"bytes written at most", iecBytes(p.MaxBytes)},
		{"key prefix", "`" + MarkdownEscape(p.KeyPrefix) + "`"},
	}
	var redisRows, hostRows []mdPair
	if e := rep.Environment; e != nil {
		usedMemory := "" // unknown: INFO could not be read
		if e.Redis.UsedMemory > 0 {
			usedMemory = iecBytes(e.Redis.UsedMemory)
		}
		redisRows = []mdPair{{"version", e.Redis.Version}, {"mode", e.Redis.Mode}, {"os", e.Redis.OS},
			{"role", e.Redis.Role}, {"used_memory", usedMemory},
			{"allocator", e.Redis.Allocator}, {"io_threads_active", e.Redis.IOThreads}}
		hostRows = []mdPair{{"kernel", e.Host.Kernel}, {"transparent huge pages", e.Host.THPEnabled},
			{"THP defrag", e.Host.THPDefrag}, {"CPU", fmt.Sprintf("%s × %d", e.Host.CPUModel, e.Host.CPUs)},
			{"prober", e.Prober.Version + " (" + e.Prober.GoVersion + ")"}}
		for i := range redisRows {
			redisRows[i].Value = MarkdownCell(redisRows[i].Value)
		}
		for i := range hostRows {
			hostRows[i].Value = MarkdownCell(hostRows[i].Value)
		}
		keys := make([]string, 0, len(e.Redis.Config))
		for k := range e.Redis.Config {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			redisRows = append(redisRows, mdPair{MarkdownEscape(k), configText(k, e.Redis.Config[k])})
		}
		if e.Redis.ConfigNote != "" {
			redisRows = append(redisRows, mdPair{"config", MarkdownEscape(e.Redis.ConfigNote)})
		}
	}
	data["Redis"], data["Host"] = redisRows, hostRows
	cleanup := fmt.Sprintf("The burst wrote %d distinct keys and unlinked them at the end; a SCAN of the namespace found nothing left.",
		rep.Cleanup.KeysWritten)
	if rep.Cleanup.KeysWritten < 0 {
		cleanup = "The key range was too large to track; a SCAN of the namespace deleted what the burst wrote."
	}
	if rep.Cleanup.Error != "" {
		cleanup = "Cleanup did not finish (" + MarkdownEscape(rep.Cleanup.Error) + "); the keys left expire by their TTL."
	}
	data["Cleanup"] = cleanup
	return stepsMD().Execute(w, data)
}

func dataSizeText(p PlanReport) string {
	if p.DataSizeMax > p.DataSize {
		return iecBytes(int64(p.DataSize)) + " to " + iecBytes(int64(p.DataSizeMax))
	}
	return iecBytes(int64(p.DataSize))
}

// configText is a CONFIG GET value as a table cell: the value as Redis
// gave it, in a code span, but a size in bytes as people read it.
func configText(name, value string) string {
	if name == "maxmemory" {
		if n, err := strconv.ParseInt(value, 10, 64); err == nil && n >= 0 {
			if n == 0 {
				return "0 (no limit)"
			}
			return iecBytes(n)
		}
	}
	return "`" + MarkdownEscape(value) + "`"
}

// stepsText describes the ramp and the bounds it had.
func stepsText(sp *StepPlanReport) string {
	s := fmt.Sprintf("from %s ops/s, ×%g a step of %gs until a miss (each miss run twice), then bisection to within %g%%",
		thousands(sp.Start), sp.Factor, sp.StepSeconds, 100*sp.Precision)
	if sp.MaxSteps > 0 {
		s += fmt.Sprintf(", at most %d steps", sp.MaxSteps)
	}
	if sp.MaxRate > 0 {
		s += ", up to " + thousands(sp.MaxRate) + " ops/s"
	}
	if sp.MaxSeconds > 0 {
		d := time.Duration(sp.MaxSeconds * float64(time.Second)).String()
		d = strings.TrimSuffix(strings.TrimSuffix(d, "0s"), "0m") // 1h0m0s reads 1h
		s += ", at most " + d + " in all"
	}
	return s
}

// NoFigure stands for a figure a step cut short does not have.
const NoFigure = "—"

// KneeText names the knee, and says so when it did not pass every try at
// its rate: "knee 12,000 ops/s (unsteady: passed 1 of 3 tries)".
func KneeText(opsPerSec float64, passed, tries int) string {
	s := "knee " + thousands(opsPerSec) + " ops/s"
	if u := UnsteadyText(passed, tries); u != "" {
		s += " (" + u + ")"
	}
	return s
}

// UnsteadyText is "unsteady: passed 1 of 3 tries" for a knee that missed
// some of its tries, else "".
func UnsteadyText(passed, tries int) string {
	if tries < 2 || passed >= tries {
		return ""
	}
	return fmt.Sprintf("unsteady: passed %d of %d tries", passed, tries)
}

// StepVerdict is a step's verdict in words: met or failed and why, the
// knee marked, a confirming run said so.
func StepVerdict(passed bool, why string, confirm, knee bool) string {
	v := "met"
	if !passed {
		v = "failed: " + StopText(why)
	}
	if confirm {
		v += " (confirming run)"
	}
	if knee {
		v += " ← knee"
	}
	return v
}

// StopText is why a search stopped, or a step failed, in the words every
// output uses (terminal, Markdown, the JSON's stop_reason).
func StopText(s string) string {
	switch s {
	case "objective":
		return "p99 above the objective"
	case "errors":
		return "errors above the budget"
	case "saturated": // reports of earlier versions
		return "achieved throughput below 90% of the target (saturated)"
	case "client-bound":
		return "client-bound: this client fell short of the rate while Redis met the objective"
	case "max-rate":
		return "the highest rate allowed was reached"
	case "max-steps":
		return "the most steps allowed were run"
	case "time":
		return "the search's time bound was reached"
	case "bytes":
		return "the bytes-written bound was reached"
	case burst.ReasonP99:
		return "aborted by the governor: sliding-window p99 above the abort threshold"
	case burst.ReasonCancelled:
		return "cancelled"
	}
	return s
}

// MarkdownEscape makes s safe inside a Markdown table cell or code span: pipes,
// backticks and line ends would break the table, and control characters
// (terminal escapes) or invalid UTF-8 from Redis or a report are escaped.
func MarkdownEscape(s string) string {
	return safetext.Printable(mdReplacer.Replace(s))
}

var mdReplacer = strings.NewReplacer("|", "\\|", "`", "'", "\n", " ", "\r", " ")

// MarkdownCell is a table cell: escaped, "(unknown)" when empty.
func MarkdownCell(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return MarkdownEscape(s)
}

// thousands formats a rate as a whole number with thin separators.
func thousands(f float64) string {
	s := strconv.FormatInt(int64(math.Round(f)), 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

type svgTick struct {
	Pos   float64
	Label string
}

type svgDot struct{ X, Y float64 }

type svgSeries struct {
	Name, Color, Points string
	Dots                []svgDot
}

// WriteStepChart draws p50, p99 and p99.9 against achieved throughput, on
// a log latency axis, with the objective as a dashed line.
func WriteStepChart(w io.Writer, rep *Report) error {
	if rep.StepPlan == nil {
		return fmt.Errorf("not a step-load report")
	}
	const W, H, left, right, top, bottom = 760, 420, 70, 730, 30, 370
	objMs := rep.StepPlan.ObjectiveSeconds * 1e3
	lo, hi := objMs, objMs
	xMax := 0.0
	for _, s := range rep.Steps {
		if s.Cut() {
			xMax = math.Max(xMax, s.Rate) // marked at its target rate
			continue
		}
		for _, v := range []float64{s.P50Ms, s.P99Ms, s.P999Ms} {
			if v > 0 {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
		xMax = math.Max(xMax, s.Achieved)
	}
	if xMax <= 0 {
		xMax = 1
	}
	lo = math.Pow(10, math.Floor(math.Log10(lo)))
	hi = math.Pow(10, math.Ceil(math.Log10(hi*1.01)))
	y := func(ms float64) float64 {
		ms = math.Max(ms, lo)
		return bottom - (math.Log10(ms)-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))*(bottom-top)
	}
	x := func(ops float64) float64 { return left + ops/xMax*(right-left-20) }
	var yt []svgTick
	for v := lo; v <= hi*1.0001; v *= 10 {
		yt = append(yt, svgTick{Pos: y(v), Label: strconv.FormatFloat(v, 'g', -1, 64)})
	}
	var xt []svgTick
	step := niceStep(xMax / 6)
	for i := 0; float64(i)*step <= xMax*1.0001; i++ {
		v := float64(i) * step
		xt = append(xt, svgTick{Pos: math.Round(x(v)*10) / 10, Label: tickLabel(v, step)})
	}
	series := []svgSeries{{Name: "p50", Color: "#1f77b4"}, {Name: "p99", Color: "#ff7f0e"}, {Name: "p99.9", Color: "#d62728"}}
	// The search visits rates out of order (a ramp, then bisection): the
	// curve follows the target rate, as the load grew. A step cut short
	// has no figures: it is marked at its target rate along the top, off
	// the curve.
	steps := slices.Clone(rep.Steps)
	slices.SortStableFunc(steps, func(a, b StepReport) int {
		return cmp.Or(cmp.Compare(a.Rate, b.Rate), cmp.Compare(a.Achieved, b.Achieved))
	})
	kneeX, kneeLabel, kneeAnchor := -1.0, "", "middle"
	kneePassed, kneeTries := 0, 0
	if rep.Capacity != nil {
		kneePassed, kneeTries = rep.Capacity.KneePassed, rep.Capacity.KneeTries
	}
	var cut []svgDot
	for _, s := range steps {
		if s.Knee && !s.Cut() {
			kneeX = math.Round(x(s.Achieved)*10) / 10
			kneeLabel = KneeText(s.Achieved, kneePassed, kneeTries)
			kneeAnchor = labelAnchor(kneeX, kneeLabel, left, right)
		}
		if s.Cut() {
			cut = append(cut, svgDot{X: math.Round(x(s.Rate)*10) / 10, Y: top + 4})
		}
	}
	for _, s := range steps {
		if s.Cut() {
			continue
		}
		for i, v := range []float64{s.P50Ms, s.P99Ms, s.P999Ms} {
			d := svgDot{X: math.Round(x(s.Achieved)*10) / 10, Y: math.Round(y(v)*10) / 10}
			series[i].Dots = append(series[i].Dots, d)
			series[i].Points += fmt.Sprintf("%g,%g ", d.X, d.Y)
		}
	}
	objective := time.Duration(rep.StepPlan.ObjectiveSeconds * float64(time.Second))
	return chartSVG().Execute(w, map[string]any{
		"W": W, "H": H, "Left": left, "Right": right, "Top": top, "Bottom": bottom,
		"Title":  html.EscapeString("Step load on " + rep.Target),
		"TitleX": (left + right) / 2, "LabelX": left - 6, "XLabelY": bottom + 16, "XTitleY": bottom + 38,
		"YTitleY": (top + bottom) / 2, "LegendX": left + 12,
		"YTicks": yt, "XTicks": xt, "Series": series,
		"ObjectiveY": y(objMs), "ObjectiveLabelY": y(objMs) - 5, "Objective": html.EscapeString(objective.String()),
		"KneeX": kneeX, "Knee": kneeLabel, "KneeLabelY": top + 12, "KneeAnchor": kneeAnchor,
		"Cut": cut, "CutLegendY": 40 + 16*len(series),
	})
}

// labelAnchor keeps a label centred on x inside [left, right]: anchored at
// its start or end where half of it would cross an edge. Its width is
// guessed at 7 pixels a character of the chart's 12-pixel font.
func labelAnchor(x float64, label string, left, right int) string {
	half := 3.5 * float64(len([]rune(label)))
	switch {
	case x+half > float64(right):
		return "end"
	case x-half < float64(left):
		return "start"
	}
	return "middle"
}

// tickLabel formats an axis value for ticks step apart, as 0, 500, 1k,
// 1.5k, 2M: in the unit of its magnitude, with as many decimals as the step
// needs so neighbouring ticks never read the same.
func tickLabel(v, step float64) string {
	unit, suffix := 1.0, ""
	switch {
	case v >= 1e6:
		unit, suffix = 1e6, "M"
	case v >= 1e3:
		unit, suffix = 1e3, "k"
	}
	dec := max(0, -int(math.Floor(math.Log10(step/unit)+1e-9)))
	p := math.Pow(10, float64(dec))
	return strconv.FormatFloat(math.Round(v/unit*p)/p, 'f', -1, 64) + suffix
}

// niceStep rounds a tick step to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*p {
			return m * p
		}
	}
	return 10 * p
}
