package burstcli

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis-prober/redis-prober/engine"
	"github.com/redis-prober/redis-prober/internal/usage"
	"github.com/redis-prober/redis-prober/prober"
	"github.com/redis-prober/redis-prober/prober/burst"
)

// Periodic are the values of run's --burst.* flags.
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
	if f.PlanName == "" || strings.ContainsAny(f.PlanName, " \t\n{}") {
		return nil, usage.Errorf("--burst.plan: %q must be a non-empty name without spaces or braces", f.PlanName)
	}
	// The namespace prefix is the probe's, set per node by the engine;
	// this one only passes validation.
	plan, guards, err := f.Plan.Plan(f.PlanName, prober.Namespace{Prefix: "redis-prober:"}, burst.RunLimits)
	if err != nil {
		return nil, err
	}
	if f.Interval <= plan.Duration() {
		return nil, usage.Errorf("--burst.interval: %v must be longer than the burst (%v with warm-up)", f.Interval, plan.Duration())
	}
	if f.MaxConcurrent < 1 {
		return nil, usage.Errorf("--burst.max-concurrent: must be at least 1")
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
			return nil, usage.Errorf("--burst.step-start: %v is above --burst.rate %v", sp.Start, plan.Rate)
		}
		if d := sp.Duration(plan.Warmup); f.Interval <= d {
			return nil, usage.Errorf("--burst.interval: %v must be longer than the step search (%v)", f.Interval, d)
		}
		plan.KeyTTL = sp.Duration(plan.Warmup) + time.Minute
		cfg.Plan, cfg.Steps = plan, &sp
	}
	// A warning: bursts are on by default and load the server.
	log.Warn(notice(f.Interval, plan, f.Step), "interval", f.Interval, "plan", plan.Name, "clients", plan.Clients,
		"pipeline", plan.Pipeline, "rate", plan.Rate, "test_time", plan.TestTime, "step", f.Step)
	return cfg, nil
}

// notice says at start-up, in words, what the periodic bursts will do to
// every target and how to turn them off.
func notice(interval time.Duration, plan burst.Plan, step bool) string {
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
