// Package buildinfo fills in the build information of
// prometheus/common/version that the linker flags of `make build` and
// `make release` stamp, from what the Go toolchain recorded in the binary,
// so a plain `go build` or `go install` still says which code it runs.
package buildinfo

import (
	"runtime/debug"
	"strings"
	"time"

	"github.com/prometheus/common/version"
)

// unknown stands for a field neither the linker flags nor the toolchain
// knew: a blank in `--version` reads like a bug, "unknown" like a fact.
const unknown = "unknown"

// Info is the part of prometheus/common/version a build stamps.
type Info struct {
	Version, Revision, Branch, BuildUser, BuildDate string
}

// Fill sets the fields of prometheus/common/version that the linker flags
// left empty. main calls it once, before anything reads them; the version
// package's variables are the process's one piece of global build state.
func Fill() {
	bi, _ := debug.ReadBuildInfo() // nil when the binary has none
	got := Complete(Info{
		Version:   version.Version,
		Revision:  version.Revision,
		Branch:    version.Branch,
		BuildUser: version.BuildUser,
		BuildDate: version.BuildDate,
	}, bi)
	version.Version, version.Revision, version.Branch = got.Version, got.Revision, got.Branch
	version.BuildUser, version.BuildDate = got.BuildUser, got.BuildDate
}

// Complete returns have with every empty field taken from bi: the main
// module's version (a tag, or Go's pseudo-version of the commit), the
// commit (with -modified for a dirty tree, as the version package says it)
// and the commit's time standing in for the build date. The branch is not
// recorded by Go, nor is the user. Fields the linker set are kept as they are.
func Complete(have Info, bi *debug.BuildInfo) Info {
	var rev, at string
	modified := false
	ver := ""
	if bi != nil {
		if v := bi.Main.Version; v != "" {
			ver = strings.TrimPrefix(v, "v")
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				if t, err := time.Parse(time.RFC3339, s.Value); err == nil {
					// The format of the Makefile's BuildDate.
					at = t.UTC().Format("20060102-15:04:05")
				}
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if rev != "" && modified {
		rev += "-modified"
	}
	set := func(field *string, v string) {
		if *field != "" {
			return
		}
		if v == "" {
			v = unknown
		}
		*field = v
	}
	set(&have.Version, ver)
	set(&have.Revision, rev)
	set(&have.Branch, "")
	set(&have.BuildUser, "")
	set(&have.BuildDate, at)
	return have
}
