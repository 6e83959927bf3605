package doctor

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/redis-prober/redis-prober/collector"
	"github.com/redis-prober/redis-prober/internal/safetext"
	"github.com/redis-prober/redis-prober/wire"
)

// WriteText prints the report for a person: one line per check, and for
// each problem why it matters and the fix.
// Every string that came from Redis (or the host) goes through
// safetext.Printable: an INFO field must not drive the terminal.
func (r *Report) WriteText(w io.Writer, colour bool) {
	p := &textPrinter{w: w, colour: colour}
	q := safetext.Printable
	p.heading("Host (what this prober's /proc and /sys show)")
	if r.Intrinsic != nil {
		p.line("  measured: intrinsic latency max %s over %d windows", fmtSeconds(r.Intrinsic.MaxSeconds), r.Intrinsic.Windows)
	}
	for _, c := range r.Host {
		p.check(c)
	}
	for _, t := range r.Targets {
		p.line("")
		if !t.Reachable {
			p.heading("Redis " + q(t.Target) + ": " + failureHeading(t.Failure))
			p.line("  %s %s", p.tag("FAIL", red), q(t.Error))
			continue
		}
		p.heading("Redis " + q(t.Target) + " (" + q(t.Server) + ")")
		if t.Ping != nil {
			p.line("  measured: %s", t.Ping.describe("PING"))
		}
		if t.Connect != nil {
			p.line("  measured: %s", t.Connect.describe("connect (dial+AUTH+PING)"))
		}
		if t.Ping != nil && t.SlowThreshold > 0 {
			p.line("  slow PINGs (at or above %s): %s", fmtSeconds(t.SlowThreshold), slowCauses(t.Slow))
			if t.LargestKeys != "" {
				p.line("  largest keys then (INFO KEYSIZES): %s; a command on one of them may be the slow_command", q(t.LargestKeys))
			}
		}
		p.hostDelay(t)
		if !t.ProcessVisible {
			p.line("  note: the redis-server process is not visible here (%s)", q(t.ProcessError))
			p.line("        Redis runs on another host (or in another namespace): the Host section above is not its host,")
			p.line("        so the checks of its host and process are unknown; run the doctor on Redis's host for them")
		}
		for _, e := range t.Events {
			p.line("  LATENCY LATEST %-20s latest %s, max %s", q(e.Event), fmtSeconds(e.LatestSeconds), fmtSeconds(e.MaxSeconds))
		}
		for _, c := range t.Checks {
			p.check(c)
		}
	}
	p.line("")
	counts := map[string]int{}
	for _, c := range r.allChecks() {
		counts[verdict(c)]++
	}
	summary := fmt.Sprintf("Summary: failed %d, warnings %d, info %d, passed %d, unknown %d",
		counts["FAIL"], counts["WARN"], counts["INFO"], counts["PASS"], counts["UNKNOWN"])
	if len(r.Critical) > 0 {
		p.line("%s; critical: %s", summary, q(strings.Join(r.Critical, ", ")))
	} else {
		p.line("%s; nothing critical", summary)
	}
}

func (r *Report) allChecks() []CheckReport {
	out := slices.Clone(r.Host)
	for _, t := range r.Targets {
		out = append(out, t.Checks...)
	}
	return out
}

// verdict is the word shown for a check: FAIL (critical), WARN, INFO,
// PASS or UNKNOWN.
func verdict(c CheckReport) string {
	switch {
	case c.Status == "pass":
		return "PASS"
	case c.Status == "unknown":
		return "UNKNOWN"
	case c.Status == "warn":
		return "WARN"
	case c.Severity == string(collector.SeverityCritical):
		return "FAIL"
	case c.Severity == string(collector.SeverityWarning):
		return "WARN"
	}
	return "INFO"
}

const (
	red    = "31"
	green  = "32"
	yellow = "33"
	cyan   = "36"
	grey   = "90"
)

type textPrinter struct {
	w      io.Writer
	colour bool
}

func (p *textPrinter) line(format string, args ...any) { fmt.Fprintf(p.w, format+"\n", args...) }

func (p *textPrinter) heading(s string) {
	if p.colour {
		s = "\x1b[1m" + s + "\x1b[0m"
	}
	p.line("%s", s)
}

func (p *textPrinter) tag(word, colour string) string {
	s := fmt.Sprintf("%-7s", word)
	if p.colour {
		return "\x1b[" + colour + "m" + s + "\x1b[0m"
	}
	return s
}

func (p *textPrinter) check(c CheckReport) {
	v := verdict(c)
	colour := map[string]string{"PASS": green, "FAIL": red, "WARN": yellow, "INFO": cyan, "UNKNOWN": grey}[v]
	q := safetext.Printable
	p.line("  %s %-21s %s", p.tag(v, colour), q(c.ID), q(c.Value))
	if v == "PASS" || v == "UNKNOWN" {
		return
	}
	p.line("          why: %s", q(c.Why))
	for i, l := range strings.Split(c.Fix, "\n") {
		label := "fix:"
		if i > 0 {
			label = "    "
		}
		p.line("          %s %s", label, q(l))
	}
}

// slowHost is the client delay p99 above which the doctor says this host,
// not Redis or the network, is slow to hand replies to the process that
// waits for them (the intrinsic-latency check's threshold).
const slowHost = time.Millisecond

// hostDelay prints what timed the PINGs and this host's own delay beside
// them: with kernel timestamps the PING figure is the wire's, and a client
// on this host sees the client delay on top of it.
func (p *textPrinter) hostDelay(t TargetReport) {
	if t.Clock == string(wire.ClockUser) {
		p.line("  note: no kernel timestamps here; the PING figure includes this host's own delay")
		return
	}
	d := t.ClientDelay
	if d == nil || d.Count == 0 {
		return
	}
	p.line("  measured: %s", d.describe("client delay (reply in this host's kernel until read)"))
	if d.P99Seconds > slowHost.Seconds() {
		p.line("  %s this host is slow: replies waited %s (p99) in its kernel before being read. That is this host,",
			p.tag("WARN", yellow), fmtSeconds(d.P99Seconds))
		p.line("        not Redis or the network (the PING figure leaves it out); clients running here see it on top")
	}
}

func (s *LatencyStat) describe(what string) string {
	if s.Count == 0 {
		return fmt.Sprintf("%s: no answer (%d errors)", what, s.Errors)
	}
	return fmt.Sprintf("%s p50 %s, p99 %s, max %s (%d requests, %d errors)",
		what, fmtSeconds(s.P50Seconds), fmtSeconds(s.P99Seconds), fmtSeconds(s.MaxSeconds), s.Count, s.Errors)
}

func fmtSeconds(s float64) string {
	return fmt.Sprintf("%.3f ms", s*1e3)
}

// slowCauses says how many slow requests each cause explains, most first
// (docs/explain.md).
func slowCauses(causes []SlowCause) string {
	if len(causes) == 0 {
		return "none"
	}
	parts := make([]string, len(causes))
	for i, c := range causes {
		parts[i] = fmt.Sprintf("%s %d", c.Cause, c.Count)
	}
	return strings.Join(parts, ", ") + " (causes: docs/explain.md)"
}
