package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// check is one PromQL expression the test evaluates.
type check struct {
	where string // dashboard file and panel, or rule group and name
	expr  string
	// mustHaveData: an empty result fails the test (unless the expression
	// reads a pending metric or a file this host lacks). Alert expressions
	// only have to evaluate.
	mustHaveData bool
}

// dashboardChecks reads every PromQL expression of the committed dashboards:
// panel queries, annotations, and the label_values() of query variables
// (turned into the series selector Grafana runs).
func dashboardChecks(t *testing.T, root string, vars *strings.Replacer) []check {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "dashboards", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards/*.json under %s (%v)", root, err)
	}
	var out []check
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		name := filepath.Base(f)
		walk(doc, name, func(where, expr string) {
			out = append(out, check{where: where, expr: substitute(t, vars, where, expr), mustHaveData: true})
		})
	}
	return out
}

var labelValues = regexp.MustCompile(`^label_values\((.+),\s*(\w+)\)$`)

// walk calls found for every "expr" string and every label_values variable
// query in v; where names the enclosing panel (or annotation, variable).
func walk(v any, where string, found func(where, expr string)) {
	switch x := v.(type) {
	case map[string]any:
		if title, ok := x["title"].(string); ok {
			where = where + " / " + title
		} else if name, ok := x["name"].(string); ok {
			where = where + " / " + name
		}
		if e, ok := x["expr"].(string); ok && e != "" {
			found(where, e)
		}
		if x["type"] == "query" {
			if q, ok := x["query"].(string); ok {
				if m := labelValues.FindStringSubmatch(q); m != nil {
					found(where, fmt.Sprintf("count by (%s) (%s)", m[2], m[1]))
				}
			}
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			walk(x[k], where, found)
		}
	case []any:
		for _, e := range x {
			walk(e, where, found)
		}
	}
}

// substitute replaces Grafana variables the way Grafana would for the test's
// single target and the default commands, and fails on any it does not know.
func substitute(t *testing.T, vars *strings.Replacer, where, expr string) string {
	t.Helper()
	out := vars.Replace(expr)
	if strings.Contains(out, "$") {
		t.Errorf("%s: unknown Grafana variable left in %q", where, out)
	}
	return out
}

// grafanaVars substitutes $target and $command as Grafana does for a
// multi-value regex variable (values regex-escaped, backslashes doubled
// inside the PromQL string), and $__rate_interval with one minute: four
// times the test's 1 s scrape interval and more, like Grafana's own rule.
func grafanaVars(target string, commands []string) *strings.Replacer {
	esc := func(s string) string { return strings.ReplaceAll(regexp.QuoteMeta(s), `\`, `\\`) }
	quoted := make([]string, len(commands))
	for i, c := range commands {
		quoted[i] = esc(c)
	}
	return strings.NewReplacer(
		"$__rate_interval", "1m",
		"${target}", esc(target),
		"$target", esc(target),
		"${command}", "("+strings.Join(quoted, "|")+")",
		"$command", "("+strings.Join(quoted, "|")+")",
	)
}

var (
	metricName = regexp.MustCompile(`\b(?:[a-z_]+:[a-zA-Z0-9_:]+|redis_prober_[a-z0-9_]+)\b`)
	histSuffix = regexp.MustCompile(`_(bucket|count|sum)$`)
)

// metricsOf lists the metric names expr reads, with recorded series replaced
// by what their rules read (recorded maps a rule name to its expression) and
// histogram suffixes dropped.
func metricsOf(expr string, recorded map[string]string) []string {
	seen := map[string]bool{}
	var visit func(string, int)
	visit = func(e string, depth int) {
		for _, m := range metricName.FindAllString(e, -1) {
			if src, ok := recorded[m]; ok && depth < 5 {
				visit(src, depth+1)
				continue
			}
			seen[histSuffix.ReplaceAllString(m, "")] = true
		}
	}
	visit(expr, 0)
	out := make([]string, 0, len(seen))
	for m := range seen {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

var promqlBlock = regexp.MustCompile("(?s)```promql\n(.*?)```")

var (
	ruleName   = regexp.MustCompile(`\b[a-z_]+:[a-z0-9_]+:[a-z0-9_]+\b`)
	recordLine = regexp.MustCompile(`(?m)^\s+- record: (\S+)\s*$`)
)

// docChecks are the queries of the docs, which users paste as they are: each
// must at least evaluate, and every recording rule it names must be one the
// rule files record (a query of a rule that went evaluates to nothing and
// would pass).
func docChecks(t *testing.T, root string) []check {
	t.Helper()
	records := map[string]bool{}
	for _, glob := range []string{"alerts/*.yml", "alerts/fallback/*.yml"} {
		files, err := filepath.Glob(filepath.Join(root, glob))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range recordLine.FindAllStringSubmatch(string(b), -1) {
				records[m[1]] = true
			}
		}
	}
	var out []check
	for _, doc := range []string{"dashboards-and-alerts.md", "runbooks.md"} {
		b, err := os.ReadFile(filepath.Join(root, "docs", doc))
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range promqlBlock.FindAllStringSubmatch(string(b), -1) {
			where := fmt.Sprintf("docs/%s query %d", doc, i+1)
			for _, name := range ruleName.FindAllString(m[1], -1) {
				if !records[name] {
					t.Errorf("%s names the recording rule %s, which no alerts/*.yml records", where, name)
				}
			}
			out = append(out, check{where: where, expr: m[1]})
		}
	}
	if len(out) == 0 {
		t.Fatal("no promql blocks in docs/: has the layout changed?")
	}
	return out
}
