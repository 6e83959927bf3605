// Package alerts renders the generated rule file of alerts/: the burn-rate
// rules of burnrate.yml, one rule group per latency objective, from the
// template burnrate.yml.tmpl. The other rule files are written by hand.
package alerts

//go:generate go run ./cmd/generate -out burnrate.yml

import (
	_ "embed"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/redis-prober/redis-prober/prober"
)

//go:embed burnrate.yml.tmpl
var burnRateTemplate string

// BurnRateFile is the generated file, in alerts/.
const BurnRateFile = "burnrate.yml"

// DefaultObjectives are the objectives the committed burnrate.yml serves:
// the classic bucket boundaries of redis_prober_latency_seconds from 1 ms
// to 100 ms, the default --probe.objective (5 ms) among them.
var DefaultObjectives = []time.Duration{
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond,
	10 * time.Millisecond, 25 * time.Millisecond, 100 * time.Millisecond,
}

// burnRateWindows are the alert windows above 5m (the 5m ratio reads the
// raw histograms; these average the recorded 5m rates).
var burnRateWindows = []string{"30m", "1h", "6h", "3d"}

type objectiveData struct {
	Name    string // "5ms" (ASCII: "50us"), in the group name
	Seconds string // "0.005": the bound, the objective label and the le
	Classic bool   // a classic bucket boundary: the rules read le=Seconds too
}

type windowData struct{ Name, Range string }

// RenderBurnRate renders burnrate.yml for the given objectives: one rule
// group each, in the order given. An objective that is not a classic bucket
// boundary of redis_prober_latency_seconds is measured on native
// histograms only.
func RenderBurnRate(objectives []time.Duration) ([]byte, error) {
	if len(objectives) == 0 {
		return nil, fmt.Errorf("no objective")
	}
	data := struct {
		Objectives []objectiveData
		Windows    []windowData
		Boundaries string
	}{}
	seen := map[time.Duration]bool{}
	for _, o := range objectives {
		if o <= 0 {
			return nil, fmt.Errorf("objective %v: must be above 0", o)
		}
		if o%time.Microsecond != 0 {
			return nil, fmt.Errorf("objective %v: whole microseconds only", o)
		}
		if seen[o] {
			return nil, fmt.Errorf("objective %v given twice", o)
		}
		seen[o] = true
		secs := seconds(o.Seconds())
		data.Objectives = append(data.Objectives, objectiveData{
			Name: strings.ReplaceAll(o.String(), "µ", "u"), Seconds: secs, Classic: classicBoundary(o.Seconds()),
		})
	}
	for _, w := range burnRateWindows {
		data.Windows = append(data.Windows, windowData{Name: w, Range: "[" + w + "]"})
	}
	var bounds []string
	for _, b := range prober.LatencyBuckets {
		if classicBoundary(b) {
			bounds = append(bounds, seconds(b))
		}
	}
	data.Boundaries = strings.Join(bounds, ", ")

	tmpl, err := template.New("burnrate.yml.tmpl").Delims("[[", "]]").Option("missingkey=error").Parse(burnRateTemplate)
	if err != nil {
		return nil, fmt.Errorf("burnrate.yml.tmpl: %w", err)
	}
	var b strings.Builder
	if err := tmpl.Execute(&b, data); err != nil {
		return nil, fmt.Errorf("burnrate.yml.tmpl: %w", err)
	}
	return []byte(b.String()), nil
}

// seconds writes a bound as PromQL and the le label write it: 0.005.
func seconds(s float64) string { return strconv.FormatFloat(s, 'f', -1, 64) }

// classicBoundary says whether s is a classic bucket boundary whose le
// label is written the same by client_golang and by Prometheus 2.x and 3.x
// (a decimal fraction below 1: 3.x writes le="1" as "1.0", client_golang
// writes 0.00005 as "5e-05").
func classicBoundary(s float64) bool {
	return slices.Contains(prober.LatencyBuckets, s) && s < 1 &&
		strconv.FormatFloat(s, 'g', -1, 64) == seconds(s)
}

// ParseObjectives reads a comma-separated list of Go durations ("1ms,5ms").
func ParseObjectives(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		d, err := time.ParseDuration(f)
		if err != nil {
			return nil, fmt.Errorf("objective %q: %w", f, err)
		}
		out = append(out, d)
	}
	return out, nil
}
