package compare

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/prober/report"
)

// manyCommands is a report of n trials of count distinct commands.
func manyCommands(trials, count int, shift int) *report.Report {
	rep := synthReport(trials, shift, "", 1)
	for i := range rep.Trials {
		cmds := make([]report.CommandReport, count)
		for j := range cmds {
			k := noise[(i+j+shift)%len(noise)]
			cmds[j] = synthCommand(fmt.Sprintf("cmd%05d", j), fig{0.1 * k, 0.5 * k, 1 * k, 100 * k})
		}
		rep.Trials[i].Commands = cmds
	}
	return rep
}

func TestCompareManyCommandsIsLinear(t *testing.T) {
	// The quadratic scan took over a minute of CPU for 20,000 commands;
	// the deadline is generous, not a benchmark.
	before, after := manyCommands(3, 20000, 0), manyCommands(3, 20000, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Compare(ctx, before, after, "b", "a", defaultOpts)
	if err != nil {
		t.Fatalf("Compare: %v", err)
	}
	if want := (20000 + 1) * len(figures); len(c.Rows) != want {
		t.Errorf("%d rows, want %d", len(c.Rows), want)
	}
}

func TestCompareStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Compare(ctx, manyCommands(3, 1000, 0), manyCommands(3, 1000, 1), "b", "a", defaultOpts)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestCompareHugeFiguresStayFinite(t *testing.T) {
	huge := func(v float64, spread bool) *report.Report {
		rep := synthReport(5, 0, "", 1)
		for i := range rep.Trials {
			k := 1.0
			if spread {
				k = noise[i] / 1.02 // stay at or below v
			}
			for _, c := range append([]*report.CommandReport{&rep.Trials[i].Totals}, ptrs(rep.Trials[i].Commands)...) {
				c.OpsPerSec = v * k
				for j := range c.Latency.Percentiles {
					c.Latency.Percentiles[j].Ms = v * k
				}
			}
		}
		return rep
	}
	for _, tc := range []struct {
		name          string
		before, after *report.Report
		regressed     bool
	}{
		{"1.7e308 against itself", huge(1.7e308, false), huge(1.7e308, false), false},
		{"max float against itself, with spread", huge(math.MaxFloat64, true), huge(math.MaxFloat64, true), false},
		{"tiny to max float", huge(1e-300, false), huge(math.MaxFloat64, false), true},
		{"max float to tiny", huge(math.MaxFloat64, false), huge(1e-300, false), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Compare(context.Background(), tc.before, tc.after, "b", "a", defaultOpts)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := WriteJSON(&b, c); err != nil {
				t.Fatalf("JSON: %v", err)
			}
			if !json.Valid(b.Bytes()) {
				t.Fatal("invalid JSON")
			}
			if c.Regressed != tc.regressed {
				t.Errorf("regressed = %v, want %v", c.Regressed, tc.regressed)
			}
		})
	}
}

func ptrs(cs []report.CommandReport) []*report.CommandReport {
	out := make([]*report.CommandReport, len(cs))
	for i := range cs {
		out[i] = &cs[i]
	}
	return out
}
