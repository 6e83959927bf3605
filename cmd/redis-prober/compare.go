package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/alecthomas/kingpin/v2"

	"github.com/redis-prober/redis-prober/internal/smallfile"
	"github.com/redis-prober/redis-prober/prober/compare"
	"github.com/redis-prober/redis-prober/prober/report"
)

// errRegressed is exit code 1 of compare: the comparison worked and found
// a regression.
var errRegressed = errors.New("regressed")

// addCompareCommand declares `compare BEFORE.json AFTER.json`.
func addCompareCommand(cmd *kingpin.CmdClause) command {
	beforeFile := cmd.Arg("before", "Burst report before the change (redis-prober burst --json-out-file).").Required().String()
	afterFile := cmd.Arg("after", "Burst report after the change.").Required().String()
	threshold := typedFlag(cmd, "threshold", "Smallest relative change that counts as a regression or an improvement (10% or 0.1).", "10%", parseFraction)
	alpha := floatFlag(cmd, "alpha", "Chance of a false alarm over all figures of the comparison (Bonferroni), above 0 and below 0.5.", "0.05")
	output := cmd.Flag("output", "Output format: text, json or markdown (to paste into a change ticket).").Default("text").Enum("text", "json", "markdown")

	return func(ctx context.Context, env *cliEnv) error {
		if *alpha <= 0 || *alpha >= 0.5 || math.IsNaN(*alpha) {
			return usagef("--alpha: %v must be above 0 and below 0.5", *alpha)
		}
		before, err := readReport(*beforeFile)
		if err != nil {
			return err
		}
		after, err := readReport(*afterFile)
		if err != nil {
			return err
		}
		c, err := compare.Compare(ctx, before, after, *beforeFile, *afterFile, compare.Options{Threshold: *threshold, Alpha: *alpha})
		if ctx.Err() != nil {
			// SIGINT/SIGTERM: no verdict, and not exit 1 ("regressed").
			return usagef("compare interrupted: %v", ctx.Err())
		}
		if err != nil {
			return usagef("%v", err)
		}
		switch *output {
		case "json":
			err = compare.WriteJSON(env.stdout, c)
		case "markdown":
			err = compare.WriteMarkdown(env.stdout, c)
		default:
			err = compare.WriteText(env.stdout, c)
		}
		if err != nil {
			return err
		}
		switch c.Verdict {
		case compare.OverallRegressed:
			return fmt.Errorf("%w: see the verdicts above", errRegressed)
		case compare.OverallInconclusive:
			// Exit 3 without an error line: the output ends with the verdict
			// and what the trials could have detected.
			return compare.ExitInconclusive
		}
		return nil
	}
}

// parseFraction reads "10%", "10" (a percentage) or "0.1".
func parseFraction(s string) (float64, error) {
	t := strings.TrimSpace(s)
	percent := strings.HasSuffix(t, "%")
	f, err := strconv.ParseFloat(strings.TrimSuffix(t, "%"), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a percentage (examples: 10%%, 0.1)", s)
	}
	if percent || f >= 1 {
		f /= 100
	}
	if f < 0 || f >= 10 {
		return 0, fmt.Errorf("%q must be from 0%% to 1000%%", s)
	}
	return f, nil
}

// maxReportBytes bounds a report file compare reads. A real report (a
// dozen commands, ten trials, a histogram per command) is well under 1 MiB;
// 64 MiB leaves room for thousands of commands while a wrong path
// (/dev/zero, a FIFO, a huge file) is refused at once instead of filling
// memory or hanging.
const maxReportBytes = 64 << 20

// readReport reads a burst report; any fault is bad input (exit 2).
func readReport(path string) (*report.Report, error) {
	b, err := smallfile.Read(path, maxReportBytes)
	if err != nil {
		return nil, usagef("cannot read report: %v", err)
	}
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, usagef("%s is not a burst report (JSON): %v", path, err)
	}
	if r.Schema == "" {
		return nil, usagef("%s is not a redis-prober burst report (no schema field)", path)
	}
	return &r, nil
}
