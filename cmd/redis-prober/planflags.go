package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/redis-prober/redis-prober/config"
	"github.com/redis-prober/redis-prober/internal/burstcli"
	"github.com/redis-prober/redis-prober/internal/bytesize"
	"github.com/redis-prober/redis-prober/prober/burst"
)

// planField is one field of a burst plan (config.BurstPlan) and the flag
// that sets it: the one-shot command's memtier-style name, run's the same
// after "burst." (hidden there: the field belongs in the config file).
type planField struct {
	// key is the flag's name without a prefix, as burst.FieldError names
	// the field; path is the field under burst_plans.<name>.
	key, path, help string
	isBool          bool
	// runOnly fields have no flag on the one-shot command.
	runOnly bool
	// set parses a flag value into p; get writes p's value as the flag
	// takes it; copy copies the field.
	set  func(p *config.BurstPlan, s string) error
	get  func(p *config.BurstPlan) string
	copy func(dst, src *config.BurstPlan)
}

func field[T any](key, path, help string, at func(*config.BurstPlan) *T, parse func(string) (T, error), format func(T) string) planField {
	return planField{key: key, path: path, help: help,
		set: func(p *config.BurstPlan, s string) error {
			v, err := parse(s)
			if err == nil {
				*at(p) = v
			}
			return err
		},
		get:  func(p *config.BurstPlan) string { return format(*at(p)) },
		copy: func(dst, src *config.BurstPlan) { *at(dst) = *at(src) },
	}
}

func intField(key, path, help string, at func(*config.BurstPlan) *int) planField {
	return field(key, path, help, at, parseInt, strconv.Itoa)
}

func int64Field(key, path, help string, at func(*config.BurstPlan) *int64) planField {
	return field(key, path, help, at, parseInt64, func(n int64) string { return strconv.FormatInt(n, 10) })
}

func floatField(key, path, help string, at func(*config.BurstPlan) *float64) planField {
	return field(key, path, help, at, parseFloat, func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) })
}

func stringField(key, path, help string, at func(*config.BurstPlan) *string) planField {
	return field(key, path, help, at, func(s string) (string, error) { return s, nil }, func(s string) string { return s })
}

func boolField(key, path, help string, at func(*config.BurstPlan) *bool) planField {
	f := field(key, path, help, at, func(s string) (bool, error) {
		b, err := strconv.ParseBool(s)
		if err != nil {
			return false, fmt.Errorf("%q is not true or false", s)
		}
		return b, nil
	}, strconv.FormatBool)
	f.isBool = true
	return f
}

// durationField takes a Go duration or, where seconds is true, as memtier
// does, plain seconds.
func durationField(key, path, help string, seconds bool, at func(*config.BurstPlan) *config.Duration) planField {
	parse := parseDuration
	if seconds {
		parse = parseSeconds
	}
	return field(key, path, help, at, func(s string) (config.Duration, error) {
		d, err := parse(s)
		return config.Duration(d), err
	}, config.Duration.String)
}

func sizeField(key, path, help string, at func(*config.BurstPlan) *config.ByteSize) planField {
	return field(key, path, help, at, func(s string) (config.ByteSize, error) {
		n, err := bytesize.Parse(s)
		return config.ByteSize(n), err
	}, config.ByteSize.String)
}

// planFields are every field of a burst plan, in the order of the help.
func planFields() []planField {
	type P = config.BurstPlan
	return []planField{
		intField("clients", "clients", "Connections of the burst, in total.", func(p *P) *int { return &p.Clients }),
		intField("pipeline", "pipeline", "Requests each connection sends before reading the replies.", func(p *P) *int { return &p.Pipeline }),
		stringField("ratio", "ratio", "SET:GET ratio, as memtier's (1:10 is one SET per ten GETs).", func(p *P) *string { return &p.Ratio }),
		stringField("commands", "commands", "Weighted command list instead of the ratio, such as get:10,set:1,hgetall:2 (known: "+
			strings.Join(burst.CommandNames(), ", ")+").", func(p *P) *string { return &p.Commands }),
		sizeField("data-size", "data_size", "Size of each value written (32, 32B, 4KiB).", func(p *P) *config.ByteSize { return &p.DataSize }),
		stringField("data-size-range", "data_size_range", "Value sizes drawn uniformly from MIN-MAX (32-1024, 1KiB-64KiB), instead of the data size.",
			func(p *P) *string { return &p.DataSizeRange }),
		int64Field("key-minimum", "keys.minimum", "Lowest key number.", func(p *P) *int64 { return &p.Keys.Minimum }),
		int64Field("key-maximum", "keys.maximum", "Highest key number.", func(p *P) *int64 { return &p.Keys.Maximum }),
		stringField("key-pattern", "keys.pattern", "Key patterns for SET:GET: R uniform, G gaussian, Z zipf, S sequential.", func(p *P) *string { return &p.Keys.Pattern }),
		floatField("key-stddev", "keys.stddev", "Standard deviation of the gaussian pattern (0: a sixth of the range).", func(p *P) *float64 { return &p.Keys.Stddev }),
		floatField("key-median", "keys.median", "Median of the gaussian pattern (0: the middle of the range).", func(p *P) *float64 { return &p.Keys.Median }),
		floatField("key-zipf-exp", "keys.zipf_exp", "Exponent of the zipf pattern, above 0 and at most 5 (higher is more skewed).", func(p *P) *float64 { return &p.Keys.ZipfExp }),
		durationField("test-time", "test_time", "Measured length of the burst (seconds or a duration).", true, func(p *P) *config.Duration { return &p.TestTime }),
		int64Field("requests", "requests", "Requests per connection, as memtier's (0: bounded by time only).", func(p *P) *int64 { return &p.Requests }),
		floatField("rate", "rate", "Total requests per second over all connections (0: as fast as the server answers).", func(p *P) *float64 { return &p.Rate }),
		durationField("warmup", "warmup", "Load sent before the measurement starts, not counted.", true, func(p *P) *config.Duration { return &p.Warmup }),
		sizeField("max-bytes", "bounds.max_bytes", "Most bytes of keys and values the burst may write (256MiB, 1GiB).", func(p *P) *config.ByteSize { return &p.Bounds.MaxBytes }),
		durationField("timeout", "timeout", "Timeout of one request.", false, func(p *P) *config.Duration { return &p.Timeout }),
		durationField("abort-p99", "bounds.abort_p99", "Abort when the p99 over the last second exceeds this (0 disables).", false, func(p *P) *config.Duration { return &p.Bounds.AbortP99 }),
		floatField("max-errors", "bounds.max_errors", "Abort when errors and timeouts exceed this fraction of requests.", func(p *P) *float64 { return &p.Bounds.MaxErrors }),
		floatField("memory-headroom", "bounds.memory_headroom",
			"Fraction of maxmemory (of system memory when maxmemory is 0) that must stay free: skip the burst when used_memory plus what it may write would eat into it, abort when used_memory does.",
			func(p *P) *float64 { return &p.Bounds.MemoryHeadroom }),
		floatField("max-server-ops", "bounds.max_server_ops", "Skip the burst when the server already serves more than this many commands per second (0 disables).",
			func(p *P) *float64 { return &p.Bounds.MaxServerOps }),
		boolField("allow-replica", "bounds.allow_replica", "Allow read-only bursts on a replica.", func(p *P) *bool { return &p.Bounds.AllowReplica }),
		boolField("step", "step", "Run a step-load capacity search instead of one burst (run: up to the plan's rate).", func(p *P) *bool { return &p.Step }),
		floatField("step-start", "step_search.start", "Rate of the first step (ops/s).", func(p *P) *float64 { return &p.StepSearch.Start }),
		floatField("step-factor", "step_search.factor", "Growth of the rate at every step of the ramp, before the first confirmed miss.", func(p *P) *float64 { return &p.StepSearch.Factor }),
		floatField("step-precision", "step_search.precision", "The bisection after the ramp ends when the lowest miss is within this share of the highest pass.",
			func(p *P) *float64 { return &p.StepSearch.Precision }),
		floatField("step-max-rate", "step_search.max_rate", "Highest rate to try (0: no ceiling).", func(p *P) *float64 { return &p.StepSearch.MaxRate }),
		durationField("step-duration", "step_search.duration", "Measured length of each step.", true, func(p *P) *config.Duration { return &p.StepSearch.Duration }),
		durationField("step-max-time", "step_search.max_time", "Longest the whole search may last, every step with its warm-up.", false,
			func(p *P) *config.Duration { return &p.StepSearch.MaxTime }),
		intField("step-max-steps", "step_search.max_steps", "Most steps to run (0: no fixed number; the search goes on until it finds the knee, "+
			"or the rate ceiling, the bytes bound or the longest time is reached).", func(p *P) *int { return &p.StepSearch.MaxSteps }),
		durationField("objective", "step_search.objective", "The p99 a step must stay under.", false, func(p *P) *config.Duration { return &p.StepSearch.Objective }),
		floatField("step-max-errors", "step_search.max_errors", "The error ratio a step must stay under.", func(p *P) *float64 { return &p.StepSearch.MaxErrors }),
		func() planField {
			f := intField("max-concurrent", "bounds.max_concurrent", "Most bursts running at once across all targets.", func(p *P) *int { return &p.Bounds.MaxConcurrent })
			f.runOnly = true
			return f
		}(),
	}
}

// planValue is the kingpin value of one plan flag: it parses into the
// command's staged plan, and its parse errors name the flag.
type planValue struct {
	name  string
	field planField
	plan  *config.BurstPlan
}

func (v *planValue) Set(s string) error {
	if err := v.field.set(v.plan, s); err != nil {
		return fmt.Errorf("--%s: %w", v.name, err)
	}
	return nil
}

func (v *planValue) String() string { return v.field.get(v.plan) }

// IsBoolFlag makes kingpin take --burst.step and --no-burst.step.
func (v *planValue) IsBoolFlag() bool { return v.field.isBool }

// planFlags are the flags of one command that set the fields of a burst
// plan. They are laid over a plan (the built-in defaults, or a plan of the
// config file): only the flags given on the command line change it.
type planFlags struct {
	prefix string
	staged config.BurstPlan
	fields []planField
	given  map[string]*bool
}

// addPlanFlags declares the plan's flags with the values of defaults as
// theirs; hidden says which to keep out of --help.
func addPlanFlags(g flagGroup, prefix string, defaults config.BurstPlan, hidden func(planField) bool) *planFlags {
	f := &planFlags{prefix: prefix, staged: defaults, given: map[string]*bool{}}
	for _, pf := range planFields() {
		if pf.runOnly && prefix == "" {
			continue
		}
		given := new(bool)
		clause := g.Flag(prefix+pf.key, pf.help).IsSetByUser(given)
		if def := pf.get(&defaults); def != "" {
			clause = clause.Default(def)
		}
		if hidden(pf) {
			clause = clause.Hidden()
		}
		clause.SetValue(&planValue{name: prefix + pf.key, field: pf, plan: &f.staged})
		f.fields = append(f.fields, pf)
		f.given[pf.key] = given
	}
	return f
}

// over is base with the flags given on the command line laid over it.
func (f *planFlags) over(base config.BurstPlan) config.BurstPlan {
	for _, pf := range f.fields {
		if *f.given[pf.key] {
			pf.copy(&base, &f.staged)
		}
	}
	return base
}

// names says, in an error about a field of plan name, where its value
// came from: the flag when it was given, else the plan's field.
func (f *planFlags) names(name string) func(key string) string {
	paths := map[string]string{}
	for _, pf := range planFields() {
		paths[pf.key] = pf.path
	}
	return func(key string) string {
		if given, ok := f.given[key]; ok && *given {
			return "--" + f.prefix + key
		}
		if path, ok := paths[key]; ok {
			return "burst_plans." + name + "." + path
		}
		return "--" + f.prefix + key
	}
}

// values are plan p's values for burstcli, errors naming each setting as
// names does.
func (f *planFlags) values(name string, p config.BurstPlan) (burstcli.PlanFlags, burstcli.StepFlags) {
	pf, sf := burstcli.Values(p)
	pf.Prefix, sf.Prefix = f.prefix, f.prefix
	pf.Names, sf.Names = f.names(name), f.names(name)
	return pf, sf
}
