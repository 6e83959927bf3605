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
