package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/promslog"

	"github.com/redis-prober/redis-prober/config"
	"github.com/redis-prober/redis-prober/engine"
	"github.com/redis-prober/redis-prober/internal/burstcli"
	"github.com/redis-prober/redis-prober/prober"
	"github.com/redis-prober/redis-prober/prober/burst"
)

// burstRunFlags are run's periodic bursts: how often (--burst.interval),
// which plan (--burst.plan) and its rate (--burst.rate), the flags a
// sidecar is started with. The plan's other fields live in the config
// file; their old --burst.* flags stay for one release, hidden.
type burstRunFlags struct {
	interval   time.Duration
	planName   *string
	configFile *string
	flags      *planFlags
}

// runVisiblePlanFlags are the plan fields that keep a flag on run's
// --help: the rate is the one figure people turn down for one server
// without writing a plan.
var runVisiblePlanFlags = map[string]bool{"rate": true}

func addBurstRunFlags(g flagGroup, configFile *string) *burstRunFlags {
	f := &burstRunFlags{configFile: configFile}
	typedVar(g, "burst.interval", "How often to run a bounded load burst on each target (0 disables).", "15m", &f.interval, parseDuration)
	f.planName = g.Flag("burst.plan", `The burst plan of the periodic bursts: "default" (built in) or one of the config file's burst_plans: (docs/configuration.md); the plan label of the burst series.`).
		Default(config.DefaultBurstPlanName).String()
	f.flags = addPlanFlags(g, "burst.", config.DefaultBurstPlan(), func(pf planField) bool { return !runVisiblePlanFlags[pf.key] })
	g.GetFlag("burst.rate").Help("Requests per second of each periodic burst, over all its connections; given, it wins over the plan's rate.")
	for _, pf := range f.flags.fields {
		if !runVisiblePlanFlags[pf.key] {
			g.GetFlag("burst." + pf.key).Help(deprecatedHelp(burstPlanField(pf.path)))
		}
	}
	return f
}

// burstPlanField is where a plan field's deprecated flag now lives;
// <plan> stands for --burst.plan's value.
func burstPlanField(path string) string { return "burst_plans.<plan>." + path }

// deprecated are the hidden plan flags, for the warning at start.
func (f *burstRunFlags) deprecated() []*deprecatedFlag {
	var out []*deprecatedFlag
	for _, pf := range f.flags.fields {
		if !runVisiblePlanFlags[pf.key] {
			out = append(out, &deprecatedFlag{name: "burst." + pf.key, replacement: burstPlanField(pf.path), given: f.flags.given[pf.key]})
		}
	}
	return out
}

// plans are the config file's plans, or the built-in one alone.
func loadPlans(file string) (config.BurstPlans, error) {
	if file == "" {
		return config.BuiltinBurstPlans(), nil
	}
	plans, err := config.LoadBurstPlans(file)
	if err != nil {
		return nil, usagef("--config.file: %v", err)
	}
	return plans, nil
}

// pick is the plan called name, or a usage error naming flag.
func pick(plans config.BurstPlans, name, flag string) (config.BurstPlan, error) {
	p, ok := plans[name]
	if !ok {
		return p, usagef("%s: no burst plan %q (plans: %s; a plan of your own goes in --config.file's burst_plans:)",
			flag, name, strings.Join(plans.Names(), ", "))
	}
	return p, nil
}

// periodic is the periodic bursts' config, nil when they are off.
func (f *burstRunFlags) periodic(log *slog.Logger) (*engine.BurstsConfig, error) {
	if f.interval == 0 {
		return nil, nil
	}
	plans, err := loadPlans(*f.configFile)
	if err != nil {
		return nil, err
	}
	base, err := pick(plans, *f.planName, "--burst.plan")
	if err != nil {
		return nil, err
	}
	p := f.flags.over(base)
	pf, sf := f.flags.values(*f.planName, p)
	periodic := burstcli.Periodic{Interval: f.interval, PlanName: *f.planName, Plan: pf, Step: p.Step, Steps: sf,
		MaxConcurrent: p.Bounds.MaxConcurrent}
	return periodic.Config(log)
}

// check validates every plan of the config file as the one-shot command
// would use it, and the periodic bursts' plan as run does: for
// --config.check.
func (f *burstRunFlags) check() error {
	plans, err := loadPlans(*f.configFile)
	if err != nil {
		return err
	}
	for _, name := range plans.Names() {
		pf, sf := f.flags.values(name, plans[name])
		plan, _, err := pf.Plan(name, prober.Namespace{Prefix: "redis-prober:"}, burst.CLILimits)
		if err != nil {
			return err
		}
		if plans[name].Step {
			if _, err := sf.Plan(burst.CLILimits, plan.Warmup); err != nil {
				return err
			}
		}
	}
	_, err = f.periodic(slog.New(slog.DiscardHandler))
	return err
}

// extension runs the periodic bursts.
func (f *burstRunFlags) extension(env extensionEnv) ([]engine.Service, error) {
	cfg, err := f.periodic(env.log)
	if cfg == nil || err != nil {
		return nil, err
	}
	svc := engine.NewBursts(*cfg, env.log, env.metrics, burst.NewMetrics(env.reg))
	env.status.Bursts = svc
	return []engine.Service{svc}, nil
}

// memtierDefaults are the one-shot command's defaults without --plan:
// memtier_benchmark's where it has the setting (50 connections, no rate
// limit, 10000 requests a connection), bounds for a one-off test beside.
func memtierDefaults() config.BurstPlan {
	p := config.DefaultBurstPlan()
	p.Clients, p.Keys.Maximum, p.TestTime, p.Rate = 50, 10000000, 0, 0
	p.Timeout = config.Duration(5 * time.Second)
	p.StepSearch.MaxSteps = 0
	p.Bounds.MaxBytes, p.Bounds.AbortP99, p.Bounds.MaxServerOps = 256<<20, config.Duration(100*time.Millisecond), 0
	return p
}

// addBurstCommand declares the one-shot `burst` command.
func addBurstCommand(cmd *kingpin.CmdClause) command {
	redisF := addRedisFlags(cmd)
	var o burstcli.OneShot
	flags := addPlanFlags(cmd, "", memtierDefaults(), func(planField) bool { return false })
	planName := cmd.Flag("plan", `Take the burst's settings from this plan: "default" (run's built-in one) or one of --config.file's burst_plans:; the flags given win over its fields.`).String()
	configFile := cmd.Flag("config.file", "YAML file whose burst_plans: --plan picks from (docs/configuration.md); a file of plans alone will do.").String()
	cmd.Flag("key-prefix", "Namespace of every key the burst writes; must end in a separator.").Default("redis-prober:").StringVar(&o.KeyPrefix)
	cmd.Flag("json-out-file", "Write the JSON report (plan, environment, figures, full histograms) here.").StringVar(&o.JSONOut)
	cmd.Flag("print-percentiles", "Percentiles of the ALL STATS table.").Default("50,99,99.9").StringVar(&o.Percentiles)
	cmd.Flag("report", "With --step: write a Markdown report here and its SVG chart beside it.").StringVar(&o.Report)
	paths := addPathFlags(cmd) // the environment snapshot reads the host there
	typedVar(cmd, "trials", "Run the burst N times in a row (memtier's --run-count); the report keeps each run's figures, so compare can judge the spread, "+
		"and a summary gives their median and range (not with --step).", "1", &o.Trials, parseInt)
	cmd.GetFlag("trials").IsSetByUser(&o.TrialsSet)

	return func(ctx context.Context, env *cliEnv) error {
		log := promslog.New(env.logConfig)
		p, err := oneShotPlan(flags, *planName, *configFile)
		if err != nil {
			return err
		}
		o.Plan, o.Steps = flags.values(*planName, p)
		if *planName == "" {
			o.Plan.Names, o.Steps.Names = nil, nil // every value is a flag's
		}
		o.Step = p.Step
		names, eps, err := redisF.endpoints(log)
		if err != nil {
			return err
		}
		if len(eps) != 1 {
			return usagef("--redis.addr: burst runs against one server, got %d", len(eps))
		}
		o.Paths, o.Tag, o.PlanName = paths.paths(), instanceTag(), *planName
		return o.Run(ctx, names[0], eps[0], log, env.stdout)
	}
}

// oneShotPlan is the one-shot burst's plan: --plan's (from --config.file,
// or the built-in default), else memtier's defaults, with the flags given
// laid over it.
func oneShotPlan(flags *planFlags, name, file string) (config.BurstPlan, error) {
	if name == "" {
		if file != "" {
			return config.BurstPlan{}, usagef("--config.file: give --plan=NAME to pick one of its burst_plans:")
		}
		return flags.over(memtierDefaults()), nil
	}
	plans, err := loadPlans(file)
	if err != nil {
		return config.BurstPlan{}, err
	}
	base, err := pick(plans, name, "--plan")
	if err != nil {
		return base, err
	}
	return flags.over(base), nil
}

// deprecatedHelp is the help of a hidden flag that moved to the config
// file (docs/flags.md lists it).
func deprecatedHelp(replacement string) string {
	return fmt.Sprintf("Deprecated, goes in the next release: set %s in --config.file.", replacement)
}
