// Package figures finds measured figures in Go comments. A comment says
// why; a measurement in it goes stale where nobody re-runs it, so the
// figure lives once in docs/performance.md (or the dated lab notes) and
// the comment points there. Limits and design bounds stated as rules
// ("at most 8 MiB", "a 250 ms timeout") are not measurements and pass.
package figures

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

const (
	number = `\d[\d,.]*`
	// unit is one of time, size, share or ratio, or a count of allocations.
	unit = `\s?(?:ns|µs|us|ms|%|KiB|MiB|GiB|KB|MB|GB|×|allocations)(?:\W|$)`
)

var (
	// A range of a quantity (two numbers and one unit): a bound is one
	// number, a spread of runs is two.
	rangeRE = regexp.MustCompile(number + `\s?[-–]\s?` + number + unit)
	// A quantity, not an exponent (2^20 µs) nor a precision (±9 %), in a
	// sentence that says it was observed.
	quantityRE = regexp.MustCompile(`(?:^|[^^±\w.,])` + number + unit)
	observedRE = regexp.MustCompile(`(?i)\b(?:took|cost|costs|costing|measured|was|were|used|spent|saved|against|stayed|allocated)\b|\bBenchmark[A-Z]\w*|\b(?:test|this|small) VM\b`)
	// What is a bound, a rule or a supposition and not an observation:
	// at least 200 ms, 200 ms at the least, for over 10 ms, every 20 µs,
	// as if it were. Taken out before the observed rule looks.
	boundRE = regexp.MustCompile(`(?i)\bat (?:the )?(?:least|most)\s+(?:\S+\s+){0,2}?` + number + unit + `|\b(?:up to|for over|no more than|every)\s+` + number + unit + `|` + number + `\s?\S+\s+at (?:the )?least|\bif (?:it|they) were\b`)
	// A share of a resource, in words or as a percentage: of a core, of
	// the prober's CPU or heap.
	shareRE = regexp.MustCompile(`(?i)\b(?:half|third|quarter|fifth|sixth|tenth|eighth|twentieth|\d[\d.]*\s?%)\s+of\s+(?:(?:a|one|the|its|all|their)\s+(?:core|cpu|prober's|heap|live heap|allocations|profile|throughput|(?:protobuf )?scrape|gathering)|what (?:the prober|a scrape) allocated)`)
	// Quoted text is a name or an example ("Measured reasons", "16MiB").
	quotedRE = regexp.MustCompile(`"[^"]*"|` + "`[^`]*`")
	// Sentences end at a stop followed by a space, so a decimal stays whole.
	sentenceRE = regexp.MustCompile(`[.;!?]\s+|\s+-\s+`)
)

// Flags tells whether a sentence of a comment reads as a measured figure,
// and which rule says so.
func Flags(sentence string) (string, bool) {
	sentence = quotedRE.ReplaceAllString(sentence, "")
	if m := rangeRE.FindString(sentence); m != "" {
		return "range " + strings.TrimSpace(m), true
	}
	if m := shareRE.FindString(sentence); m != "" {
		return "share " + m, true
	}
	rest := boundRE.ReplaceAllString(sentence, "")
	if q := quantityRE.FindString(rest); q != "" {
		if w := observedRE.FindString(rest); w != "" {
			return fmt.Sprintf("%q beside %s", w, strings.TrimSpace(q)), true
		}
	}
	return "", false
}

// Finding is a comment sentence that reads as a measured figure.
type Finding struct {
	Pos    token.Position
	Rule   string
	Phrase string
}

func (f Finding) String() string {
	return fmt.Sprintf("%s: a measured figure in a comment (%s): %q", f.Pos, f.Rule, f.Phrase)
}

// File checks the comments of one Go source.
func File(fset *token.FileSet, name string, src []byte) ([]Finding, error) {
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", name, err)
	}
	var out []Finding
	for _, g := range f.Comments {
		out = append(out, group(fset, g)...)
	}
	return out, nil
}

// group checks a comment group sentence by sentence, so a figure broken
// over two lines is seen whole; a finding is placed on the line where its
// sentence starts.
func group(fset *token.FileSet, g *ast.CommentGroup) []Finding {
	var (
		text  strings.Builder
		lines []int // lines[i]: the source line of text's byte i
	)
	for _, c := range g.List {
		line := fset.Position(c.Pos()).Line
		body := strings.TrimPrefix(strings.TrimPrefix(c.Text, "//"), "/*")
		body = strings.TrimSuffix(body, "*/")
		for i, l := range strings.Split(body, "\n") {
			l = strings.TrimSpace(l) + " "
			text.WriteString(l)
			for range len(l) {
				lines = append(lines, line+i)
			}
		}
	}
	s := text.String()
	var out []Finding
	start := 0
	emit := func(end int) {
		sentence := strings.TrimSpace(s[start:end])
		if rule, ok := Flags(sentence); ok {
			pos := fset.Position(g.Pos())
			pos.Line, pos.Column = lines[start], 0
			out = append(out, Finding{Pos: pos, Rule: rule, Phrase: sentence})
		}
	}
	for _, m := range sentenceRE.FindAllStringIndex(s, -1) {
		emit(m[0])
		start = m[1]
	}
	if start < len(s) {
		emit(len(s))
	}
	return out
}

// Tree checks the production Go files under root: not tests, not the
// benchmark programs under bench/, not testdata.
func Tree(root string) ([]Finding, error) {
	fset := token.NewFileSet()
	var out []Finding
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			name := d.Name()
			if rel == "bench" || name == "testdata" || name == "vendor" || (strings.HasPrefix(name, ".") && rel != ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		found, err := File(fset, rel, src)
		out = append(out, found...)
		return err
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].Pos.Filename != out[j].Pos.Filename {
			return out[i].Pos.Filename < out[j].Pos.Filename
		}
		return out[i].Pos.Line < out[j].Pos.Line
	})
	return out, err
}
