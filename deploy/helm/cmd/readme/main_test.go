package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateFlag = flag.Bool("update", false, "rewrite the chart README's values section")

const chart = "../../redis-prober"

// The README's values section is what values.yaml and the schema say now.
func TestReadmeIsCurrent(t *testing.T) {
	if *updateFlag {
		if err := update(chart); err != nil {
			t.Fatal(err)
		}
	}
	readme, err := os.ReadFile(filepath.Join(chart, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := render(chart, readme)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, readme) {
		t.Errorf("deploy/helm/redis-prober/README.md is stale: run go run ./deploy/helm/cmd/readme (or this test with -update)")
	}
	// Every top-level value has its row.
	for _, v := range []string{"`mode`", "`image.tag`", "`config.targets`", "`web.port`", "`dashboards.folder`"} {
		if !bytes.Contains(got, []byte("| "+v+" |")) {
			t.Errorf("no row for %s", v)
		}
	}
}

func TestRows(t *testing.T) {
	schema := map[string]any{"properties": map[string]any{
		"a": map[string]any{"type": "object", "properties": map[string]any{
			"b": map[string]any{"type": "integer"},
			"c": map[string]any{"type": []any{"boolean", "null"}},
		}},
		"free": map[string]any{"type": "object"},
	}}
	for _, tc := range []struct {
		name, values string
		want         []Row
		err          string
	}{
		{
			name:   "fields of a named object, its comment a row of its own",
			values: "# A is a.\n# Two lines.\na:\n  # B is b.\n  b: 3\n  c: null # c, on the line\n",
			want: []Row{
				{Path: "a", Type: "object", Doc: "A is a. Two lines."},
				{Path: "a.b", Type: "integer", Default: "3", Doc: "B is b."},
				{Path: "a.c", Type: "boolean or null", Default: "null", Doc: "c, on the line"},
			},
		},
		{
			name:   "a free-form object is one row; a commented-out example is not prose",
			values: "# Free.\n#  - example: 1\nfree: {x: 1}\n",
			want:   []Row{{Path: "free", Type: "object", Default: `{"x":1}`, Doc: "Free."}},
		},
		{name: "a value the schema lacks", values: "a:\n  d: 1\n", err: "no a.d"},
		{name: "a top-level value the schema lacks", values: "e: 1\n", err: "no e"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Rows([]byte(tc.values), schema)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("rows %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("row %d: %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// Every object of the schema that names its fields refuses others, so a
// misspelt value fails helm install instead of being ignored.
func TestSchemaObjectsAreClosed(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(chart, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	var check func(path string, s map[string]any)
	check = func(path string, s map[string]any) {
		props, ok := s["properties"].(map[string]any)
		if !ok {
			return
		}
		if s["additionalProperties"] != false {
			t.Errorf("%s: names its fields but lets others through (additionalProperties is not false)", path)
		}
		for k, v := range props {
			if sub, ok := v.(map[string]any); ok {
				check(path+"/"+k, sub)
			}
		}
	}
	check("", schema)
}
