package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

const oneTarget = "targets:\n  - {name: a, addr: x}\n"

// A plan names what it changes; every other field, nested ones too, keeps
// the default plan's value.
func TestBurstPlanDefaultsFilled(t *testing.T) {
	f, err := Parse([]byte(oneTarget + `
burst_plans:
  heavy:
    clients: 16
    data_size: 4KiB
    keys: {maximum: 100000}
    step_search: {max_steps: 5}
    bounds: {max_bytes: 256MiB, abort_p99: 50ms}
`))
	if err != nil {
		t.Fatal(err)
	}
	plans := f.Plans()
	if got := plans.Names(); strings.Join(got, ",") != "default,heavy" {
		t.Fatalf("plans %v, want default and heavy", got)
	}
	want := DefaultBurstPlan()
	want.Clients, want.DataSize = 16, 4096
	want.Keys.Maximum = 100000
	want.StepSearch.MaxSteps = 5
	want.Bounds.MaxBytes, want.Bounds.AbortP99 = 256<<20, Duration(50*time.Millisecond)
	if plans["heavy"] != want {
		t.Errorf("heavy = %+v\nwant    %+v", plans["heavy"], want)
	}
	if plans["default"] != DefaultBurstPlan() {
		t.Errorf("the built-in default changed: %+v", plans["default"])
	}
}

// A file may replace the default plan; its left-out fields still come from
// the built-in one.
func TestBurstPlanFileDefaultReplacesBuiltin(t *testing.T) {
	f, err := Parse([]byte(oneTarget + "burst_plans:\n  default: {rate: 500}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultBurstPlan()
	want.Rate = 500
	if got := f.Plans()["default"]; got != want {
		t.Errorf("default = %+v, want %+v", got, want)
	}
}

func TestBurstPlanErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"misspelt field", "burst_plans:\n  heavy:\n    clinets: 8\n", `line 3: burst_plans.heavy: unknown field "clinets" (did you mean clients?)`},
		{"misspelt nested field", "burst_plans:\n  heavy:\n    bounds:\n      max_byte: 1MiB\n", `line 4: burst_plans.heavy.bounds: unknown field "max_byte" (did you mean max_bytes?)`},
		{"ambiguous size", "burst_plans:\n  heavy:\n    bounds: {max_bytes: 16MB}\n", `line 3: "16MB": unit "MB"`},
		{"bad duration", "burst_plans:\n  heavy: {test_time: long}\n", `line 2: "long" is not a duration`},
		{"bad number", "burst_plans:\n  heavy: {clients: many}\n", "line 2: cannot unmarshal"},
		{"empty plan", "burst_plans:\n  heavy:\n", "burst_plans.heavy (line 2): is empty"},
		{"bad name", "burst_plans:\n  \"a b\": {clients: 1}\n", `burst_plans.a b (line 2): "a b" is not a plan name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml + oneTarget))
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %v, want one line with %q", err, tc.want)
			}
		})
	}
}

// burst --plan reads a file of plans alone; run needs its targets.
func TestLoadBurstPlansWithoutTargets(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plans.yml")
	if err := os.WriteFile(path, []byte("burst_plans:\n  light: {rate: 100, test_time: 2m}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	plans, err := LoadBurstPlans(path)
	if err != nil {
		t.Fatal(err)
	}
	if p := plans["light"]; p.Rate != 100 || time.Duration(p.TestTime) != 2*time.Minute || p.Clients != 4 {
		t.Errorf("light = %+v", p)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "target") {
		t.Errorf("Load of a plans-only file: %v, want the targets it lacks", err)
	}
	if err := os.WriteFile(path, []byte("burst_plans:\n  light: {rate: 100, colour: red}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadBurstPlans(path); err == nil || !strings.Contains(err.Error(), `unknown field "colour"`) {
		t.Errorf("LoadBurstPlans decodes strictly: %v", err)
	}
}

// Sizes and durations print as they are written.
func TestBurstPlanMarshalsInUnits(t *testing.T) {
	b, err := yaml.Marshal(DefaultBurstPlan())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"max_bytes: 16MiB", "test_time: 10s", "max_time: 2m", "data_size: 32B"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("marshalled plan lacks %q:\n%s", want, b)
		}
	}
}
