//go:build unix

package burstcli

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/prober/burst"
	"github.com/redis-prober/redis-prober/prober/report"
)

// TestReportFilesAreReadable: the JSON, Markdown and SVG reports hold no
// secret and are written 0644 less the umask (os.CreateTemp made them
// 0600).
func TestReportFilesAreReadable(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := t.TempDir()
	rep := report.NewStepReport("127.0.0.1:6379", unsteadySearch(), burst.StepPlan{Start: 1000, Factor: 2, Objective: 5 * time.Millisecond}, nil, []float64{50})
	md := filepath.Join(dir, "capacity.md")
	if err := writeMarkdownReport(md, rep); err != nil {
		t.Fatal(err)
	}
	js := filepath.Join(dir, "capacity.json")
	if err := writeFileAtomic(js, rep.WriteJSON); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{md, js, filepath.Join(dir, "capacity.svg")} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v, want 0644", filepath.Base(p), fi.Mode().Perm())
		}
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
