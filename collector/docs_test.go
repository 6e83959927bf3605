package collector

import (
	"os"
	"strings"
	"testing"
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
