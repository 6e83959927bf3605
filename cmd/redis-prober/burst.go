package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/common/version"
	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/engine"
	"github.com/redis-prober/redis-prober/prober"
	"github.com/redis-prober/redis-prober/prober/burst"
	"github.com/redis-prober/redis-prober/prober/report"
)

// planFlags shape a burst. The one-shot command declares them with
// memtier_benchmark's names (--clients, --ratio, ...), run mode with the
// burst. prefix and modest defaults.
type planFlags struct {
	prefix         string
	clients        *int
	pipeline       *int
	ratio          *string
	commands       *string
	dataSize       *int
	dataSizeRange  *string
	keyMin, keyMax *int64
	keyPattern     *string
	keyStddev      *float64
	keyMedian      *float64
	keyZipfExp     *float64
	testTime       *time.Duration
	requests       *int64
	rate           *float64
	warmup         *time.Duration
	maxBytes       *int64
	timeout        *time.Duration
	abortP99       *time.Duration
	maxErrors      *float64
	headroom       *float64
	maxServerOps   *float64
	allowReplica   *bool
}

type planDefaults struct {
	clients, pipeline, dataSize, keyMax, testTime, requests, rate, warmup string
	maxBytes, timeout, abortP99, maxServerOps                             string
}

func int64Flag(g flagGroup, name, help, def string) *int64 {
	return typedFlag(g, name, help, def, func(s string) (int64, error) {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a whole number", s)
		}
		return n, nil
	})
}

// secondsFlag takes a Go duration or, as memtier does, plain seconds.
func secondsFlag(g flagGroup, name, help, def string) *time.Duration {
	return typedFlag(g, name, help, def, func(s string) (time.Duration, error) {
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			if f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
				return 0, fmt.Errorf("%q must not be negative", s)
			}
			return time.Duration(f * float64(time.Second)), nil
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("%q is not seconds or a duration (examples: 10, 500ms, 2m)", s)
		}
		if d < 0 {
			return 0, fmt.Errorf("%q must not be negative", s)
		}
		return d, nil
	})
}

func addPlanFlags(g flagGroup, prefix string, d planDefaults) *planFlags {
	n := func(s string) string { return prefix + s }
	return &planFlags{
		prefix:   prefix,
		clients:  intFlag(g, n("clients"), "Connections of the burst, in total.", d.clients),
		pipeline: intFlag(g, n("pipeline"), "Requests each connection sends before reading the replies.", d.pipeline),
		ratio:    g.Flag(n("ratio"), "SET:GET ratio, as memtier's (1:10 is one SET per ten GETs).").Default("1:10").String(),
		commands: g.Flag(n("commands"), "Weighted command list instead of --"+n("ratio")+", such as get:10,set:1,hgetall:2 (known: "+
			strings.Join(burst.CommandNames(), ", ")+").").String(),
		dataSize:      intFlag(g, n("data-size"), "Bytes of each value written.", d.dataSize),
		dataSizeRange: g.Flag(n("data-size-range"), "Value sizes drawn uniformly from MIN-MAX bytes, instead of --"+n("data-size")+".").String(),
		keyMin:        int64Flag(g, n("key-minimum"), "Lowest key number.", "0"),
		keyMax:        int64Flag(g, n("key-maximum"), "Highest key number.", d.keyMax),
		keyPattern: g.Flag(n("key-pattern"), "Key patterns for SET:GET: R uniform, G gaussian, Z zipf, S sequential.").
			Default("R:R").String(),
		keyStddev:  floatFlag(g, n("key-stddev"), "Standard deviation of the gaussian pattern (0: a sixth of the range).", "0"),
		keyMedian:  floatFlag(g, n("key-median"), "Median of the gaussian pattern (0: the middle of the range).", "0"),
		keyZipfExp: floatFlag(g, n("key-zipf-exp"), "Exponent of the zipf pattern, above 0 and at most 5 (higher is more skewed).", "1"),
		testTime:   secondsFlag(g, n("test-time"), "Measured length of the burst (seconds or a duration).", d.testTime),
		requests:   int64Flag(g, n("requests"), "Requests per connection, as memtier's (0: bounded by time only).", d.requests),
		rate:       floatFlag(g, n("rate"), "Total requests per second over all connections (0: as fast as the server answers).", d.rate),
		warmup:     secondsFlag(g, n("warmup"), "Load sent before the measurement starts, not counted.", d.warmup),
		maxBytes:   int64Flag(g, n("max-bytes"), "Most bytes of keys and values the burst may write.", d.maxBytes),
		timeout:    durationFlag(g, n("timeout"), "Timeout of one request.", d.timeout),
		abortP99: durationFlag(g, n("abort-p99"),
			"Abort when the p99 over the last second exceeds this (0 disables).", d.abortP99),
		maxErrors: floatFlag(g, n("max-errors"), "Abort when errors and timeouts exceed this fraction of requests.", "0.01"),
		headroom: floatFlag(g, n("memory-headroom"),
			"Fraction of maxmemory (of system memory when maxmemory is 0) that must stay free: skip the burst when used_memory plus what it may write would eat into it, abort when used_memory does.", "0.2"),
		maxServerOps: floatFlag(g, n("max-server-ops"),
			"Skip the burst when the server already serves more than this many commands per second (0 disables).", d.maxServerOps),
		allowReplica: g.Flag(n("allow-replica"), "Allow read-only bursts on a replica.").Bool(),
	}
}

func (f *planFlags) name(s string) string { return "--" + f.prefix + s }

// plan validates the flags into a plan and guards.
func (f *planFlags) plan(name string, ns prober.Namespace, limits burst.Limits) (burst.Plan, burst.Guards, error) {
	var p burst.Plan
	var err error
	p.Name, p.Namespace = name, ns
	p.Clients, p.Pipeline = *f.clients, *f.pipeline
	if *f.commands != "" {
		if p.Mix, err = burst.ParseMix(*f.commands); err != nil {
			return p, burst.Guards{}, usagef("%s: %v", f.name("commands"), err)
		}
	} else if p.Mix, err = burst.ParseRatio(*f.ratio); err != nil {
		return p, burst.Guards{}, usagef("%s: %v", f.name("ratio"), err)
	}
	p.DataSize = *f.dataSize
	if r := *f.dataSizeRange; r != "" {
		lo, hi, ok := strings.Cut(r, "-")
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if !ok || err1 != nil || err2 != nil || a < 1 || b < a {
			return p, burst.Guards{}, usagef("%s: %q is not MIN-MAX bytes", f.name("data-size-range"), r)
		}
		p.DataSize, p.DataMax = a, b
	}
	set, get, err := burst.ParseKeyPattern(*f.keyPattern)
	if err != nil {
		return p, burst.Guards{}, usagef("%s: %v", f.name("key-pattern"), err)
	}
	p.Keys = burst.KeySpec{SetPattern: set, GetPattern: get, Min: *f.keyMin, Max: *f.keyMax,
		Stddev: *f.keyStddev, Median: *f.keyMedian, ZipfExp: *f.keyZipfExp}
	p.TestTime, p.Warmup, p.Rate = *f.testTime, *f.warmup, *f.rate
	if *f.requests < 0 {
		return p, burst.Guards{}, usagef("%s: must not be negative", f.name("requests"))
	}
	p.Requests = *f.requests * int64(max(p.Clients, 0))
	p.MaxBytes, p.Timeout = *f.maxBytes, *f.timeout
	p.KeyTTL = p.Duration() + max(time.Minute, p.Duration())
	if err := p.Validate(limits); err != nil {
		return p, burst.Guards{}, f.fieldUsage(err)
	}
	g := burst.Guards{AllowReplica: *f.allowReplica, MemoryHeadroom: *f.headroom, MaxServerOps: *f.maxServerOps,
		AbortP99: *f.abortP99, Window: time.Second, ErrorBudget: *f.maxErrors, CheckInterval: time.Second}
	if err := g.Validate(); err != nil {
		return p, g, f.fieldUsage(err)
	}
	return p, g, nil
}

// fieldUsage turns a validation error into a usage error naming the flag.
func (f *planFlags) fieldUsage(err error) error {
	return fieldUsage(f.prefix, err)
}

func fieldUsage(prefix string, err error) error {
	var fe *burst.FieldError
	if errors.As(err, &fe) {
		field := fe.Field
		if field == "commands" && prefix != "" {
			field = "ratio or --" + prefix + "commands"
		}
		return usagef("--%s%s: %v", prefix, field, fe.Err)
	}
	return usagef("%v", err)
}

// stepFlags shape a step-load capacity search.
type stepFlags struct {
	prefix    string
	start     *float64
	increase  *float64
	maxRate   *float64
	duration  *time.Duration
	maxSteps  *int
	objective *time.Duration
	maxErrors *float64
}

// addStepFlags declares the step-search flags; maxSteps is the default of
// --step-max-steps ("0": the ramp goes on until a step misses the
// objective or a bound of the plan is reached).
func addStepFlags(g flagGroup, prefix, maxSteps string) *stepFlags {
	n := func(s string) string { return prefix + s }
	return &stepFlags{
		prefix:   prefix,
		start:    floatFlag(g, n("step-start"), "Rate of the first step (ops/s).", "1000"),
		increase: floatFlag(g, n("step-increase"), "Rate added at every step (ops/s).", "1000"),
		maxRate:  floatFlag(g, n("step-max-rate"), "Highest rate to try (0: no ceiling).", "0"),
		duration: secondsFlag(g, n("step-duration"), "Measured length of each step.", "10s"),
		maxSteps: intFlag(g, n("step-max-steps"), "Most steps to run (0: no fixed number; the ramp goes on until a step misses the objective, "+
			"or the rate ceiling, the bytes bound or the longest test time is reached).", maxSteps),
		objective: durationFlag(g, n("objective"), "The p99 a step must stay under.", "5ms"),
		maxErrors: floatFlag(g, n("step-max-errors"), "The error ratio a step must stay under.", "0.001"),
	}
}

// plan validates the flags into a search bounded, in all, by the longest
// test time of limits.
func (f *stepFlags) plan(limits burst.Limits, warmup time.Duration) (burst.StepPlan, error) {
	sp := burst.StepPlan{Start: *f.start, Increase: *f.increase, MaxRate: *f.maxRate, StepTime: *f.duration,
		MaxSteps: *f.maxSteps, MaxTime: limits.MaxTestTime, Objective: *f.objective, MaxErrorRatio: *f.maxErrors}
	if err := sp.Validate(); err != nil {
		return sp, fieldUsage(f.prefix, err)
	}
	if n, _ := sp.Steps(warmup); n < 1 {
		return sp, usagef("--%sstep-duration: %v with the warm-up %v must be at most %v", f.prefix, sp.StepTime, warmup, limits.MaxTestTime)
	}
	return sp, nil
}

// addBurstRunFlags declares the periodic-burst flags of `run` (--burst.*) and
// returns their extension.
func addBurstRunFlags(g flagGroup) extension {
	interval := durationFlag(g, "burst.interval", "How often to run a bounded load burst on each target (0 disables).", "15m")
	planName := g.Flag("burst.plan", "Name of the burst plan, the plan label of the burst series.").Default("default").String()
	pf := addPlanFlags(g, "burst.", planDefaults{clients: "4", pipeline: "1", dataSize: "32", keyMax: "9999",
		testTime: "10s", requests: "0", rate: "2000", warmup: "1s", maxBytes: "16777216", timeout: "1s",
		abortP99: "20ms", maxServerOps: "50000"})
	step := g.Flag("burst.step", "Make every periodic burst a step-load capacity search up to --burst.rate.").Bool()
	sf := addStepFlags(g, "burst.", "20")
	maxConcurrent := intFlag(g, "burst.max-concurrent", "Most bursts running at once across all targets.", "4")
	return func(env extensionEnv) ([]engine.Service, error) {
		if *interval == 0 {
			return nil, nil
		}
		if *planName == "" || strings.ContainsAny(*planName, " \t\n{}") {
			return nil, usagef("--burst.plan: %q must be a non-empty name without spaces or braces", *planName)
		}
		// The namespace prefix is the probe's, set per node by the engine;
		// this one only passes validation.
		plan, guards, err := pf.plan(*planName, prober.Namespace{Prefix: "redis-prober:"}, burst.RunLimits)
		if err != nil {
			return nil, err
		}
		if *interval <= plan.Duration() {
			return nil, usagef("--burst.interval: %v must be longer than the burst (%v with warm-up)", *interval, plan.Duration())
		}
		if *maxConcurrent < 1 {
			return nil, usagef("--burst.max-concurrent: must be at least 1")
		}
		cfg := engine.BurstsConfig{Interval: *interval, Plan: plan, Guards: guards, MaxConcurrent: *maxConcurrent,
			CleanupTimeout: 10 * time.Second}
		if *step {
			sp, err := sf.plan(burst.RunLimits, plan.Warmup)
			if err != nil {
				return nil, err
			}
			if sp.MaxRate == 0 || sp.MaxRate > plan.Rate {
				sp.MaxRate = plan.Rate
			}
			if sp.Start > sp.MaxRate {
				return nil, usagef("--burst.step-start: %v is above --burst.rate %v", sp.Start, plan.Rate)
			}
			if d := sp.Duration(plan.Warmup); *interval <= d {
				return nil, usagef("--burst.interval: %v must be longer than the step search (%v)", *interval, d)
			}
			plan.KeyTTL = sp.Duration(plan.Warmup) + time.Minute
			cfg.Plan, cfg.Steps = plan, &sp
		}
		// A warning: bursts are on by default and load the server.
		env.log.Warn(burstNotice(*interval, plan, *step), "interval", *interval, "plan", plan.Name, "clients", plan.Clients,
			"pipeline", plan.Pipeline, "rate", plan.Rate, "test_time", plan.TestTime, "step", *step)
		return []engine.Service{engine.NewBursts(cfg, env.log, env.metrics, burst.NewMetrics(env.reg))}, nil
	}
}

// burstNotice says at start-up, in words, what the periodic bursts will do
// to every target and how to turn them off.
func burstNotice(interval time.Duration, plan burst.Plan, step bool) string {
	rate := fmt.Sprintf("%.0f ops/s", plan.Rate)
	if plan.Rate == 0 {
		rate = "as many ops/s as Redis answers"
	}
	what := rate + " for " + plan.TestTime.String()
	if step {
		what = "a step-load search up to " + rate
	}
	return fmt.Sprintf("periodic bursts on: %s every %s on each target, writing up to %.0f MiB of keys (with a TTL, deleted after); --burst.interval=0 turns them off",
		what, interval, float64(plan.MaxBytes)/(1<<20))
}

// addBurstCommand declares the one-shot `burst` command.
func addBurstCommand(cmd *kingpin.CmdClause) command {
	redisF := addRedisFlags(cmd)
	pf := addPlanFlags(cmd, "", planDefaults{clients: "50", pipeline: "1", dataSize: "32", keyMax: "10000000",
		testTime: "0", requests: "0", rate: "0", warmup: "1s", maxBytes: "268435456", timeout: "5s",
		abortP99: "100ms", maxServerOps: "0"})
	keyPrefix := cmd.Flag("key-prefix", "Namespace of every key the burst writes; must end in a separator.").
		Default("redis-prober:").String()
	jsonOut := cmd.Flag("json-out-file", "Write the JSON report (plan, environment, figures, full histograms) here.").String()
	percentiles := cmd.Flag("print-percentiles", "Percentiles of the ALL STATS table.").Default("50,99,99.9").String()
	step := cmd.Flag("step", "Run a step-load capacity search instead of one burst.").Bool()
	sf := addStepFlags(cmd, "", "0")
	reportFile := cmd.Flag("report", "With --step: write a Markdown report here and its SVG chart beside it.").String()
	paths := addPathFlags(cmd) // the environment snapshot reads the host there
	trials := intFlag(cmd, "trials", "Run the burst N times in a row (memtier's --run-count); the report keeps each run's figures, so compare can judge the spread, "+
		"and a summary gives their median and range (not with --step).", "1")
	var trialsSet bool
	cmd.GetFlag("trials").IsSetByUser(&trialsSet)

	return func(ctx context.Context, env *cliEnv) error {
		log := promslog.New(env.logConfig)
		names, eps, err := redisF.endpoints(log)
		if err != nil {
			return err
		}
		if len(eps) != 1 {
			return usagef("--redis.addr: burst runs against one server, got %d", len(eps))
		}
		if err := prober.ValidatePrefix(*keyPrefix); err != nil {
			return usagef("--key-prefix: %v", err)
		}
		pcts, err := parsePercentiles(*percentiles)
		if err != nil {
			return err
		}
		if *pf.testTime == 0 && *pf.requests == 0 {
			*pf.requests = 10000 // memtier's default: 10000 requests per client
		}
		timeBounded := *pf.testTime > 0
		if !timeBounded {
			*pf.testTime = burst.CLILimits.MaxTestTime - *pf.warmup // --requests ends it; this is the ceiling
		}
		plan, guards, err := pf.plan("cli", prober.Namespace{Prefix: *keyPrefix, Tag: instanceTag()}, burst.CLILimits)
		if err != nil {
			return err
		}
		if *trials < 1 || *trials > 100 {
			return usagef("--trials: %d must be from 1 to 100", *trials)
		}
		var sp burst.StepPlan
		if *step && trialsSet {
			return usagef("--trials: a step-load search runs once; drop --trials or --step")
		}
		if *step {
			if sp, err = sf.plan(burst.CLILimits, plan.Warmup); err != nil {
				return err
			}
			plan.KeyTTL = sp.Duration(plan.Warmup) + time.Minute
		} else if *reportFile != "" {
			return usagef("--report: only with --step")
		}
		control := eps[0].NewClient(plan.Timeout, 2)
		defer control.Close()
		if err := checkReachable(ctx, control, names[0], plan.Timeout); err != nil {
			return err
		}
		burster := &burst.Runner{Endpoint: eps[0], Control: control, Guards: guards, Log: log}
		bar := newProgressBar(env.stdout)
		if bar != nil {
			burster.Progress = bar.update
		}
		ver := version.Version
		if ver == "" {
			ver = "devel" // built without the Makefile's version ldflags
		}
		envSnap := report.SnapshotEnvironment(ctx, control, paths.paths(),
			ver, version.Revision)

		var rep *report.Report
		var res *burst.Result
		if *step {
			sr := burster.RunSteps(ctx, plan, sp)
			bar.finish()
			res = &sr.Final
			if !sr.Measured() {
				if err := notStarted(res, names[0]); err != nil {
					return err
				}
			}
			rep = report.NewStepReport(names[0], &sr, sp, envSnap, pcts)
			writeStepTable(env, &sr)
			if *reportFile != "" {
				if err := writeMarkdownReport(*reportFile, rep); err != nil {
					return err
				}
			}
		} else {
			run := func() burst.Result { r := burster.Run(ctx, plan); bar.finish(); return r }
			after := func(i int, r *burst.Result) error {
				if i == 1 && r.Outcome == burst.OutcomeFailed {
					return notStarted(r, names[0]) // nothing measured: no figures, no report
				}
				return writeTrialStats(env.stdout, i, *trials, r, pcts)
			}
			var completed []burst.Result
			if rep, res, completed, err = runTrials(trialRun{n: *trials, run: run, after: after, target: names[0], env: envSnap, pcts: pcts}); err != nil {
				return err
			}
			writeTrialSummary(env.stdout, completed)
		}
		if *jsonOut != "" {
			if err := writeFileAtomic(*jsonOut, rep.WriteJSON); err != nil {
				return err
			}
		}
		switch res.Outcome {
		case burst.OutcomeCompleted:
			return nil
		case burst.OutcomeSkipped:
			return fmt.Errorf("burst skipped (%s): %s", res.Reason, res.Detail)
		default:
			return fmt.Errorf("burst %s (%s): %s", res.Outcome, res.Reason, res.Detail)
		}
	}
}

// checkReachable fails with one line naming the server when it does not
// answer a PING, before anything is measured, logged or written: a report
// of a search that never reached the server would read as a verdict on it.
func checkReachable(ctx context.Context, c *redis.Client, name string, timeout time.Duration) error {
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := c.Ping(pctx).Err(); err != nil {
		return fmt.Errorf("cannot reach Redis at %s: %w", name, err)
	}
	return nil
}

// notStarted is the error of a burst that failed before it measured
// anything (INFO refused, the server gone after the PING): no figures, so
// no report.
func notStarted(res *burst.Result, name string) error {
	if res.Outcome != burst.OutcomeFailed {
		return nil
	}
	return fmt.Errorf("burst on %s failed before it measured anything (%s): %s", name, res.Reason, res.Detail)
}

func parsePercentiles(s string) ([]float64, error) {
	var out []float64
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		f, err := strconv.ParseFloat(part, 64)
		if err != nil || f <= 0 || f > 100 {
			return nil, usagef("--print-percentiles: %q is not a percentile above 0 and at most 100", part)
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil, usagef("--print-percentiles: no percentile given")
	}
	return out, nil
}

func writeStepTable(env *cliEnv, sr *burst.StepResult) {
	fmt.Fprintf(env.stdout, "\nSTEP LOAD\n%6s %14s %14s %10s %10s %10s %8s  %s\n",
		"step", "target ops/s", "achieved", "p50 ms", "p99 ms", "p99.9 ms", "errors", "verdict")
	for i, s := range sr.Steps {
		r := s.Result
		var p50, p99, p999 float64
		var errs int64
		if r.Total != nil {
			p50, p99, p999 = msOf(r.Total.Quantile(0.5)), msOf(r.Total.Quantile(0.99)), msOf(r.Total.Quantile(0.999))
			errs = r.Total.Errors + r.Total.Timeouts
		}
		verdict := "met"
		if !s.Passed {
			verdict = "failed: " + s.Why
		}
		fmt.Fprintf(env.stdout, "%6d %14.0f %14.0f %10.3f %10.3f %10.3f %8d  %s\n", i+1, s.Rate, s.Achieved, p50, p99, p999, errs, verdict)
	}
	if sr.LowerBound {
		fmt.Fprintf(env.stdout, "\nCapacity: at least %.0f ops/s met the objective; every step did, so this is the ramp's ceiling, not the server's (stopped: %s)\n",
			sr.Capacity, sr.Stop)
		return
	}
	fmt.Fprintf(env.stdout, "\nCapacity: %.0f ops/s met the objective (stopped: %s)\n", sr.Capacity, sr.Stop)
}

func msOf(d time.Duration) float64 { return float64(d) / 1e6 }

// writeMarkdownReport writes FILE.md and FILE.svg beside it.
func writeMarkdownReport(path string, rep *report.Report) error {
	chart := strings.TrimSuffix(path, filepath.Ext(path)) + ".svg"
	if err := writeFileAtomic(chart, func(w io.Writer) error { return report.WriteStepChart(w, rep) }); err != nil {
		return err
	}
	return writeFileAtomic(path, func(w io.Writer) error { return report.WriteStepMarkdown(w, rep, filepath.Base(chart)) })
}

// writeFileAtomic writes through a temporary file, so a reader never sees
// half a report.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
