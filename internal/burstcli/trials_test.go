package burstcli

import (
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/redis-prober/redis-prober/prober/burst"
)

// The trial line calls a client that fell short of its rate client-bound,
// one that delivered it late behind its schedule, and one on time neither.
func TestTrialLineSaysHowTheClientKeptItsSchedule(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  int64         // over 4 s at 2,000 ops/s
		lag  time.Duration // every request's schedule lag
		want string        // "" when the line names neither
	}{
		{"on time", 8000, 100 * time.Microsecond, ""},
		{"late", 8000, 3 * time.Millisecond, "behind its schedule"},
		{"short", 4000, 3 * time.Millisecond, "client-bound: it delivered 50% of its rate"},
		{"short but prompt", 4000, 100 * time.Microsecond, "client-bound: it delivered 50% of its rate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lat := hdrhistogram.New(100, int64(time.Minute), 3)
			lag := hdrhistogram.New(100, int64(time.Minute), 3)
			for range tc.ops {
				_ = lat.RecordValue(int64(50 * time.Microsecond))
				_ = lag.RecordValue(int64(tc.lag))
			}
			r := &burst.Result{Plan: burst.Plan{Rate: 2000}, Outcome: burst.OutcomeCompleted, Elapsed: 4 * time.Second,
				Total: &burst.CommandStats{Ops: tc.ops, Hist: lat}, Lag: lag, Stamped: tc.ops}
			line := trialLine(1, 1, r)
			for _, w := range []string{"client-bound", "behind its schedule"} {
				if got, want := strings.Contains(line, w), tc.want != "" && strings.Contains(tc.want, w); got != want {
					t.Errorf("%q in the line: %v, want %v: %s", w, got, want, line)
				}
			}
			if tc.want != "" && !strings.Contains(line, tc.want) {
				t.Errorf("line %q lacks %q", line, tc.want)
			}
		})
	}
}
