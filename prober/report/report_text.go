package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/redis-prober/redis-prober/internal/safetext"
	"github.com/redis-prober/redis-prober/prober/burst"
)

// WriteAllStats prints memtier_benchmark's "ALL STATS" table: ops/s,
// hits/s and misses/s where they apply, average and percentile latencies
// in milliseconds, and KB/s, per command and in total.
func WriteAllStats(w io.Writer, r *burst.Result, percentiles []float64) error {
	cols := []string{"Type", "Ops/sec", "Hits/sec", "Misses/sec", "Avg. Latency"}
	for _, p := range percentiles {
		cols = append(cols, "p"+strconv.FormatFloat(p, 'f', -1, 64)+" Latency")
	}
	cols = append(cols, "KB/sec")
	var b strings.Builder
	row := func(cells []string) {
		fmt.Fprintf(&b, "%-9s", cells[0])
		for _, c := range cells[1:] {
			fmt.Fprintf(&b, " %15s", c)
		}
		b.WriteString("\n")
	}
	width := 9 + 16*(len(cols)-1)
	b.WriteString("\nALL STATS\n" + strings.Repeat("=", width) + "\n")
	row(cols)
	b.WriteString(strings.Repeat("-", width) + "\n")
	secs := r.Elapsed.Seconds()
	perSec := func(n int64) string {
		n = max(n, 0) // a count is never negative, whatever a codec said
		if secs <= 0 {
			return "0.00"
		}
		return strconv.FormatFloat(float64(n)/secs, 'f', 2, 64)
	}
	line := func(name string, c *burst.CommandStats, hits bool) {
		cells := []string{name, perSec(c.Ops)}
		if hits {
			cells = append(cells, perSec(c.Hits), perSec(c.Misses))
		} else {
			cells = append(cells, "---", "---")
		}
		if c.Ops == 0 {
			for range len(percentiles) + 1 {
				cells = append(cells, "---")
			}
		} else {
			cells = append(cells, msText(c.Mean().Nanoseconds()))
			for _, p := range percentiles {
				cells = append(cells, msText(int64(c.Quantile(p/100))))
			}
		}
		kb := "0.00"
		if secs > 0 {
			kb = strconv.FormatFloat(float64(c.BytesOut+c.BytesIn)/1024/secs, 'f', 2, 64)
		}
		row(append(cells, kb))
	}
	anyHits := false
	for i, c := range r.Commands {
		hits := burst.CountsHits(r.Plan.Mix[i].Op)
		anyHits = anyHits || hits
		line(safetext.Printable(typeName(c.Name)), c, hits)
	}
	if r.Total != nil {
		line("Totals", r.Total, anyHits)
	}
	if r.Total != nil && (r.Total.Errors > 0 || r.Total.Timeouts > 0) {
		fmt.Fprintf(&b, "\n%d errors and %d timeouts among %d requests\n", max(r.Total.Errors, 0), max(r.Total.Timeouts, 0), max(r.Total.Ops, 0))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// typeName names a row as memtier does ("Sets", "Gets"), other commands
// by their name.
func typeName(cmd string) string {
	switch cmd {
	case "set":
		return "Sets"
	case "get":
		return "Gets"
	}
	return strings.ToUpper(cmd)
}

// msText formats nanoseconds as memtier's milliseconds with five decimals.
func msText(ns int64) string { return strconv.FormatFloat(float64(ns)/1e6, 'f', 5, 64) }
