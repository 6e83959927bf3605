package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// The bursts keep HdrHistogram, the prober's second histogram form, for
// what their reports promise: the full histogram in HdrHistogram's V2
// compressed encoding, three significant digits, readable by any
// HdrHistogram library and by later versions of the prober.
// testdata/report-dd8555e.json was written by the first version with
// reports (commit dd8555e, a burst of 2,000 requests at a real
// redis-server 7.0.15); it must read back as it was written.
func TestReportOfAnOlderVersionDecodes(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "report-dd8555e.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Schema != Schema {
		t.Fatalf("schema %q, this version writes %q: a report layout change needs a new schema name", rep.Schema, Schema)
	}
	if len(rep.Trials) != 1 || len(rep.Trials[0].Commands) != 2 {
		t.Fatalf("%d trials; want the one trial of get and set", len(rep.Trials))
	}
	tr := rep.Trials[0]
	for _, c := range append(tr.Commands, tr.Totals) {
		hr := c.Latency.Histogram
		if hr.Encoding != "HdrHistogram-V2-compressed-base64" || hr.Unit != "ns" {
			t.Errorf("%s: encoding %q unit %q", c.Command, hr.Encoding, hr.Unit)
		}
		h, err := DecodeHistogram(hr)
		if err != nil {
			t.Fatalf("%s: %v", c.Command, err)
		}
		if h.TotalCount() != c.Ops || c.Ops == 0 {
			t.Errorf("%s: the histogram holds %d samples, the report %d ops", c.Command, h.TotalCount(), c.Ops)
		}
		if h.SignificantFigures() != 3 {
			t.Errorf("%s: %d significant figures, the report promises 3", c.Command, h.SignificantFigures())
		}
		// The figures compare reads are the histogram's own, as this
		// version computes them from it.
		var ps []float64
		for _, p := range c.Latency.Percentiles {
			ps = append(ps, p.Percentile)
		}
		again := newLatencyReport(h, ps)
		got := map[float64]float64{}
		for _, p := range again.Percentiles {
			got[p.Percentile] = p.Ms
		}
		for _, p := range c.Latency.Percentiles {
			if got[p.Percentile] != p.Ms {
				t.Errorf("%s: p%v is %v ms from the histogram, %v ms in the report", c.Command, p.Percentile, got[p.Percentile], p.Ms)
			}
		}
		if again.AvgMs != c.Latency.AvgMs || again.MinMs != c.Latency.MinMs || again.MaxMs != c.Latency.MaxMs {
			t.Errorf("%s: avg/min/max %v/%v/%v from the histogram, %v/%v/%v in the report", c.Command,
				again.AvgMs, again.MinMs, again.MaxMs, c.Latency.AvgMs, c.Latency.MinMs, c.Latency.MaxMs)
		}
	}
}
