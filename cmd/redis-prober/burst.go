package main

import (
	"context"
	"strings"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/promslog"

	"github.com/redis-prober/redis-prober/engine"
	"github.com/redis-prober/redis-prober/internal/burstcli"
	"github.com/redis-prober/redis-prober/prober/burst"
)

// planDefaults are the defaults of the plan flags: the one-shot command's
// are memtier's, run mode's modest.
type planDefaults struct {
	clients, pipeline, dataSize, keyMax, testTime, requests, rate, warmup string
	maxBytes, timeout, abortP99, maxServerOps                             string
}

// addPlanFlags declares the flags that shape a burst into f: the one-shot
// command with memtier_benchmark's names (--clients, --ratio, ...), run mode
// with the burst. prefix.
func addPlanFlags(g flagGroup, prefix string, d planDefaults, f *burstcli.PlanFlags) {
	n := func(s string) string { return prefix + s }
	f.Prefix = prefix
	typedVar(g, n("clients"), "Connections of the burst, in total.", d.clients, &f.Clients, parseInt)
	typedVar(g, n("pipeline"), "Requests each connection sends before reading the replies.", d.pipeline, &f.Pipeline, parseInt)
	g.Flag(n("ratio"), "SET:GET ratio, as memtier's (1:10 is one SET per ten GETs).").Default("1:10").StringVar(&f.Ratio)
	g.Flag(n("commands"), "Weighted command list instead of --"+n("ratio")+", such as get:10,set:1,hgetall:2 (known: "+
		strings.Join(burst.CommandNames(), ", ")+").").StringVar(&f.Commands)
	typedVar(g, n("data-size"), "Bytes of each value written.", d.dataSize, &f.DataSize, parseInt)
	g.Flag(n("data-size-range"), "Value sizes drawn uniformly from MIN-MAX bytes, instead of --"+n("data-size")+".").StringVar(&f.DataSizeRange)
	typedVar(g, n("key-minimum"), "Lowest key number.", "0", &f.KeyMin, parseInt64)
	typedVar(g, n("key-maximum"), "Highest key number.", d.keyMax, &f.KeyMax, parseInt64)
	g.Flag(n("key-pattern"), "Key patterns for SET:GET: R uniform, G gaussian, Z zipf, S sequential.").Default("R:R").StringVar(&f.KeyPattern)
	typedVar(g, n("key-stddev"), "Standard deviation of the gaussian pattern (0: a sixth of the range).", "0", &f.KeyStddev, parseFloat)
	typedVar(g, n("key-median"), "Median of the gaussian pattern (0: the middle of the range).", "0", &f.KeyMedian, parseFloat)
	typedVar(g, n("key-zipf-exp"), "Exponent of the zipf pattern, above 0 and at most 5 (higher is more skewed).", "1", &f.KeyZipfExp, parseFloat)
	typedVar(g, n("test-time"), "Measured length of the burst (seconds or a duration).", d.testTime, &f.TestTime, parseSeconds)
	typedVar(g, n("requests"), "Requests per connection, as memtier's (0: bounded by time only).", d.requests, &f.Requests, parseInt64)
	typedVar(g, n("rate"), "Total requests per second over all connections (0: as fast as the server answers).", d.rate, &f.Rate, parseFloat)
	typedVar(g, n("warmup"), "Load sent before the measurement starts, not counted.", d.warmup, &f.Warmup, parseSeconds)
	typedVar(g, n("max-bytes"), "Most bytes of keys and values the burst may write.", d.maxBytes, &f.MaxBytes, parseInt64)
	typedVar(g, n("timeout"), "Timeout of one request.", d.timeout, &f.Timeout, parseDuration)
	typedVar(g, n("abort-p99"), "Abort when the p99 over the last second exceeds this (0 disables).", d.abortP99, &f.AbortP99, parseDuration)
	typedVar(g, n("max-errors"), "Abort when errors and timeouts exceed this fraction of requests.", "0.01", &f.MaxErrors, parseFloat)
	typedVar(g, n("memory-headroom"),
		"Fraction of maxmemory (of system memory when maxmemory is 0) that must stay free: skip the burst when used_memory plus what it may write would eat into it, abort when used_memory does.",
		"0.2", &f.Headroom, parseFloat)
	typedVar(g, n("max-server-ops"), "Skip the burst when the server already serves more than this many commands per second (0 disables).",
		d.maxServerOps, &f.MaxServerOps, parseFloat)
	g.Flag(n("allow-replica"), "Allow read-only bursts on a replica.").BoolVar(&f.AllowReplica)
}

// addStepFlags declares the step-search flags into f; maxSteps is the
// default of --step-max-steps ("0": the ramp goes on until a step misses
// the objective or a bound of the plan is reached).
func addStepFlags(g flagGroup, prefix, maxSteps string, f *burstcli.StepFlags) {
	n := func(s string) string { return prefix + s }
	f.Prefix = prefix
	typedVar(g, n("step-start"), "Rate of the first step (ops/s).", "1000", &f.Start, parseFloat)
	typedVar(g, n("step-factor"), "Growth of the rate at every step of the ramp, before the first confirmed miss.", "2", &f.Factor, parseFloat)
	typedVar(g, n("step-precision"), "The bisection after the ramp ends when the lowest miss is within this share of the highest pass.", "0.05", &f.Precision, parseFloat)
	typedVar(g, n("step-max-rate"), "Highest rate to try (0: no ceiling).", "0", &f.MaxRate, parseFloat)
	typedVar(g, n("step-duration"), "Measured length of each step.", "2s", &f.Duration, parseSeconds)
	typedVar(g, n("step-max-time"), "Longest the whole search may last, every step with its warm-up.", "2m", &f.MaxTime, parseDuration)
	typedVar(g, n("step-max-steps"), "Most steps to run (0: no fixed number; the search goes on until it finds the knee, "+
		"or the rate ceiling, the bytes bound or the longest time is reached).", maxSteps, &f.MaxSteps, parseInt)
	typedVar(g, n("objective"), "The p99 a step must stay under.", "5ms", &f.Objective, parseDuration)
	typedVar(g, n("step-max-errors"), "The error ratio a step must stay under.", "0.001", &f.MaxErrors, parseFloat)
}

// addBurstRunFlags declares the periodic-burst flags of `run` (--burst.*) and
// returns their extension.
func addBurstRunFlags(g flagGroup) extension {
	var f burstcli.Periodic
	typedVar(g, "burst.interval", "How often to run a bounded load burst on each target (0 disables).", "15m", &f.Interval, parseDuration)
	g.Flag("burst.plan", "Name of the burst plan, the plan label of the burst series.").Default("default").StringVar(&f.PlanName)
	addPlanFlags(g, "burst.", planDefaults{clients: "4", pipeline: "1", dataSize: "32", keyMax: "9999",
		testTime: "10s", requests: "0", rate: "2000", warmup: "1s", maxBytes: "16777216", timeout: "1s",
		abortP99: "20ms", maxServerOps: "50000"}, &f.Plan)
	g.Flag("burst.step", "Make every periodic burst a step-load capacity search up to --burst.rate.").BoolVar(&f.Step)
	addStepFlags(g, "burst.", "20", &f.Steps)
	typedVar(g, "burst.max-concurrent", "Most bursts running at once across all targets.", "4", &f.MaxConcurrent, parseInt)
	return func(env extensionEnv) ([]engine.Service, error) {
		cfg, err := f.Config(env.log)
		if cfg == nil || err != nil {
			return nil, err
		}
		return []engine.Service{engine.NewBursts(*cfg, env.log, env.metrics, burst.NewMetrics(env.reg))}, nil
	}
}

// addBurstCommand declares the one-shot `burst` command.
func addBurstCommand(cmd *kingpin.CmdClause) command {
	redisF := addRedisFlags(cmd)
	var o burstcli.OneShot
	addPlanFlags(cmd, "", planDefaults{clients: "50", pipeline: "1", dataSize: "32", keyMax: "10000000",
		testTime: "0", requests: "0", rate: "0", warmup: "1s", maxBytes: "268435456", timeout: "5s",
		abortP99: "100ms", maxServerOps: "0"}, &o.Plan)
	cmd.Flag("key-prefix", "Namespace of every key the burst writes; must end in a separator.").Default("redis-prober:").StringVar(&o.KeyPrefix)
	cmd.Flag("json-out-file", "Write the JSON report (plan, environment, figures, full histograms) here.").StringVar(&o.JSONOut)
	cmd.Flag("print-percentiles", "Percentiles of the ALL STATS table.").Default("50,99,99.9").StringVar(&o.Percentiles)
	cmd.Flag("step", "Run a step-load capacity search instead of one burst.").BoolVar(&o.Step)
	addStepFlags(cmd, "", "0", &o.Steps)
	cmd.Flag("report", "With --step: write a Markdown report here and its SVG chart beside it.").StringVar(&o.Report)
	paths := addPathFlags(cmd) // the environment snapshot reads the host there
	typedVar(cmd, "trials", "Run the burst N times in a row (memtier's --run-count); the report keeps each run's figures, so compare can judge the spread, "+
		"and a summary gives their median and range (not with --step).", "1", &o.Trials, parseInt)
	cmd.GetFlag("trials").IsSetByUser(&o.TrialsSet)

	return func(ctx context.Context, env *cliEnv) error {
		log := promslog.New(env.logConfig)
		names, eps, err := redisF.endpoints(log)
		if err != nil {
			return err
		}
		if len(eps) != 1 {
			return usagef("--redis.addr: burst runs against one server, got %d", len(eps))
		}
		o.Paths, o.Tag = paths.paths(), instanceTag()
		return o.Run(ctx, names[0], eps[0], log, env.stdout)
	}
}
