package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/redis-prober/redis-prober/config"
)

// A value for each plan field, unlike the default plan's, as a flag takes
// it and as YAML writes it.
var planFieldSamples = map[string]string{
	"clients": "8", "pipeline": "2", "ratio": "1:1", "commands": "get:3,set:1", "data-size": "1KiB",
	"data-size-range": "32-4KiB", "key-minimum": "5", "key-maximum": "500", "key-pattern": "G:G", "key-stddev": "3.5",
	"key-median": "7", "key-zipf-exp": "1.5", "test-time": "20s", "requests": "100", "rate": "300", "warmup": "2s",
	"max-bytes": "32MiB", "timeout": "2s", "abort-p99": "40ms", "max-errors": "0.05", "memory-headroom": "0.3",
	"max-server-ops": "1000", "allow-replica": "true", "step": "true", "step-start": "500", "step-factor": "1.5",
	"step-precision": "0.1", "step-max-rate": "4000", "step-duration": "3s", "step-max-time": "3m",
	"step-max-steps": "7", "objective": "2ms", "step-max-errors": "0.01", "max-concurrent": "2",
}

// yamlAt writes value at a dotted path: keys.maximum: 5 is
// "keys: {maximum: 5}".
func yamlAt(path, value string) string {
	parts := strings.Split(path, ".")
	out := value
	if strings.ContainsAny(value, ":,") {
		out = fmt.Sprintf("%q", value)
	}
	for i := len(parts) - 1; i >= 0; i-- {
		out = "{" + parts[i] + ": " + out + "}"
	}
	return out
}

// Every --burst.* flag that moved to the config file still sets the same
// value of the plan as its field there, and says so once at start.
func TestDeprecatedPlanFlagsSetThePlan(t *testing.T) {
	for _, pf := range planFields() {
		t.Run(pf.key, func(t *testing.T) {
			sample, ok := planFieldSamples[pf.key]
			if !ok {
				t.Fatalf("no sample value for the plan field %s", pf.key)
			}
			def := config.DefaultBurstPlan()
			if pf.get(&def) == sample {
				t.Fatalf("the sample %s is the default", sample)
			}
			app := kingpin.New("test", "")
			file := ""
			bursts := addBurstRunFlags(app, &file)
			arg := "--burst." + pf.key + "=" + sample
			if pf.isBool {
				arg = "--burst." + pf.key // kingpin's bool flags take no value
			}
			if _, err := app.Parse([]string{arg}); err != nil {
				t.Fatal(err)
			}
			got := bursts.flags.over(config.DefaultBurstPlan())

			f, err := config.Parse([]byte("targets: [{name: a, addr: x}]\nburst_plans:\n  default: " + yamlAt(pf.path, sample) + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			if want := f.Plans()["default"]; got != want {
				t.Errorf("--burst.%s=%s gives the plan\n%+v\nburst_plans.default.%s gives\n%+v", pf.key, sample, got, pf.path, want)
			}

			var buf bytes.Buffer
			warnDeprecated(slog.New(slog.NewTextHandler(&buf, nil)), "default", bursts.deprecated())
			lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
			visible := runVisiblePlanFlags[pf.key]
			switch {
			case visible && buf.Len() > 0:
				t.Errorf("--burst.%s stays on run, yet: %s", pf.key, buf.String())
			case !visible && (len(lines) != 1 || !strings.Contains(lines[0], "level=WARN") ||
				!strings.Contains(lines[0], "deprecated flag --burst."+pf.key+" ") ||
				!strings.Contains(lines[0], "replacement=burst_plans.default."+pf.path)):
				t.Errorf("want one WARN line naming --burst.%s and burst_plans.default.%s, got:\n%s", pf.key, pf.path, buf.String())
			}
		})
	}
}

// The warning names the plan --burst.plan picked.
func TestDeprecationNamesThePlan(t *testing.T) {
	app := kingpin.New("test", "")
	file := ""
	bursts := addBurstRunFlags(app, &file)
	if _, err := app.Parse([]string{"--burst.plan=nightly", "--burst.key-maximum=5"}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	warnDeprecated(slog.New(slog.NewTextHandler(&buf, nil)), *bursts.planName, bursts.deprecated())
	if !strings.Contains(buf.String(), "set burst_plans.nightly.keys.maximum in --config.file") {
		t.Errorf("warning: %s", buf.String())
	}
}

// The probe and discovery flags that have a field in global: still set the
// defaults of every target, with a warning naming the field.
func TestDeprecatedRunFlags(t *testing.T) {
	app := kingpin.New("test", "")
	probeF := addProbeFlags(app)
	discoveryF := addDiscoveryFlags(app)
	deprecated := deprecateRunFlags(app)
	if _, err := app.Parse([]string{"--probe.connections=3", "--probe.data-size=64", "--probe.key-ttl=2m",
		"--probe.connect-interval=30s", "--discovery.max-nodes=7"}); err != nil {
		t.Fatal(err)
	}
	if *probeF.connections != 3 || *probeF.dataSize != 64 || *probeF.keyTTL != 2*time.Minute ||
		*probeF.connectInterval != 30*time.Second || *discoveryF.maxNodes != 7 {
		t.Errorf("values not set: %d %d %v %v %d", *probeF.connections, *probeF.dataSize, *probeF.keyTTL,
			*probeF.connectInterval, *discoveryF.maxNodes)
	}
	var buf bytes.Buffer
	warnDeprecated(slog.New(slog.NewTextHandler(&buf, nil)), "default", deprecated)
	for _, want := range []string{"--probe.connections goes in the next release: set global.probe.connections",
		"--probe.data-size goes in the next release: set global.probe.data_size",
		"--probe.key-ttl goes in the next release: set global.probe.key_ttl",
		"--probe.connect-interval goes in the next release: set global.probe.connect_interval",
		"--discovery.max-nodes goes in the next release: set global.discovery.max_nodes"} {
		if strings.Count(buf.String(), want) != 1 {
			t.Errorf("log lacks one %q:\n%s", want, buf.String())
		}
	}
	if n := strings.Count(buf.String(), "\n"); n != 5 {
		t.Errorf("%d lines, want one a flag:\n%s", n, buf.String())
	}
}
