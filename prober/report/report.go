package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/redis-prober/redis-prober/prober/burst"
)

// Schema names the JSON layout; a reader (compare) checks it.
const Schema = "redis-prober/burst-report/v1"

// Report is the JSON report of a one-shot burst or step-load. Figures live
// per trial (one trial today; repeated trials append to Trials), so a
// comparison can read the spread between trials as well as their values.
type Report struct {
	Schema      string          `json:"schema"`
	Tool        string          `json:"tool"`
	Target      string          `json:"target"`
	Start       time.Time       `json:"start"`
	End         time.Time       `json:"end"`
	Outcome     burst.Outcome   `json:"outcome"`
	Reason      string          `json:"reason"`
	Detail      string          `json:"detail,omitempty"`
	Plan        PlanReport      `json:"plan"`
	StepPlan    *StepPlanReport `json:"step_plan,omitempty"`
	Environment *Environment    `json:"environment,omitempty"`
	Trials      []TrialReport   `json:"trials"`
	Steps       []StepReport    `json:"steps,omitempty"`
	Capacity    *CapacityReport `json:"capacity,omitempty"`
	Cleanup     CleanupReport   `json:"cleanup"`
}

// PlanReport is the plan in plain units.
type PlanReport struct {
	Name            string           `json:"name"`
	Clients         int              `json:"clients"`
	Pipeline        int              `json:"pipeline"`
	Mix             []burst.MixEntry `json:"mix"`
	KeyPattern      string           `json:"key_pattern"`
	KeyMinimum      int64            `json:"key_minimum"`
	KeyMaximum      int64            `json:"key_maximum"`
	KeyStddev       float64          `json:"key_stddev,omitempty"`
	KeyMedian       float64          `json:"key_median,omitempty"`
	KeyZipfExp      float64          `json:"key_zipf_exp,omitempty"`
	DataSize        int              `json:"data_size"`
	DataSizeMax     int              `json:"data_size_max,omitempty"`
	Rate            float64          `json:"rate"`
	TestTimeSeconds float64          `json:"test_time_seconds"`
	Requests        int64            `json:"requests,omitempty"`
	WarmupSeconds   float64          `json:"warmup_seconds"`
	MaxBytes        int64            `json:"max_bytes"`
	TimeoutSeconds  float64          `json:"timeout_seconds"`
	KeyTTLSeconds   float64          `json:"key_ttl_seconds"`
	KeyPrefix       string           `json:"key_prefix"`
}

// StepPlanReport is the step-load search in plain units.
type StepPlanReport struct {
	Start            float64 `json:"start_rate"`
	Factor           float64 `json:"factor"`
	Precision        float64 `json:"precision"`
	MaxRate          float64 `json:"max_rate,omitempty"`
	StepSeconds      float64 `json:"step_seconds"`
	MaxSteps         int     `json:"max_steps"`             // 0: no fixed number
	MaxSeconds       float64 `json:"max_seconds,omitempty"` // the whole search's time bound
	ObjectiveSeconds float64 `json:"objective_p99_seconds"`
	MaxErrorRatio    float64 `json:"max_error_ratio"`
}

// TrialReport holds the figures of one run of the plan.
type TrialReport struct {
	Trial           int             `json:"trial"`
	Start           time.Time       `json:"start"`
	End             time.Time       `json:"end"`
	DurationSeconds float64         `json:"duration_seconds"`
	Outcome         burst.Outcome   `json:"outcome"`
	Reason          string          `json:"reason"`
	Bound           string          `json:"bound,omitempty"`
	BytesWritten    int64           `json:"bytes_written"`
	Totals          CommandReport   `json:"totals"`
	Commands        []CommandReport `json:"commands"`
	Client          ClientReport    `json:"client"`
}

// CommandReport holds one command's figures (or the totals).
type CommandReport struct {
	Command   string        `json:"command"`
	Ops       int64         `json:"ops"`
	OpsPerSec float64       `json:"ops_per_sec"`
	Hits      int64         `json:"hits"`
	Misses    int64         `json:"misses"`
	Errors    int64         `json:"errors"`
	Timeouts  int64         `json:"timeouts"`
	KBPerSec  float64       `json:"kb_per_sec"`
	Latency   LatencyReport `json:"latency"`
}

// LatencyReport is a latency distribution: summary figures in
// milliseconds and the full histogram.
type LatencyReport struct {
	AvgMs       float64            `json:"avg_ms"`
	MinMs       float64            `json:"min_ms"`
	MaxMs       float64            `json:"max_ms"`
	Percentiles []PercentileReport `json:"percentiles"`
	Histogram   HistogramReport    `json:"histogram"`
}

// PercentileReport is one percentile.
type PercentileReport struct {
	Percentile float64 `json:"percentile"`
	Ms         float64 `json:"ms"`
}

// HistogramReport is an HdrHistogram in its standard V2 compressed
// encoding (base64), readable by HdrHistogram tools in any language, with
// values in nanoseconds. It is the report's promise to the user's own
// tools: compare reads the percentiles beside it, not it. A tool on the
// Java or JavaScript port may read a percentile one sample's rank higher
// than the report: those take the ceiling of the rank, hdrhistogram-go
// (and the C library redis-benchmark links) the nearest.
type HistogramReport struct {
	Encoding string `json:"encoding"`
	Unit     string `json:"unit"`
	Data     string `json:"data"`
}

// StepReport is one step of a step-load search. A step cut short (the
// governor aborted it, or it failed) has no throughput or latency figures:
// they would be of a fraction of the step, not of its rate.
type StepReport struct {
	Rate     float64 `json:"rate"`
	Achieved float64 `json:"achieved_ops_per_sec,omitempty"`
	Passed   bool    `json:"passed"`
	Why      string  `json:"why,omitempty"`
	// Verdict is the step's verdict in the words of the terminal and the
	// Markdown report (StepVerdict).
	Verdict   string        `json:"verdict,omitempty"`
	Confirm   bool          `json:"confirm,omitempty"` // a missed rate run once more
	Knee      bool          `json:"knee,omitempty"`    // the step whose rate is the capacity
	Outcome   burst.Outcome `json:"outcome"`
	P50Ms     float64       `json:"p50_ms,omitempty"`
	P99Ms     float64       `json:"p99_ms,omitempty"`
	P999Ms    float64       `json:"p999_ms,omitempty"`
	ErrorRate float64       `json:"error_ratio"`
	Totals    CommandReport `json:"totals"`
	Client    ClientReport  `json:"client"`
}

// Cut reports whether the step ended before its time, so it has no
// figures (reports of earlier versions have no outcome: measured).
func (s *StepReport) Cut() bool {
	return s.Outcome != "" && s.Outcome != burst.OutcomeCompleted
}

// CapacityReport is the answer of a step-load search.
type CapacityReport struct {
	OpsPerSec        float64 `json:"ops_per_sec"`
	Rate             float64 `json:"rate"`
	ObjectiveSeconds float64 `json:"objective_p99_seconds"`
	Stop             string  `json:"stop"`
	// StopReason is Stop in the words of the terminal and the Markdown
	// report (StopText).
	StopReason string `json:"stop_reason,omitempty"`
	// KneePassed of KneeTries runs at the knee's rate met the objective;
	// fewer than all makes the knee unsteady.
	KneePassed int `json:"knee_passed,omitempty"`
	KneeTries  int `json:"knee_tries,omitempty"`
	// LowerBound: the last step still met the objective, so the search
	// stopped at its own ceiling (Stop) and the server can take at least
	// OpsPerSec; its limit was not found.
	LowerBound bool `json:"capacity_is_lower_bound"`
	// ClientBound is the lowest rate this client could not drive, when it
	// was the lowest miss of the search: nothing is said of Redis above it.
	ClientBound float64 `json:"client_bound_rate,omitempty"`
}

// CleanupReport says what the burst left: nothing, unless Error is set.
type CleanupReport struct {
	KeysWritten int64  `json:"keys_written"`
	KeysDeleted int64  `json:"keys_unlinked"`
	Error       string `json:"error,omitempty"`
}

// Percentiles are always in the report, beside the ones asked for.
var Percentiles = []float64{50, 90, 95, 99, 99.9, 99.99, 100}

// NewPlanReport describes plan.
func NewPlanReport(p burst.Plan) PlanReport {
	return PlanReport{
		Name: p.Name, Clients: p.Clients, Pipeline: p.Pipeline, Mix: p.Mix,
		KeyPattern: string(p.Keys.SetPattern) + ":" + string(p.Keys.GetPattern),
		KeyMinimum: p.Keys.Min, KeyMaximum: p.Keys.Max, KeyStddev: p.Keys.Stddev, KeyMedian: p.Keys.Median,
		KeyZipfExp: p.Keys.ZipfExp, DataSize: p.DataSize, DataSizeMax: p.DataMax, Rate: p.Rate,
		TestTimeSeconds: p.TestTime.Seconds(), Requests: p.Requests, WarmupSeconds: p.Warmup.Seconds(),
		MaxBytes: p.MaxBytes, TimeoutSeconds: p.Timeout.Seconds(), KeyTTLSeconds: p.KeyTTL.Seconds(),
		KeyPrefix: p.Namespace.Prefix,
	}
}

// NewCommandReport summarises one command over elapsed.
func NewCommandReport(c *burst.CommandStats, elapsed time.Duration, percentiles []float64) CommandReport {
	secs := elapsed.Seconds()
	rate := func(n int64) float64 {
		if secs <= 0 {
			return 0
		}
		return float64(n) / secs
	}
	// Counts are never negative in a report, whatever a reply made of
	// them (a hostile MGET reply once gave hits = -2000).
	ops, hits, misses := max(c.Ops, 0), max(c.Hits, 0), max(c.Misses, 0)
	r := CommandReport{Command: c.Name, Ops: ops, OpsPerSec: rate(ops), Hits: hits, Misses: misses,
		Errors: max(c.Errors, 0), Timeouts: max(c.Timeouts, 0), KBPerSec: rate(max(c.BytesOut, 0)+max(c.BytesIn, 0)) / 1024}
	r.Latency = newLatencyReport(c.Hist, percentiles)
	return r
}

func ms(ns int64) float64 { return math.Round(float64(ns)/1e3) / 1e3 }

func newLatencyReport(h *hdrhistogram.Histogram, extra []float64) LatencyReport {
	lr := LatencyReport{Histogram: HistogramReport{Encoding: "HdrHistogram-V2-compressed-base64", Unit: "ns"}}
	if h == nil {
		return lr
	}
	if h.TotalCount() > 0 {
		lr.AvgMs, lr.MinMs, lr.MaxMs = ms(int64(h.Mean())), ms(h.Min()), ms(h.Max())
	}
	seen := map[float64]bool{}
	for _, list := range [][]float64{Percentiles, extra} {
		for _, p := range list {
			if seen[p] {
				continue
			}
			seen[p] = true
			v := int64(0)
			if h.TotalCount() > 0 {
				v = h.ValueAtPercentile(p)
			}
			lr.Percentiles = append(lr.Percentiles, PercentileReport{Percentile: p, Ms: ms(v)})
		}
	}
	if b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase); err == nil {
		lr.Histogram.Data = string(b) // Encode's output is base64 already
	}
	return lr
}

// NewTrialReport turns a burst result into trial n.
func NewTrialReport(n int, r *burst.Result, percentiles []float64) TrialReport {
	t := TrialReport{Trial: n, Start: r.MeasureStart, End: r.End, DurationSeconds: r.Elapsed.Seconds(),
		Outcome: r.Outcome, Reason: r.Reason, Bound: r.Bound, BytesWritten: r.BytesWritten, Client: NewClientReport(r)}
	if r.Total != nil {
		t.Totals = NewCommandReport(r.Total, r.Elapsed, percentiles)
	}
	for _, c := range r.Commands {
		t.Commands = append(t.Commands, NewCommandReport(c, r.Elapsed, percentiles))
	}
	if t.Commands == nil {
		t.Commands = []CommandReport{}
	}
	return t
}

// NewBurstReport builds the report of one burst.
func NewBurstReport(target string, r *burst.Result, env *Environment, percentiles []float64) *Report {
	rep := &Report{Schema: Schema, Tool: "redis-prober burst", Target: target, Start: r.Start, End: r.End,
		Outcome: r.Outcome, Reason: r.Reason, Detail: r.Detail, Plan: NewPlanReport(r.Plan), Environment: env,
		Trials:  []TrialReport{},
		Cleanup: CleanupReport{KeysWritten: r.KeysWritten, KeysDeleted: r.KeysDeleted, Error: r.CleanupError}}
	if r.Outcome != burst.OutcomeSkipped && r.Outcome != burst.OutcomeFailed {
		rep.Trials = append(rep.Trials, NewTrialReport(1, r, percentiles))
	}
	return rep
}

// NewStepReport builds the report of a step-load search.
func NewStepReport(target string, s *burst.StepResult, sp burst.StepPlan, env *Environment, percentiles []float64) *Report {
	rep := NewBurstReport(target, &s.Final, env, percentiles)
	rep.StepPlan = &StepPlanReport{Start: sp.Start, Factor: sp.Factor, Precision: sp.Precision, MaxRate: sp.MaxRate,
		StepSeconds: sp.StepTime.Seconds(), MaxSteps: sp.MaxSteps, MaxSeconds: sp.MaxTime.Seconds(), ObjectiveSeconds: sp.Objective.Seconds(),
		MaxErrorRatio: sp.MaxErrorRatio}
	for _, row := range s.Steps {
		r := row.Result
		sr := StepReport{Rate: row.Rate, Passed: row.Passed, Why: row.Why, Outcome: r.Outcome,
			Verdict: StepVerdict(row.Passed, row.Why, row.Confirm, row.Knee), Confirm: row.Confirm, Knee: row.Knee,
			Client: NewClientReport(&r)}
		if r.Total != nil {
			sr.Totals = NewCommandReport(r.Total, r.Elapsed, percentiles)
			if r.Total.Ops > 0 {
				sr.ErrorRate = float64(r.Total.Errors+r.Total.Timeouts) / float64(r.Total.Ops)
			}
			if !row.Cut() {
				sr.Achieved = row.Achieved
				sr.P50Ms, sr.P99Ms, sr.P999Ms = ms(int64(r.Total.Quantile(0.5))), ms(int64(r.Total.Quantile(0.99))), ms(int64(r.Total.Quantile(0.999)))
			}
		}
		rep.Steps = append(rep.Steps, sr)
	}
	rep.Capacity = &CapacityReport{OpsPerSec: s.Capacity, Rate: s.Rate, ObjectiveSeconds: sp.Objective.Seconds(), Stop: s.Stop,
		StopReason: StopText(s.Stop), LowerBound: s.LowerBound, ClientBound: s.ClientBound}
	rep.Capacity.KneePassed, rep.Capacity.KneeTries = s.KneeTries()
	return rep
}

// WriteJSON writes the report, indented.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	return nil
}

// DecodeHistogram reads a HistogramReport back into a histogram.
func DecodeHistogram(h HistogramReport) (*hdrhistogram.Histogram, error) {
	hist, err := hdrhistogram.Decode([]byte(h.Data))
	if err != nil {
		return nil, fmt.Errorf("decode histogram: %w", err)
	}
	return hist, nil
}
