package burstcli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis-prober/redis-prober/prober/burst"
	"github.com/redis-prober/redis-prober/prober/report"
)

func writeStepTable(w io.Writer, sr *burst.StepResult) {
	fmt.Fprintf(w, "\nSTEP LOAD (latency by the %s clock; lag: this client's own lateness, not charged to Redis)\n%6s %14s %14s %10s %10s %10s %10s %8s  %s\n",
		stepClock(sr), "step", "target ops/s", "achieved", "p50 ms", "p99 ms", "p99.9 ms", "lag p99 ms", "errors", "verdict")
	for i, s := range sr.Steps {
		r := s.Result
		var p50, p99, p999 float64
		var errs int64
		if r.Total != nil {
			p50, p99, p999 = msOf(r.Total.Quantile(0.5)), msOf(r.Total.Quantile(0.99)), msOf(r.Total.Quantile(0.999))
			errs = r.Total.Errors + r.Total.Timeouts
		}
		figures := fmt.Sprintf("%14.0f %10.3f %10.3f %10.3f %10.3f", s.Achieved, p50, p99, p999, msOf(r.LagQuantile(0.99)))
		if s.Cut() {
			// Figures of a fraction of the step are not the rate's.
			figures = fmt.Sprintf("%14s %10s %10s %10s %10s", report.NoFigure, report.NoFigure, report.NoFigure, report.NoFigure, report.NoFigure)
		}
		fmt.Fprintf(w, "%6d %14.0f %s %8d  %s\n", i+1, s.Rate, figures, errs, report.StepVerdict(s.Passed, s.Why, s.Confirm, s.Knee))
	}
	knee := ""
	if u := report.UnsteadyText(sr.KneeTries()); u != "" {
		knee = " (" + u + ")"
	}
	stop := report.StopText(sr.Stop)
	switch {
	case sr.ClientBound > 0:
		fmt.Fprintf(w, "\nClient-bound at %.0f ops/s: this client could not drive that rate (it sent late and fell short while Redis met the objective); "+
			"Redis took at least %.0f ops/s within the objective, its knee is above. Use more --clients, a pipeline, or a bigger host.\n",
			sr.ClientBound, sr.Capacity)
	case sr.LowerBound:
		fmt.Fprintf(w, "\nCapacity: at least %.0f ops/s met the objective%s; the search stopped on its own bound (%s), not at the server's knee\n",
			sr.Capacity, knee, stop)
	default:
		fmt.Fprintf(w, "\nCapacity: %.0f ops/s met the objective, the knee%s (stopped: %s)\n", sr.Capacity, knee, stop)
	}
}

// stepClock is the clock that timed the search's steps.
func stepClock(sr *burst.StepResult) string {
	clock := ""
	for i := range sr.Steps {
		c := sr.Steps[i].Result.Clock()
		if c == "mixed" || (clock != "" && c != clock) {
			return "mixed"
		}
		clock = c
	}
	if clock == "" {
		return "user"
	}
	return clock
}

func msOf(d time.Duration) float64 { return float64(d) / 1e6 }

// writeMarkdownReport writes FILE.md and FILE.svg beside it.
func writeMarkdownReport(path string, rep *report.Report) error {
	chart := strings.TrimSuffix(path, filepath.Ext(path)) + ".svg"
	if err := writeFileAtomic(chart, func(w io.Writer) error { return report.WriteStepChart(w, rep) }); err != nil {
		return err
	}
	return writeFileAtomic(path, func(w io.Writer) error { return report.WriteStepMarkdown(w, rep, filepath.Base(chart)) })
}

// writeFileAtomic writes through a temporary file, so a reader never sees
// half a report.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	tmp, err := createTemp(filepath.Dir(path), filepath.Base(path))
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// reportMode is the mode of the reports and charts, less the umask: they
// hold no secret (no password, no value of a key), so they are readable as
// any file the user writes, not 0600 as os.CreateTemp makes them.
const reportMode = 0o644

// createTemp creates a new file beside the one it will replace, with
// reportMode and a name no other writer has.
func createTemp(dir, base string) (*os.File, error) {
	for {
		name := filepath.Join(dir, fmt.Sprintf(".%s.%d", base, rand.Uint32()))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, reportMode)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
}
