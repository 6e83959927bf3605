package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/promslog"
	promslogflag "github.com/prometheus/common/promslog/flag"
)

var updateFlagsDoc = flag.Bool("update", false, "rewrite docs/flags.md from the code")

const flagsDocPath = "../../docs/flags.md"

// flagsDoc renders every command's flags as docs/flags.md, from the same
// kingpin declarations --help reads.
func flagsDoc() string {
	app := kingpin.New(exporterName, "")
	app.Version("")
	promslogflag.AddFlags(app, &promslog.Config{})
	addCommands(app)
	m := app.Model()

	var b bytes.Buffer
	b.WriteString(`# Flags

<!-- Generated from the code: go test ./cmd/redis-prober -run TestFlagsDoc -update
     (TestFlagsDoc fails when this page is stale). -->

Every flag of every command, with its default. Settings that are not
flags (targets, per-target overrides, burst plans) are in the config file:
[configuration.md](configuration.md).

`)
	b.WriteString("## Every command\n\n")
	table(&b, m.Flags, false)
	for _, c := range m.Commands {
		title := "## `redis-prober " + c.Name + "`"
		if c.Default {
			title += " (the default command)"
		}
		fmt.Fprintf(&b, "%s\n\n%s\n\n", title, c.Help)
		table(&b, c.Flags, false)
		if hasHidden(c.Flags) {
			fmt.Fprintf(&b, "### Deprecated flags of `%s`\n\n", c.Name)
			b.WriteString("They still work in this release, hidden from `--help`, and each logs a warning at start; " +
				"`<plan>` is `--burst.plan`'s value.\n\n")
			table(&b, c.Flags, true)
		}
	}
	return b.String()
}

func hasHidden(flags []*kingpin.FlagModel) bool {
	for _, f := range flags {
		if f.Hidden {
			return true
		}
	}
	return false
}

// table lists the visible flags, or the hidden ones (kingpin's own hidden
// flags, --help-long and the like, left out).
func table(b *bytes.Buffer, flags []*kingpin.FlagModel, hidden bool) {
	if hidden {
		b.WriteString("| flag | default | instead |\n| --- | --- | --- |\n")
	} else {
		b.WriteString("| flag | default | meaning |\n| --- | --- | --- |\n")
	}
	for _, f := range flags {
		if f.Hidden != hidden || (hidden && !strings.HasPrefix(f.Help, "Deprecated")) {
			continue
		}
		name := "--" + f.Name
		if f.IsBoolFlag() {
			name = "--[no-]" + f.Name
		}
		help := f.Help
		if hidden {
			help = strings.TrimSuffix(strings.TrimPrefix(help, "Deprecated, goes in the next release: set "), " in --config.file.")
			help = "`" + help + "` in `--config.file`"
		}
		def := strings.Join(f.Default, ", ")
		if def != "" {
			def = "`" + def + "`"
		}
		fmt.Fprintf(b, "| `%s` | %s | %s |\n", name, cell(def), cell(help))
	}
	b.WriteString("\n")
}

func cell(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ") }

// docs/flags.md is what the code declares.
func TestFlagsDoc(t *testing.T) {
	want := flagsDoc()
	if *updateFlagsDoc {
		if err := os.WriteFile(flagsDocPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(flagsDocPath)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s is stale: go test ./cmd/redis-prober -run TestFlagsDoc -update", flagsDocPath)
	}
}

// Every hidden flag of run says what replaces it (and warns, see
// deprecated_test.go); none is hidden without a word.
func TestHiddenRunFlagsAreDeprecated(t *testing.T) {
	app := kingpin.New(exporterName, "")
	addCommands(app)
	n := 0
	for _, c := range app.Model().Commands {
		for _, f := range c.Flags {
			if f.Hidden {
				n++
				if c.Name != "run" || !strings.HasPrefix(f.Help, "Deprecated, goes in the next release: set ") {
					t.Errorf("%s --%s is hidden, help %q", c.Name, f.Name, f.Help)
				}
			}
		}
	}
	if n < 30 {
		t.Errorf("%d hidden flags; the --burst.* plan flags should be among them", n)
	}
}
