package burstcli

import (
	"bytes"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/config"
	"github.com/redis-prober/redis-prober/internal/usage"
)

// run's defaults (cmd/redis-prober/burst.go).
func runDefaults() Periodic {
	return Periodic{Interval: 15 * time.Minute, PlanName: "default", MaxConcurrent: 4,
		Plan: PlanFlags{Prefix: "burst.", Clients: 4, Pipeline: 1, Ratio: "1:10", DataSize: 32, KeyMax: 9999, KeyPattern: "R:R",
			KeyZipfExp: 1, TestTime: 10 * time.Second, Rate: 2000, Warmup: time.Second, MaxBytes: 16 << 20, Timeout: time.Second,
			AbortP99: 20 * time.Millisecond, MaxErrors: 0.01, Headroom: 0.2, MaxServerOps: 50000},
		Steps: StepFlags{Prefix: "burst.", Start: 1000, Factor: 2, Precision: 0.05, Duration: 10 * time.Second, MaxTime: 2 * time.Minute, MaxSteps: 20,
			Objective: 5 * time.Millisecond, MaxErrors: 0.001}}
}

// The periodic bursts' config without kingpin: off at interval 0, a usage
// error naming the flag for a bad value, and a warning that says what the
// bursts will do.
func TestPeriodicConfig(t *testing.T) {
	var logBuf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logBuf, nil))
	f := runDefaults()
	cfg, err := f.Config(log)
	if err != nil || cfg == nil || cfg.Plan.Rate != 2000 || cfg.Steps != nil || cfg.MaxConcurrent != 4 {
		t.Fatalf("defaults: %+v, %v", cfg, err)
	}
	if !strings.Contains(logBuf.String(), "periodic bursts on: 2000 ops/s for 10s every 15m on each target, writing up to 16 MiB") {
		t.Errorf("start-up warning: %s", logBuf.String())
	}

	f.Step = true
	if cfg, err = f.Config(log); err != nil || cfg.Steps == nil || cfg.Steps.MaxRate != 2000 {
		t.Errorf("--burst.step: %+v, %v; want a search up to --burst.rate", cfg, err)
	}

	off := runDefaults()
	off.Interval = 0
	if cfg, err := off.Config(log); cfg != nil || err != nil {
		t.Errorf("--burst.interval=0: %+v, %v; want no bursts", cfg, err)
	}

	for flag, change := range map[string]func(*Periodic){
		"--burst.plan":           func(p *Periodic) { p.PlanName = "a b" },
		"--burst.interval":       func(p *Periodic) { p.Interval = 5 * time.Second },
		"--burst.max-concurrent": func(p *Periodic) { p.MaxConcurrent = 0 },
		"--burst.ratio":          func(p *Periodic) { p.Plan.Ratio = "x" },
		"--burst.step-start":     func(p *Periodic) { p.Step, p.Steps.Start = true, 5000 },
	} {
		p := runDefaults()
		change(&p)
		_, err := p.Config(log)
		var ue usage.Error
		if !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), flag) {
			t.Errorf("%s: %v, want a usage error naming it", flag, err)
		}
	}
}

// The built-in default plan is what run's --burst.* flags defaulted to
// before they moved to the config file.
func TestDefaultPlanIsTheOldFlagDefaults(t *testing.T) {
	plan, steps := Values(config.DefaultBurstPlan())
	want := PlanFlags{Clients: 4, Pipeline: 1, Ratio: "1:10", DataSize: 32, KeyMax: 9999, KeyPattern: "R:R",
		KeyZipfExp: 1, TestTime: 10 * time.Second, Rate: 2000, Warmup: time.Second, MaxBytes: 16777216, Timeout: time.Second,
		AbortP99: 20 * time.Millisecond, MaxErrors: 0.01, Headroom: 0.2, MaxServerOps: 50000}
	wantSteps := StepFlags{Start: 1000, Factor: 2, Precision: 0.05, Duration: 2 * time.Second, MaxTime: 2 * time.Minute,
		MaxSteps: 20, Objective: 5 * time.Millisecond, MaxErrors: 0.001}
	if !reflect.DeepEqual(plan, want) {
		t.Errorf("plan %+v\nwant %+v", plan, want)
	}
	if !reflect.DeepEqual(steps, wantSteps) {
		t.Errorf("steps %+v\nwant  %+v", steps, wantSteps)
	}
	if p := config.DefaultBurstPlan(); p.Step || p.Bounds.MaxConcurrent != 4 {
		t.Errorf("step %v, max_concurrent %d; want false, 4", p.Step, p.Bounds.MaxConcurrent)
	}
}

// A plan of the config file is named by its field in errors, a flag by
// the flag; a data size range takes units.
func TestPlanErrorsNameTheSetting(t *testing.T) {
	var logBuf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logBuf, nil))
	names := func(field string) string { return "burst_plans.big." + field }
	for _, tc := range []struct {
		change func(*Periodic)
		want   string
	}{
		{func(p *Periodic) { p.Plan.Clients = 100 }, "burst_plans.big.clients: 100 must be from 1 to 64"},
		{func(p *Periodic) { p.Plan.Ratio = "x" }, "burst_plans.big.ratio:"},
		{func(p *Periodic) { p.Plan.Commands = "get:0" }, "burst_plans.big.commands:"},
		{func(p *Periodic) { p.Plan.DataSizeRange = "1KiB-16MB" }, "burst_plans.big.data-size-range:"},
		{func(p *Periodic) { p.MaxConcurrent = 0 }, "burst_plans.big.max-concurrent:"},
		{func(p *Periodic) { p.Step, p.Steps.Factor = true, 1 }, "burst_plans.big.step-factor:"},
		{func(p *Periodic) { p.Step, p.Steps.Start = true, 5000 }, "burst_plans.big.step-start: 5000 is above the rate 2000 (burst_plans.big.rate)"},
	} {
		p := runDefaults()
		p.Plan.Names, p.Steps.Names = names, names
		tc.change(&p)
		if _, err := p.Config(log); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%v, want %q", err, tc.want)
		}
	}
	p := runDefaults()
	p.Plan.DataSizeRange = "1KiB-4KiB"
	cfg, err := p.Config(log)
	if err != nil || cfg.Plan.DataSize != 1024 || cfg.Plan.DataMax != 4096 {
		t.Errorf("1KiB-4KiB: %+v, %v", cfg, err)
	}
}

func TestParsePercentiles(t *testing.T) {
	if p, err := parsePercentiles("50, 99,99.9"); err != nil || len(p) != 3 || p[2] != 99.9 {
		t.Errorf("%v %v", p, err)
	}
	for _, bad := range []string{"", "0", "101", "x", ","} {
		if _, err := parsePercentiles(bad); err == nil || !strings.HasPrefix(err.Error(), "--print-percentiles") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
