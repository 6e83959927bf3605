package report

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The x-axis labels of the step chart are distinct and formatted for the
// range: "0 10k 20k 30k", not "0 0 0 1 1 1" or "0 10,000 20,000".
func TestStepChartAxisLabels(t *testing.T) {
	xLabel := regexp.MustCompile(`<text x="[^"]*" y="386" text-anchor="middle">([^<]*)</text>`)
	for _, tc := range []struct {
		name     string
		achieved []float64
		want     []string
	}{
		{"nothing achieved", []float64{0}, nil},
		{"below one op/s", []float64{0.3, 0.7}, nil},
		{"a few ops/s", []float64{2, 7}, []string{"0", "2", "4", "6"}},
		{"hundreds", []float64{400, 800, 1187}, []string{"0", "200", "400", "600", "800", "1k"}},
		{"thousands", []float64{1000, 2000, 2999}, []string{"0", "500", "1k", "1.5k", "2k", "2.5k"}},
		{"tens of thousands", []float64{10000, 20000, 34000}, []string{"0", "10k", "20k", "30k"}},
		{"hundreds of thousands", []float64{100000, 250000}, []string{"0", "50k", "100k", "150k", "200k", "250k"}},
		{"millions", []float64{1.2e6, 2.4e6}, []string{"0", "500k", "1M", "1.5M", "2M"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := &Report{Target: "redis://x", StepPlan: &StepPlanReport{ObjectiveSeconds: 0.005}}
			for _, a := range tc.achieved {
				rep.Steps = append(rep.Steps, StepReport{Rate: a, Achieved: a, P50Ms: 0.3, P99Ms: 1, P999Ms: 2})
			}
			var svg bytes.Buffer
			if err := WriteStepChart(&svg, rep); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range xLabel.FindAllStringSubmatch(svg.String(), -1) {
				got = append(got, m[1])
			}
			if len(got) < 2 {
				t.Fatalf("x-axis labels %q: want at least two", got)
			}
			seen := map[string]bool{}
			for _, l := range got {
				if seen[l] {
					t.Fatalf("x-axis labels %q repeat %q", got, l)
				}
				seen[l] = true
			}
			if tc.want != nil && !slices.Equal(got, tc.want) {
				t.Fatalf("x-axis labels %s, want %s", strings.Join(got, " "), strings.Join(tc.want, " "))
			}
		})
	}
}
