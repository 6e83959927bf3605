package layers

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestReadTable(t *testing.T) {
	t.Parallel()
	doc := `# Architecture

| package | owns | may import |
| --- | --- | --- |
| ` + "`wire`" + ` | connections | — |
| ` + "`prober`" + ` | the probe | ` + "`wire`, `internal/resp`" + ` |

after the table
| not | a row |
`
	got, err := ReadTable(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := Allowed{"wire": nil, "prober": {"wire", "internal/resp"}}
	if len(got) != len(want) || !slices.Equal(got["prober"], want["prober"]) || len(got["wire"]) != 0 {
		t.Errorf("ReadTable = %v, want %v", got, want)
	}
	for _, bad := range []string{
		"no table here",
		tableHeader + "\n| `a` | `b` |\n",
		tableHeader + "\n| `a` `b` | x | — |\n",
		tableHeader + "\n| `a` | x | — |\n| `a` | y | — |\n",
	} {
		if _, err := ReadTable(strings.NewReader(bad)); err == nil {
			t.Errorf("ReadTable(%q) took it", bad)
		}
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	allowed := Allowed{"wire": nil, "prober": {"wire"}, "gone": nil}
	imports := map[string][]string{"wire": {"prober"}, "prober": {"wire"}, "new": nil}
	want := []string{
		"new is not in the table",
		"the table names gone, which has no Go code",
		"wire imports prober, which the table does not allow",
	}
	if got := Check(allowed, imports); !slices.Equal(got, want) {
		t.Errorf("Check =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestTreeKeepsItsLayers: every package of the module imports only what
// docs/architecture.md's table allows it.
func TestTreeKeepsItsLayers(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	// bench/ holds programs measured beside the prober, not parts of it.
	skip := func(dir string) bool { return dir == "bench" }
	bad, err := CheckTree(root, "github.com/redis-prober/redis-prober", skip)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
}
