package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const runbookBase = "https://github.com/redis-prober/redis-prober/blob/main/docs/runbooks.md#"

var (
	alertStart  = regexp.MustCompile(`(?m)^\s+- alert: (\w+)\s*$`)
	runbookURL  = regexp.MustCompile(`(?m)^\s+runbook_url: (\S+)\s*$`)
	severity    = regexp.MustCompile(`(?m)^\s+severity: (\w+)\s*$`)
	annotation  = regexp.MustCompile(`(?m)^\s+(summary|description): \S`)
	runbookHead = regexp.MustCompile(`(?m)^## (RedisProber\w+)\s*$`)
)

// TestEveryAlertHasARunbook reads the rule files as text (no Prometheus
// needed): every alert has a severity, a summary, a description and a
// runbook_url whose anchor is its own section of docs/runbooks.md, and every
// runbook section belongs to an alert.
func TestEveryAlertHasARunbook(t *testing.T) {
	root := repoRoot(t)
	files, err := filepath.Glob(filepath.Join(root, "alerts", "*.yml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no alerts/*.yml: %v", err)
	}
	book, err := os.ReadFile(filepath.Join(root, "docs", "runbooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]bool{}
	for _, m := range runbookHead.FindAllStringSubmatch(string(book), -1) {
		sections[m[1]] = true
	}

	alerts := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		starts := alertStart.FindAllStringSubmatchIndex(text, -1)
		for i, s := range starts {
			end := len(text)
			if i+1 < len(starts) {
				end = starts[i+1][0]
			}
			name, block := text[s[2]:s[3]], text[s[0]:end]
			if alerts[name] {
				t.Errorf("%s: alert defined twice", name)
			}
			alerts[name] = true
			if m := severity.FindStringSubmatch(block); m == nil || (m[1] != "critical" && m[1] != "warning") {
				t.Errorf("%s: severity must be critical or warning, got %v", name, m)
			}
			if n := len(annotation.FindAllString(block, -1)); n != 2 {
				t.Errorf("%s: want a summary and a description, found %d of them", name, n)
			}
			m := runbookURL.FindStringSubmatch(block)
			if want := runbookBase + strings.ToLower(name); m == nil || m[1] != want {
				t.Errorf("%s: runbook_url = %v, want %s", name, m, want)
			}
			if !sections[name] {
				t.Errorf("%s: docs/runbooks.md has no section \"## %s\"", name, name)
			}
		}
	}
	if len(alerts) == 0 {
		t.Fatal("no alerts found: has the rule file layout changed?")
	}
	for s := range sections {
		if !alerts[s] {
			t.Errorf("docs/runbooks.md has a section for %s, which is no alert", s)
		}
	}
}
