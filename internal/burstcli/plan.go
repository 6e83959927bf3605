// Package burstcli is what `redis-prober burst` and run's periodic bursts
// do between their flags (or a plan of the config file) and prober/burst:
// the values made into a plan, its guards and a step-load search (with
// errors that name the flag or the plan's field), the one-shot command's
// run (trials, step-load, progress bar, the ALL STATS and step tables, the
// JSON and Markdown reports), and the periodic bursts' engine config. The
// flags themselves are declared in cmd/redis-prober.
package burstcli

import (
	"errors"
	"math"
	"strings"
	"time"

	"github.com/redis-prober/redis-prober/config"
	"github.com/redis-prober/redis-prober/internal/bytesize"
	"github.com/redis-prober/redis-prober/internal/usage"
	"github.com/redis-prober/redis-prober/prober"
	"github.com/redis-prober/redis-prober/prober/burst"
)

// PlanFlags are the values that shape a burst: the one-shot command's
// flags (memtier_benchmark's names: --clients, --ratio, ...), or a plan of
// the config file (burst_plans:) with the flags given over it.
type PlanFlags struct {
	Prefix string
	// Names says how an error names the setting of a field (the name of
	// its flag without a prefix, as burst.FieldError gives it): the flag,
	// or the plan's field in the config file. Nil: --<Prefix><field>.
	Names                             func(field string) string
	Clients, Pipeline                 int
	Ratio, Commands                   string
	DataSize                          int
	DataSizeRange                     string
	KeyMin, KeyMax                    int64
	KeyPattern                        string
	KeyStddev, KeyMedian, KeyZipfExp  float64
	TestTime                          time.Duration
	Requests                          int64
	Rate                              float64
	Warmup                            time.Duration
	MaxBytes                          int64
	Timeout, AbortP99                 time.Duration
	MaxErrors, Headroom, MaxServerOps float64
	AllowReplica                      bool
}

func (f *PlanFlags) name(field string) string { return nameOf(f.Names, f.Prefix, field) }

func nameOf(names func(string) string, prefix, field string) string {
	if names != nil {
		return names(field)
	}
	return "--" + prefix + field
}

// Values are the values of a plan of the config file.
func Values(p config.BurstPlan) (PlanFlags, StepFlags) {
	s := p.StepSearch
	return PlanFlags{
			Clients: p.Clients, Pipeline: p.Pipeline, Ratio: p.Ratio, Commands: p.Commands,
			DataSize: int(p.DataSize), DataSizeRange: p.DataSizeRange,
			KeyMin: p.Keys.Minimum, KeyMax: p.Keys.Maximum, KeyPattern: p.Keys.Pattern,
			KeyStddev: p.Keys.Stddev, KeyMedian: p.Keys.Median, KeyZipfExp: p.Keys.ZipfExp,
			TestTime: time.Duration(p.TestTime), Requests: p.Requests, Rate: p.Rate, Warmup: time.Duration(p.Warmup),
			MaxBytes: int64(p.Bounds.MaxBytes), Timeout: time.Duration(p.Timeout), AbortP99: time.Duration(p.Bounds.AbortP99),
			MaxErrors: p.Bounds.MaxErrors, Headroom: p.Bounds.MemoryHeadroom, MaxServerOps: p.Bounds.MaxServerOps,
			AllowReplica: p.Bounds.AllowReplica,
		}, StepFlags{
			Start: s.Start, Factor: s.Factor, Precision: s.Precision, MaxRate: s.MaxRate,
			Duration: time.Duration(s.Duration), MaxTime: time.Duration(s.MaxTime), MaxSteps: s.MaxSteps,
			Objective: time.Duration(s.Objective), MaxErrors: s.MaxErrors,
		}
}

// Plan validates the flags into a plan and guards.
func (f *PlanFlags) Plan(name string, ns prober.Namespace, limits burst.Limits) (burst.Plan, burst.Guards, error) {
	var p burst.Plan
	var err error
	p.Name, p.Namespace = name, ns
	p.Clients, p.Pipeline = f.Clients, f.Pipeline
	if f.Commands != "" {
		if p.Mix, err = burst.ParseMix(f.Commands); err != nil {
			return p, burst.Guards{}, usage.Errorf("%s: %v", f.name("commands"), err)
		}
	} else if p.Mix, err = burst.ParseRatio(f.Ratio); err != nil {
		return p, burst.Guards{}, usage.Errorf("%s: %v", f.name("ratio"), err)
	}
	p.DataSize = f.DataSize
	if r := f.DataSizeRange; r != "" {
		lo, hi, ok := strings.Cut(r, "-")
		a, err1 := bytesize.Parse(lo)
		b, err2 := bytesize.Parse(hi)
		if !ok || err1 != nil || err2 != nil || a < 1 || b < a || b > math.MaxInt32 {
			return p, burst.Guards{}, usage.Errorf("%s: %q is not MIN-MAX sizes (such as 32-1024 or 1KiB-4KiB)", f.name("data-size-range"), r)
		}
		p.DataSize, p.DataMax = int(a), int(b)
	}
	set, get, err := burst.ParseKeyPattern(f.KeyPattern)
	if err != nil {
		return p, burst.Guards{}, usage.Errorf("%s: %v", f.name("key-pattern"), err)
	}
	p.Keys = burst.KeySpec{SetPattern: set, GetPattern: get, Min: f.KeyMin, Max: f.KeyMax,
		Stddev: f.KeyStddev, Median: f.KeyMedian, ZipfExp: f.KeyZipfExp}
	p.TestTime, p.Warmup, p.Rate = f.TestTime, f.Warmup, f.Rate
	if f.Requests < 0 {
		return p, burst.Guards{}, usage.Errorf("%s: must not be negative", f.name("requests"))
	}
	p.Requests = f.Requests * int64(max(p.Clients, 0))
	p.MaxBytes, p.Timeout = f.MaxBytes, f.Timeout
	p.KeyTTL = p.Duration() + max(time.Minute, p.Duration())
	if err := p.Validate(limits); err != nil {
		return p, burst.Guards{}, f.fieldUsage(err)
	}
	g := burst.Guards{AllowReplica: f.AllowReplica, MemoryHeadroom: f.Headroom, MaxServerOps: f.MaxServerOps,
		AbortP99: f.AbortP99, Window: time.Second, ErrorBudget: f.MaxErrors, CheckInterval: time.Second}
	if err := g.Validate(); err != nil {
		return p, g, f.fieldUsage(err)
	}
	return p, g, nil
}

// fieldUsage turns a validation error into a usage error naming the flag
// or field.
func (f *PlanFlags) fieldUsage(err error) error {
	var fe *burst.FieldError
	if errors.As(err, &fe) {
		field := fe.Field
		if field == "commands" && f.Commands == "" {
			field = "ratio" // the mix came from the ratio
		}
		return usage.Errorf("%s: %v", f.name(field), fe.Err)
	}
	return usage.Errorf("%v", err)
}

// StepFlags are the values of the flags that shape a step-load capacity
// search.
type StepFlags struct {
	Prefix string
	// Names is as PlanFlags.Names.
	Names                             func(field string) string
	Start, Factor, Precision, MaxRate float64
	Duration, MaxTime                 time.Duration
	MaxSteps                          int
	Objective                         time.Duration
	MaxErrors                         float64
}

func (f *StepFlags) name(field string) string { return nameOf(f.Names, f.Prefix, field) }

// Plan validates the flags into a search bounded, in all, by the longest
// test time of limits.
func (f *StepFlags) Plan(limits burst.Limits, warmup time.Duration) (burst.StepPlan, error) {
	sp := burst.StepPlan{Start: f.Start, Factor: f.Factor, Precision: f.Precision, MaxRate: f.MaxRate, StepTime: f.Duration,
		MaxSteps: f.MaxSteps, MaxTime: f.MaxTime, Objective: f.Objective, MaxErrorRatio: f.MaxErrors}
	if err := sp.Validate(); err != nil {
		var fe *burst.FieldError
		if errors.As(err, &fe) {
			return sp, usage.Errorf("%s: %v", f.name(fe.Field), fe.Err)
		}
		return sp, usage.Errorf("%v", err)
	}
	if sp.MaxTime > limits.MaxTestTime {
		return sp, usage.Errorf("%s: %v must be at most %v", f.name("step-max-time"), sp.MaxTime, limits.MaxTestTime)
	}
	if n, _ := sp.Steps(warmup); n < 1 {
		return sp, usage.Errorf("%s: %v with the warm-up %v must be at most %v", f.name("step-duration"), sp.StepTime, warmup, limits.MaxTestTime)
	}
	return sp, nil
}
