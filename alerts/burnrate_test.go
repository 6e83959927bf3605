package alerts

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The committed burnrate.yml is what the template renders for
// DefaultObjectives.
func TestBurnRateFileIsFresh(t *testing.T) {
	want, err := RenderBurnRate(DefaultObjectives)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(BurnRateFile)
	if err != nil {
		t.Fatalf("%v: run `go generate ./alerts`", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run `go generate ./alerts` and commit the result (edit burnrate.yml.tmpl, not the file)", BurnRateFile)
	}
}

// Each objective gets its own group, labels what it records with its
// bound, and reads the classic bucket of that bound only when it is one.
func TestRenderBurnRateObjectives(t *testing.T) {
	b, err := RenderBurnRate([]time.Duration{5 * time.Millisecond, 3 * time.Millisecond, 50 * time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	out := string(b)
	groups := strings.Split(out, "\n  - name: ")[1:]
	if len(groups) != 4 {
		t.Fatalf("%d groups, want one an objective and the alerts':\n%s", len(groups), out)
	}
	for i, want := range []struct{ name, secs string }{
		{"redis-prober-slo-fraction-5ms.rules", "0.005"},
		{"redis-prober-slo-fraction-3ms.rules", "0.003"},
		{"redis-prober-slo-fraction-50us.rules", "0.00005"},
	} {
		g := groups[i]
		if !strings.HasPrefix(g, want.name+"\n") {
			t.Errorf("group %d is %q, want %s", i, strings.SplitN(g, "\n", 2)[0], want.name)
		}
		if n := strings.Count(g, `objective: "`+want.secs+`"`); n != 7 {
			t.Errorf("%s: %d rules labelled objective=%s, want 7", want.name, n, want.secs)
		}
		if !strings.Contains(g, "histogram_fraction(0, "+want.secs+",") || !strings.Contains(g, "== "+want.secs+")") {
			t.Errorf("%s does not measure %s:\n%s", want.name, want.secs, g)
		}
		classic := strings.Contains(g, "_bucket")
		if classic != (want.secs == "0.005") {
			t.Errorf("%s: reads classic buckets %v (only 0.005 is a boundary whose le every Prometheus writes alike)", want.name, classic)
		}
	}
	if !strings.Contains(groups[0], `le="0.005"`) {
		t.Errorf("the 5ms group does not read le=\"0.005\"")
	}
	if !strings.HasPrefix(groups[3], "redis-prober-slo-fraction\n") || strings.Count(groups[3], "- alert: ") != 2 {
		t.Errorf("the last group is not the two alerts:\n%s", groups[3])
	}
	promtoolCheckRules(t, b)
}

func TestRenderBurnRateRefuses(t *testing.T) {
	for _, objs := range [][]time.Duration{
		nil,
		{0},
		{-time.Millisecond},
		{5 * time.Millisecond, 5 * time.Millisecond},
		{1500 * time.Nanosecond},
	} {
		if _, err := RenderBurnRate(objs); err == nil {
			t.Errorf("RenderBurnRate(%v): no error", objs)
		}
	}
	if _, err := ParseObjectives("5ms,fast"); err == nil {
		t.Error(`ParseObjectives("5ms,fast"): no error`)
	}
	got, err := ParseObjectives(" 1ms, 2.5ms,")
	if err != nil || len(got) != 2 || got[1] != 2500*time.Microsecond {
		t.Errorf(`ParseObjectives(" 1ms, 2.5ms,") = %v, %v`, got, err)
	}
}

// promtoolCheckRules runs `promtool check rules` (lint included) on a
// rendered file; promtool is required under CI=true and optional
// elsewhere.
func promtoolCheckRules(t *testing.T, rules []byte) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool not on PATH; CI must install it")
		}
		t.Log("SKIPPING promtool check rules: promtool not on PATH")
		return
	}
	path := filepath.Join(t.TempDir(), "burnrate.yml")
	if err := os.WriteFile(path, rules, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, bin, "check", "rules", path).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules: %v\n%s", err, out)
	}
}
