// Package layers holds the project's packages to the imports
// docs/architecture.md allows them, so the package map in the docs is the
// one the code has: a new import across layers fails the tests until the
// table says it may.
package layers

import (
	"bufio"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Allowed maps a package (its path in the module) to the project packages
// it may import.
type Allowed map[string][]string

// tableHeader starts the table in docs/architecture.md.
const tableHeader = "| package | owns | may import |"

// ReadTable reads the table that follows tableHeader: one row a package,
// the package, what it owns, and its allowed imports in backquotes ("—"
// for none).
func ReadTable(r io.Reader) (Allowed, error) {
	sc := bufio.NewScanner(r)
	allowed := Allowed{}
	in := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == tableHeader:
			in = true
			continue
		case !in:
			continue
		case !strings.HasPrefix(line, "|"):
			in = false
			continue
		case strings.HasPrefix(line, "| ---"):
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 3 {
			return nil, fmt.Errorf("table row %q: want 3 cells", line)
		}
		pkgs := quoted(cells[0])
		if len(pkgs) != 1 {
			return nil, fmt.Errorf("table row %q: want one package in its first cell", line)
		}
		if _, dup := allowed[pkgs[0]]; dup {
			return nil, fmt.Errorf("table row %q: %s is listed twice", line, pkgs[0])
		}
		allowed[pkgs[0]] = quoted(cells[2])
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(allowed) == 0 {
		return nil, fmt.Errorf("no table headed %q", tableHeader)
	}
	return allowed, nil
}

// quoted returns the words in backquotes of s.
func quoted(s string) []string {
	var out []string
	for i, part := range strings.Split(s, "`") {
		if i%2 == 1 && part != "" {
			out = append(out, part)
		}
	}
	return out
}

// Imports reads the project imports of every package under root, whatever
// its build tags, tests left out: module-relative package path to the
// module-relative paths it imports.
func Imports(root, module string, skip func(dir string) bool) (map[string][]string, error) {
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || skip(rel)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		pkg := path.Dir(rel)
		if _, ok := out[pkg]; !ok {
			out[pkg] = nil
		}
		for _, imp := range f.Imports {
			ip, _ := strconv.Unquote(imp.Path.Value)
			if own, ok := strings.CutPrefix(ip, module+"/"); ok && !slices.Contains(out[pkg], own) {
				out[pkg] = append(out[pkg], own)
			}
		}
		return nil
	})
	return out, err
}

// Check lists what breaks the table: a package it does not name, an
// import it does not allow, a row of a package that is gone.
func Check(allowed Allowed, imports map[string][]string) []string {
	var bad []string
	for pkg, imps := range imports {
		ok, listed := allowed[pkg]
		if !listed {
			bad = append(bad, fmt.Sprintf("%s is not in the table", pkg))
			continue
		}
		for _, imp := range imps {
			if !slices.Contains(ok, imp) {
				bad = append(bad, fmt.Sprintf("%s imports %s, which the table does not allow", pkg, imp))
			}
		}
	}
	for pkg := range allowed {
		if _, ok := imports[pkg]; !ok {
			bad = append(bad, fmt.Sprintf("the table names %s, which has no Go code", pkg))
		}
	}
	slices.Sort(bad)
	return bad
}

// CheckTree checks the module at root against its docs/architecture.md.
func CheckTree(root, module string, skip func(string) bool) ([]string, error) {
	f, err := os.Open(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	allowed, err := ReadTable(f)
	if err != nil {
		return nil, fmt.Errorf("docs/architecture.md: %w", err)
	}
	imports, err := Imports(root, module, skip)
	if err != nil {
		return nil, err
	}
	return Check(allowed, imports), nil
}
