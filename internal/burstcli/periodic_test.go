package burstcli

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

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
	if !strings.Contains(logBuf.String(), "periodic bursts on: 2000 ops/s for 10s every 15m0s on each target, writing up to 16 MiB") {
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
