package promtest

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStartQueryRules(t *testing.T) {
	rules := filepath.Join(t.TempDir(), "rules.yml")
	if err := os.WriteFile(rules, []byte(`groups:
  - name: g
    rules:
      - record: answer
        expr: vector(42)
      - alert: Always
        expr: vector(1)
        labels:
          severity: warning
        annotations:
          summary: always
`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := Start(t, Config{RuleFiles: []string{rules}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	got, err := s.Query(ctx, "vector(1) + vector(2)")
	if err != nil || len(got) != 1 || got[0].Value != 3 {
		t.Fatalf("vector query: %v, %v", got, err)
	}
	if got, err := s.Query(ctx, "scalar(vector(0.25))"); err != nil || len(got) != 1 || got[0].Value != 0.25 {
		t.Fatalf("scalar query: %v, %v", got, err)
	}
	at := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	if got, err := s.QueryAt(ctx, "time()", at); err != nil || len(got) != 1 || got[0].Value != float64(at.UnixMilli())/1000 {
		t.Fatalf("time() at %v: %v, %v", at, got, err)
	}
	if got, err := s.Query(ctx, "vector(0) / 0"); err != nil || len(got) != 1 || !math.IsNaN(got[0].Value) {
		t.Fatalf("NaN query: %v, %v", got, err)
	}
	if _, err := s.Query(ctx, "sum(("); err == nil || !strings.Contains(err.Error(), "bad_data") {
		t.Fatalf("a bad expression must fail with Prometheus's error, got %v", err)
	}

	rs, err := s.Rules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Type != "recording" || rs[1].Type != "alerting" || rs[1].Labels["severity"] != "warning" {
		t.Fatalf("rules: %+v", rs)
	}
	// The recording rule is evaluated every second.
	for {
		got, err := s.Query(ctx, "answer")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 1 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("recorded series never appeared")
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Promtool finds the promtool of the Prometheus under test: the rule tests
// and the scrape lint must run the same generation as the server.
func TestPromtoolMatchesPrometheus(t *testing.T) {
	pt := Promtool(t)
	out, err := exec.Command(pt, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v: %s", pt, err, out)
	}
	var major int
	if _, err := fmt.Sscanf(string(out), "promtool, version %d.", &major); err != nil {
		t.Fatalf("%s --version: %q: %v", pt, out, err)
	}
	if want := Major(t); major != want {
		t.Errorf("promtool %s is version %d, the Prometheus under test %d", pt, major, want)
	}
}

// TestNativeWays: the way native histograms are asked for follows the
// version: the feature flag up to 3.8 (a no-op from 3.9), the scrape
// setting from 3.8 (an unknown field, so a config error, before).
func TestNativeWays(t *testing.T) {
	for _, c := range []struct {
		n                     Native
		major, minor          int
		wantFlag, wantSetting bool
	}{
		{NativeAsNeeded, 2, 42, true, false},
		{NativeAsNeeded, 3, 5, true, false},
		{NativeAsNeeded, 3, 8, true, true},
		{NativeAsNeeded, 3, 9, false, true},
		{NativeAsNeeded, 3, 16, false, true},
		{NativeAsNeeded, 4, 0, false, true},
		{NativeOff, 3, 16, false, false},
		{NativeOff, 2, 42, false, false},
		{NativeFlagOnly, 3, 16, true, false},
	} {
		flag, setting := c.n.ways(c.major, c.minor)
		if flag != c.wantFlag || setting != c.wantSetting {
			t.Errorf("%d on %d.%d: flag %v, setting %v; want %v, %v", c.n, c.major, c.minor, flag, setting, c.wantFlag, c.wantSetting)
		}
	}
}

// TestConfigYAMLNativeSetting: scrape_native_histograms sits in the scrape
// config, and only when asked for; promtool of the version under test
// reads the config.
func TestConfigYAMLNativeSetting(t *testing.T) {
	cfg := Config{Targets: []string{"127.0.0.1:9379"}, Interval: time.Second}
	with, without := configYAML(cfg, true), configYAML(cfg, false)
	if !strings.Contains(with, "  - job_name: redis-prober\n    scrape_native_histograms: true\n") {
		t.Errorf("setting not in the scrape config:\n%s", with)
	}
	if strings.Contains(without, "native") {
		t.Errorf("setting written when not asked for:\n%s", without)
	}
	major, minor := Version(t)
	_, setting := NativeAsNeeded.ways(major, minor)
	path := filepath.Join(t.TempDir(), "prometheus.yml")
	if err := os.WriteFile(path, []byte(configYAML(cfg, setting)), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(Promtool(t), "check", "config", path).CombinedOutput(); err != nil {
		t.Errorf("promtool check config (Prometheus %d.%d, setting %v): %v\n%s", major, minor, setting, err, out)
	}
}
