package burstcli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis-prober/redis-prober/prober/burst"
	"github.com/redis-prober/redis-prober/prober/report"
)

func writeStepTable(w io.Writer, sr *burst.StepResult) {
	fmt.Fprintf(w, "\nSTEP LOAD\n%6s %14s %14s %10s %10s %10s %8s  %s\n",
		"step", "target ops/s", "achieved", "p50 ms", "p99 ms", "p99.9 ms", "errors", "verdict")
	for i, s := range sr.Steps {
		r := s.Result
		var p50, p99, p999 float64
		var errs int64
		if r.Total != nil {
			p50, p99, p999 = msOf(r.Total.Quantile(0.5)), msOf(r.Total.Quantile(0.99)), msOf(r.Total.Quantile(0.999))
			errs = r.Total.Errors + r.Total.Timeouts
		}
		verdict := "met"
		if !s.Passed {
			verdict = "failed: " + s.Why
		}
		fmt.Fprintf(w, "%6d %14.0f %14.0f %10.3f %10.3f %10.3f %8d  %s\n", i+1, s.Rate, s.Achieved, p50, p99, p999, errs, verdict)
	}
	if sr.LowerBound {
		fmt.Fprintf(w, "\nCapacity: at least %.0f ops/s met the objective; every step did, so this is the ramp's ceiling, not the server's (stopped: %s)\n",
			sr.Capacity, sr.Stop)
		return
	}
	fmt.Fprintf(w, "\nCapacity: %.0f ops/s met the objective (stopped: %s)\n", sr.Capacity, sr.Stop)
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
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
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
