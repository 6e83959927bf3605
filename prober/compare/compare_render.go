package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/redis-prober/redis-prober/internal/safetext"
	"github.com/redis-prober/redis-prober/prober/report"
)

// WriteJSON writes the comparison, indented.
func WriteJSON(w io.Writer, c *Comparison) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(c); err != nil {
		return fmt.Errorf("encode comparison: %w", err)
	}
	return nil
}

// WriteText writes the comparison as an aligned table for a
// terminal, the environment diff below it and the overall verdict last.
func WriteText(w io.Writer, c *Comparison) error {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	p := safetext.Printable // names and values come from the report files
	fmt.Fprintf(tw, "before:\t%s\t%s\t%s\t%d trials\n", p(c.Before.File), p(c.Before.Target), p(c.Before.Start), c.Before.Trials)
	fmt.Fprintf(tw, "after:\t%s\t%s\t%s\t%d trials\n", p(c.After.File), p(c.After.Target), p(c.After.Start), c.After.Trials)
	_ = tw.Flush()
	fmt.Fprintf(&b, "threshold %s; %s\n\n", pct(c.Threshold, false), c.Method)
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "COMMAND\tFIGURE\tBEFORE\tAFTER\tCHANGE\tINTERVAL\tVERDICT")
	for _, r := range c.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p(r.Command), r.Figure, figText(r.Before, r.Unit), figText(r.After, r.Unit),
			pct(r.Change, true), intervalText(r), r.Verdict)
	}
	_ = tw.Flush()
	b.WriteString("\n")
	if len(c.Environment) == 0 {
		b.WriteString("Environment: no difference\n")
	} else {
		b.WriteString("Environment (before → after):\n")
		for _, d := range c.Environment {
			fmt.Fprintf(&b, "  %s: %s → %s\n", p(d.Name), p(d.Before), p(d.After))
		}
	}
	for _, n := range c.Notes {
		fmt.Fprintf(&b, "Note: %s\n", p(n))
	}
	fmt.Fprintf(&b, "\n%s\n", p(verdictLine(c)))
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMarkdown writes the comparison for a change ticket.
func WriteMarkdown(w io.Writer, c *Comparison) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### redis-prober compare: %s\n\n", report.MarkdownEscape(verdictLine(c)))
	fmt.Fprintf(&b, "| | report | target | start | trials |\n|---|---|---|---|---:|\n")
	fmt.Fprintf(&b, "| before | %s | %s | %s | %d |\n", report.MarkdownCell(c.Before.File), report.MarkdownCell(c.Before.Target), report.MarkdownEscape(c.Before.Start), c.Before.Trials)
	fmt.Fprintf(&b, "| after | %s | %s | %s | %d |\n\n", report.MarkdownCell(c.After.File), report.MarkdownCell(c.After.Target), report.MarkdownEscape(c.After.Start), c.After.Trials)
	fmt.Fprintf(&b, "Threshold %s; %s.\n\n", pct(c.Threshold, false), report.MarkdownEscape(c.Method))
	b.WriteString("| command | figure | before | after | change | interval | verdict |\n|---|---|---:|---:|---:|---|---|\n")
	for _, r := range c.Rows {
		v := r.Verdict
		if v != VerdictNoChange {
			v = "**" + v + "**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", report.MarkdownCell(r.Command), r.Figure, figText(r.Before, r.Unit),
			figText(r.After, r.Unit), pct(r.Change, true), intervalText(r), v)
	}
	b.WriteString("\n**Environment (before → after)**\n\n")
	if len(c.Environment) == 0 {
		b.WriteString("No difference.\n")
	}
	for _, d := range c.Environment {
		fmt.Fprintf(&b, "- `%s`: `%s` → `%s`\n", report.MarkdownEscape(d.Name), report.MarkdownEscape(d.Before), report.MarkdownEscape(d.After))
	}
	for _, n := range c.Notes {
		fmt.Fprintf(&b, "\n> %s\n", report.MarkdownEscape(n))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// maxListed is how many inconclusive figures the verdict line names.
const maxListed = 6

// verdictLine is the overall verdict: the regressed figures, or else the
// inconclusive ones with their intervals, or no regression. Without an
// interval every figure is inconclusive for one reason, which it gives
// instead.
func verdictLine(c *Comparison) string {
	if c.Verdict == OverallInconclusive && (c.Before.Trials < MinTrials || c.After.Trials < MinTrials) {
		return "Verdict: INCONCLUSIVE, " + c.Reason
	}
	var bad, unsure []string
	for _, r := range c.Rows {
		switch r.Verdict {
		case VerdictRegressed:
			bad = append(bad, fmt.Sprintf("%s %s %s", r.Command, r.Figure, pct(r.Change, true)))
		case VerdictInconclusive:
			unsure = append(unsure, fmt.Sprintf("%s %s %s %s", r.Command, r.Figure, pct(r.Change, true), intervalText(r)))
		}
	}
	switch {
	case len(bad) > 0:
		return "Verdict: REGRESSED (" + strings.Join(bad, ", ") + ")"
	case len(unsure) > maxListed:
		unsure = append(unsure[:maxListed], fmt.Sprintf("and %d more", len(unsure)-maxListed))
		fallthrough
	case len(unsure) > 0:
		return "Verdict: INCONCLUSIVE, run more trials (" + strings.Join(unsure, ", ") + "): " + c.Reason
	}
	return "Verdict: no regression"
}

func figText(v float64, unit string) string {
	if unit == "ms" {
		return fmt.Sprintf("%.3f ms", v)
	}
	return fmt.Sprintf("%.0f %s", v, unit)
}

func pct(f float64, sign bool) string {
	if sign {
		return fmt.Sprintf("%+.1f%%", f*100)
	}
	return fmt.Sprintf("%.4g%%", f*100)
}

// unboundedAbove and unboundedBelow are where an interval's bound stops
// being shown as a figure: beyond a doubling or a halving (the interval is
// symmetric in the ratio's logarithm), the trials have not bounded the
// change on that side, and a figure such as +9622110.1% or -100.0% only
// looks precise.
const (
	unboundedAbove = 1.0
	unboundedBelow = -0.5
)

func intervalText(r Row) string {
	if r.Low == nil || r.High == nil {
		return "n/a"
	}
	lo, hi := pct(*r.Low, true), pct(*r.High, true)
	if *r.Low < unboundedBelow {
		lo = "unbounded"
	}
	if *r.High > unboundedAbove {
		hi = "unbounded"
	}
	if *r.Low < unboundedBelow && *r.High > unboundedAbove {
		return "[unbounded]"
	}
	return fmt.Sprintf("[%s, %s]", lo, hi)
}

// changeSize says how large a (detectable) change is: a percentage up to a
// doubling, a factor beyond.
func changeSize(f float64) string {
	if f > unboundedAbove {
		return fmt.Sprintf("%.3gx", 1+f)
	}
	return fmt.Sprintf("%.1f%%", f*100)
}
