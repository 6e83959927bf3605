// Package burstcli is what `redis-prober burst` and run's periodic bursts
// do between their flags and prober/burst: the flags' values made into a
// plan, its guards and a step-load search (with errors that name the
// flag), the one-shot command's run (trials, step-load, progress bar, the
// ALL STATS and step tables, the JSON and Markdown reports), and the
// periodic bursts' engine config. The flags themselves are declared in
// cmd/redis-prober.
package burstcli

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis-prober/redis-prober/internal/usage"
	"github.com/redis-prober/redis-prober/prober"
	"github.com/redis-prober/redis-prober/prober/burst"
)

// PlanFlags are the values of the flags that shape a burst. The one-shot
// command has memtier_benchmark's names (--clients, --ratio, ...), run mode
// the same with the burst. Prefix.
type PlanFlags struct {
	Prefix                            string
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

func (f *PlanFlags) name(s string) string { return "--" + f.Prefix + s }

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
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if !ok || err1 != nil || err2 != nil || a < 1 || b < a {
			return p, burst.Guards{}, usage.Errorf("%s: %q is not MIN-MAX bytes", f.name("data-size-range"), r)
		}
		p.DataSize, p.DataMax = a, b
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
		return p, burst.Guards{}, fieldUsage(f.Prefix, err)
	}
	g := burst.Guards{AllowReplica: f.AllowReplica, MemoryHeadroom: f.Headroom, MaxServerOps: f.MaxServerOps,
		AbortP99: f.AbortP99, Window: time.Second, ErrorBudget: f.MaxErrors, CheckInterval: time.Second}
	if err := g.Validate(); err != nil {
		return p, g, fieldUsage(f.Prefix, err)
	}
	return p, g, nil
}

// fieldUsage turns a validation error into a usage error naming the flag.
func fieldUsage(prefix string, err error) error {
	var fe *burst.FieldError
	if errors.As(err, &fe) {
		field := fe.Field
		if field == "commands" && prefix != "" {
			field = "ratio or --" + prefix + "commands"
		}
		return usage.Errorf("--%s%s: %v", prefix, field, fe.Err)
	}
	return usage.Errorf("%v", err)
}

// StepFlags are the values of the flags that shape a step-load capacity
// search.
type StepFlags struct {
	Prefix                            string
	Start, Factor, Precision, MaxRate float64
	Duration, MaxTime                 time.Duration
	MaxSteps                          int
	Objective                         time.Duration
	MaxErrors                         float64
}

// Plan validates the flags into a search bounded, in all, by the longest
// test time of limits.
func (f *StepFlags) Plan(limits burst.Limits, warmup time.Duration) (burst.StepPlan, error) {
	sp := burst.StepPlan{Start: f.Start, Factor: f.Factor, Precision: f.Precision, MaxRate: f.MaxRate, StepTime: f.Duration,
		MaxSteps: f.MaxSteps, MaxTime: f.MaxTime, Objective: f.Objective, MaxErrorRatio: f.MaxErrors}
	if err := sp.Validate(); err != nil {
		return sp, fieldUsage(f.Prefix, err)
	}
	if sp.MaxTime > limits.MaxTestTime {
		return sp, usage.Errorf("--%sstep-max-time: %v must be at most %v", f.Prefix, sp.MaxTime, limits.MaxTestTime)
	}
	if n, _ := sp.Steps(warmup); n < 1 {
		return sp, usage.Errorf("--%sstep-duration: %v with the warm-up %v must be at most %v", f.Prefix, sp.StepTime, warmup, limits.MaxTestTime)
	}
	return sp, nil
}
