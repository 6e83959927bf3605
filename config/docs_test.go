package config_test

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/redis-prober/redis-prober/config"
	"github.com/redis-prober/redis-prober/engine"
	"github.com/redis-prober/redis-prober/internal/redistest"
	"github.com/redis-prober/redis-prober/prober"
)

// docPath is the page that documents every field of the file.
const docPath = "../docs/configuration.md"

// yamlBlocks returns the ```yaml blocks of a Markdown page: on
// docs/configuration.md each of them is a complete config file.
func yamlBlocks(t *testing.T, page string) []string {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	var cur *strings.Builder
	for line := range strings.SplitSeq(string(b), "\n") {
		switch {
		case cur == nil && strings.TrimSpace(line) == "```yaml":
			cur = &strings.Builder{}
		case cur != nil && strings.TrimSpace(line) == "```":
			blocks = append(blocks, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	if cur != nil {
		t.Fatalf("%s: a yaml block is not closed", page)
	}
	return blocks
}

var exampleFile = regexp.MustCompile(`/etc/redis-prober/[A-Za-z0-9._-]+`)

// withLocalFiles points the /etc/redis-prober/ files of an example at
// throwaway ones: PEM files for the TLS fields, a password file otherwise.
func withLocalFiles(t *testing.T, text string) string {
	t.Helper()
	dir := t.TempDir()
	certs := redistest.NewCerts(t)
	return exampleFile.ReplaceAllStringFunc(text, func(path string) string {
		switch filepath.Base(path) {
		case "ca.pem":
			return certs.CAFile
		case "client.pem":
			return certs.CertFile
		case "client-key.pem":
			return certs.KeyFile
		}
		local := filepath.Join(dir, filepath.Base(path))
		if err := os.WriteFile(local, []byte("not-a-real-password\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return local
	})
}

// checkLikeRun applies the checks that the run command makes beyond Parse
// (engine/targets_file.go): addresses, command names and key prefixes.
func checkLikeRun(t *testing.T, f *config.File) {
	t.Helper()
	probe := func(where string, p config.Probe) {
		if len(p.Commands) > 0 {
			if _, err := prober.ParseCommands(strings.Join(p.Commands, ",")); err != nil {
				t.Errorf("%s.commands: %v", where, err)
			}
		}
		if p.KeyPrefix != nil {
			if err := prober.ValidatePrefix(*p.KeyPrefix); err != nil {
				t.Errorf("%s.key_prefix: %v", where, err)
			}
		}
	}
	probe("global.probe", f.Global.Probe)
	for _, tg := range f.Targets {
		probe(tg.Name+".probe", tg.Probe)
		addrs := []string{tg.Addr}
		if tg.Cluster != nil {
			addrs = tg.Cluster.Addrs
		}
		if tg.Sentinel != nil {
			addrs = tg.Sentinel.Addrs
		}
		for _, a := range addrs {
			if _, _, err := engine.ParseAddr(a); err != nil {
				t.Errorf("%s: address %q: %v", tg.Name, a, err)
			}
		}
	}
}

// Every example in docs/configuration.md, and the full example in testdata,
// is a file the prober accepts.
func TestDocExamplesParse(t *testing.T) {
	blocks := yamlBlocks(t, docPath)
	if len(blocks) < 3 {
		t.Fatalf("found %d yaml blocks in %s; the page lost its examples?", len(blocks), docPath)
	}
	example, err := os.ReadFile("testdata/example.yml")
	if err != nil {
		t.Fatal(err)
	}
	full := false
	for _, b := range blocks {
		full = full || b == string(example)
	}
	if !full {
		t.Errorf("%s does not show testdata/example.yml verbatim as its full example", docPath)
	}
	for i, text := range append(blocks, string(example)) {
		f, err := config.Parse([]byte(withLocalFiles(t, text)))
		if err != nil {
			t.Errorf("example %d does not parse: %v\n%s", i+1, err, text)
			continue
		}
		checkLikeRun(t, f)
	}
}

// yamlFields lists the yaml names of every field of the config types.
func yamlFields(typ reflect.Type, seen map[reflect.Type]bool, out map[string]bool) {
	for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
		typ = typ.Elem()
	}
	if typ.Kind() != reflect.Struct || seen[typ] {
		return
	}
	seen[typ] = true
	for f := range typ.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		out[name] = true
		yamlFields(f.Type, seen, out)
	}
}

// A field added to the file must be documented.
func TestEveryFieldIsDocumented(t *testing.T) {
	b, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]bool{}
	yamlFields(reflect.TypeFor[config.File](), map[reflect.Type]bool{}, fields)
	if len(fields) < 20 {
		t.Fatalf("found only %d fields: the reflection walk is broken", len(fields))
	}
	for name := range fields {
		if !strings.Contains(string(b), "`"+name+"`") {
			t.Errorf("field %s is not documented in %s", name, docPath)
		}
	}
}
