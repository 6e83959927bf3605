package burstcli

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/redis-prober/redis-prober/config"
	"github.com/redis-prober/redis-prober/engine"
	"github.com/redis-prober/redis-prober/internal/bytesize"
	"github.com/redis-prober/redis-prober/internal/usage"
	"github.com/redis-prober/redis-prober/prober"
	"github.com/redis-prober/redis-prober/prober/burst"
)

// Periodic are run's periodic bursts: --burst.interval, and the plan
// --burst.plan picks (its values, with any flags given over them).
type Periodic struct {
	Interval      time.Duration
	PlanName      string
	Plan          PlanFlags
	Step          bool
	Steps         StepFlags
	MaxConcurrent int
}

// Config validates the flags into the engine's burst config, and says at
// WARN in log what the bursts will do. Nil: bursts are off
// (--burst.interval=0).
func (f *Periodic) Config(log *slog.Logger) (*engine.BurstsConfig, error) {
	if f.Interval == 0 {
		return nil, nil
	}
	if err := config.ValidBurstPlanName(f.PlanName); err != nil {
		return nil, usage.Errorf("--burst.plan: %v", err)
	}
	// The namespace prefix is the probe's, set per node by the engine;
	// this one only passes validation.
	plan, guards, err := f.Plan.Plan(f.PlanName, prober.Namespace{Prefix: "redis-prober:"}, burst.RunLimits)
	if err != nil {
		return nil, err
	}
	if f.Interval <= plan.Duration() {
		return nil, usage.Errorf("--burst.interval: %v must be longer than the burst (%v with warm-up)", human(f.Interval), human(plan.Duration()))
	}
	if f.MaxConcurrent < 1 {
		return nil, usage.Errorf("%s: must be at least 1", f.Plan.name("max-concurrent"))
	}
	cfg := &engine.BurstsConfig{Interval: f.Interval, Plan: plan, Guards: guards, MaxConcurrent: f.MaxConcurrent,
		CleanupTimeout: 10 * time.Second}
	if f.Step {
		sp, err := f.Steps.Plan(burst.RunLimits, plan.Warmup)
		if err != nil {
			return nil, err
		}
		if sp.MaxRate == 0 || sp.MaxRate > plan.Rate {
			sp.MaxRate = plan.Rate
		}
		if sp.Start > sp.MaxRate {
			return nil, usage.Errorf("%s: %v is above the rate %v (%s)", f.Steps.name("step-start"), sp.Start, plan.Rate, f.Plan.name("rate"))
		}
		if d := sp.Duration(plan.Warmup); f.Interval <= d {
			return nil, usage.Errorf("--burst.interval: %v must be longer than the step search (%v)", human(f.Interval), human(d))
		}
		plan.KeyTTL = sp.Duration(plan.Warmup) + time.Minute
		cfg.Plan, cfg.Steps = plan, &sp
	}
	// A warning: bursts are on by default and load the server.
	log.Warn(notice(f.Interval, plan, f.Step), "interval", human(f.Interval), "plan", plan.Name, "clients", plan.Clients,
		"pipeline", plan.Pipeline, "rate", plan.Rate, "test_time", human(plan.TestTime), "step", f.Step)
	return cfg, nil
}

// notice says at start-up, in words, what the periodic bursts will do to
// every target and how to turn them off.
func notice(interval time.Duration, plan burst.Plan, step bool) string {
	rate := fmt.Sprintf("%.0f ops/s", plan.Rate)
	if plan.Rate == 0 {
		rate = "as many ops/s as Redis answers"
	}
	what := rate + " for " + human(plan.TestTime)
	if step {
		what = "a step-load search up to " + rate
	}
	return fmt.Sprintf("periodic bursts on: %s every %s on each target, writing up to %s of keys (with a TTL, deleted after); --burst.interval=0 turns them off",
		what, human(interval), bytesize.IEC(plan.MaxBytes))
}

// human writes a duration as people write it: 15m, not 15m0s.
func human(d time.Duration) string { return config.Duration(d).String() }
