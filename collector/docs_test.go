package collector

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestDocsNameEveryCollectorAndCheck keeps docs/collectors.md in step with
// the collector list and the checks.
func TestDocsNameEveryCollectorAndCheck(t *testing.T) {
	b, err := os.ReadFile("../docs/collectors.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, d := range All() {
		if !strings.Contains(doc, "| `"+d.Name+"` |") {
			t.Errorf("docs/collectors.md has no row for collector %s", d.Name)
		}
	}
	for _, c := range Checks() {
		row := "| `" + c.ID + "` | " + string(c.Severity)
		if !strings.Contains(doc, row) {
			t.Errorf("docs/collectors.md has no row %q for check %s", row, c.ID)
		}
	}
}

// TestDocsNameEveryTargetMetric keeps the metric tables of
// docs/collectors.md in step with the Redis-side series: each family is
// named in full, or as a "/ `_suffix`" after its sibling
// (`redis_prober_memory_used_bytes` / `_rss_bytes`).
func TestDocsNameEveryTargetMetric(t *testing.T) {
	b, err := os.ReadFile("../docs/collectors.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	ch := make(chan *prometheus.Desc)
	go func() {
		s := NewTargets()
		s.Describe(ch)
		s.health.describe(ch)
		NewHostChecks(HostChecksConfig{}).Describe(ch)
		close(ch)
	}()
	re := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range ch {
		m := re.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("no name in %s", d)
		}
		name, found := m[1], strings.Contains(doc, "`"+m[1]+"`") || strings.Contains(doc, "`"+m[1]+"{")
		for i := strings.Index(name, "_"); !found && i >= 0; i = strings.Index(name[i+1:], "_") + i + 1 {
			found = strings.Contains(doc, "`_"+name[i+1:]+"`") && strings.Contains(doc, "`"+name[:i+1])
			if !strings.Contains(name[i+1:], "_") {
				break
			}
		}
		if !found {
			t.Errorf("docs/collectors.md does not name %s", name)
		}
	}
}
