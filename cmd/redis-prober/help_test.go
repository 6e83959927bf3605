package main

import (
	"errors"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// flagName matches a flag at the start of a kingpin help line (not in a
// wrapped description, which is indented further):
// "  -h, --[no-]help", "      --probe.rate=10", "  --redis.addr=...".
var flagName = regexp.MustCompile(`(?m)^ {2,6}(?:-\w, )?--(?:\[no-\])?([a-z0-9][a-z0-9.-]*)`)

func helpOutput(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(proberBin, args...).Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		t.Fatalf("redis-prober %s: exit %d, stderr %q", strings.Join(args, " "), ee.ExitCode(), ee.Stderr)
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestHelpListsTheRunFlags: run is the default command, so the help of
// `redis-prober` with no command lists its flags too, as the README says
// (it showed 4 flags; they took `run --help`).
func TestHelpListsTheRunFlags(t *testing.T) {
	runFlags := map[string]bool{}
	for _, m := range flagName.FindAllStringSubmatch(helpOutput(t, "run", "--help"), -1) {
		runFlags[m[1]] = true
	}
	for _, must := range []string{"redis.addr", "probe.rate", "burst.interval", "web.listen-address", "config.file"} {
		if !runFlags[must] {
			t.Fatalf("run --help lacks --%s (the pattern misreads kingpin's help?): %v", must, runFlags)
		}
	}
	// Issue 40: 86 flags were more than a person holds; the plan's settings
	// moved to the config file.
	if len(runFlags) > 50 {
		t.Errorf("run --help lists %d flags, at most 50 wanted", len(runFlags))
	}
	for _, f := range []string{"burst.clients", "burst.key-stddev", "burst.max-bytes", "burst.step-factor"} {
		if runFlags[f] {
			t.Errorf("run --help lists --%s, a field of the burst plan", f)
		}
	}
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		out := helpOutput(t, args...)
		got := map[string]bool{}
		for _, m := range flagName.FindAllStringSubmatch(out, -1) {
			got[m[1]] = true
		}
		var missing []string
		for f := range runFlags {
			if !got[f] {
				missing = append(missing, "--"+f)
			}
		}
		if len(missing) > 0 {
			t.Errorf("redis-prober %s lacks %d of run's %d flags: %v", strings.Join(args, " "), len(missing), len(runFlags), missing)
		}
		for _, cmd := range []string{"doctor", "burst", "compare"} {
			if !strings.Contains(out, "\n"+cmd+" [<flags>]") {
				t.Errorf("redis-prober %s no longer lists the %s command", strings.Join(args, " "), cmd)
			}
		}
	}
	// A command's own help stays its own.
	if out := helpOutput(t, "doctor", "--help"); strings.Contains(out, "--burst.interval") || strings.Contains(out, `Flags of "run"`) {
		t.Errorf("doctor --help shows run's flags:\n%s", out)
	}
}
