package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/prober/burst"
)

// stepReport is a step-load report whose byte counts are all distinct and
// at least 1 KiB, so a raw count in the output can be told apart.
func stepReport() *Report {
	return &Report{Schema: Schema, Target: "127.0.0.1:6379", Start: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC),
		End: time.Date(2026, 3, 1, 12, 0, 3, 0, time.UTC), Outcome: burst.OutcomeCompleted,
		Plan: PlanReport{Clients: 4, Pipeline: 1, Mix: []burst.MixEntry{{Op: "set", Weight: 1}}, KeyPattern: "R:R", KeyMaximum: 999,
			DataSize: 2048, DataSizeMax: 65536, MaxBytes: 268435456, KeyPrefix: "redis-prober:"},
		StepPlan: &StepPlanReport{Start: 1000, Factor: 2, Precision: 0.05, StepSeconds: 1, MaxSteps: 2, ObjectiveSeconds: 0.005},
		Steps:    []StepReport{{Rate: 1000, Achieved: 1000, Passed: true, P50Ms: 0.1, P99Ms: 0.5, P999Ms: 1}},
		Capacity: &CapacityReport{OpsPerSec: 1000, Rate: 1000, Stop: "max-steps", LowerBound: true},
		Environment: &Environment{Redis: RedisEnv{Version: "7.0.15", UsedMemory: 1040464, MaxMemory: 3221225472,
			Config: map[string]string{"maxmemory": "3221225472", "hz": "10"}}},
	}
}

// The step report's Markdown shows byte counts as people read them; the
// JSON keeps the counts.
func TestStepMarkdownShowsBytesInIECUnits(t *testing.T) {
	rep := stepReport()
	var md, js bytes.Buffer
	if err := WriteStepMarkdown(&md, rep, "chart.svg"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| bytes written at most | 256 MiB |", "| used_memory | 1016 KiB |", "| maxmemory | 3 GiB |",
		"| data size | 2 KiB to 64 KiB |", "| hz | `10` |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	for _, raw := range []string{"268435456", "1040464", "3221225472", "65536", "2048"} {
		if strings.Contains(md.String(), raw) {
			t.Errorf("markdown prints the raw byte count %s:\n%s", raw, md.String())
		}
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"max_bytes": 268435456`, `"used_memory": 1040464`, `"data_size_max": 65536`, `"maxmemory": "3221225472"`} {
		if !strings.Contains(js.String(), want) {
			t.Errorf("JSON lacks %s:\n%s", want, js.String())
		}
	}
}

func TestConfigText(t *testing.T) {
	for _, tc := range []struct{ name, value, want string }{
		{"maxmemory", "268435456", "256 MiB"},
		{"maxmemory", "0", "0 (no limit)"},
		{"maxmemory", "12gb|x", "`12gb\\|x`"}, // not a count: as Redis gave it, escaped
		{"maxmemory", "-5", "`-5`"},
		{"hz", "10", "`10`"},
		{"tcp-backlog", "511", "`511`"},
	} {
		if got := configText(tc.name, tc.value); got != tc.want {
			t.Errorf("configText(%q, %q) = %q, want %q", tc.name, tc.value, got, tc.want)
		}
	}
}
