package buildinfo

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
)

func TestComplete(t *testing.T) {
	vcs := []debug.BuildSetting{
		{Key: "-trimpath", Value: "true"},
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-12-07T19:58:01Z"},
		{Key: "vcs.modified", Value: "false"},
	}
	dirty := append([]debug.BuildSetting{}, vcs...)
	dirty[len(dirty)-1].Value = "true"
	stamped := Info{Version: "0.1.0", Revision: "abc", Branch: "main", BuildUser: "ci", BuildDate: "20261207-20:00:00"}

	for _, tc := range []struct {
		name string
		have Info
		bi   *debug.BuildInfo
		want Info
	}{
		{
			name: "go install of a tag",
			bi:   &debug.BuildInfo{Main: debug.Module{Version: "v0.1.0"}, Settings: vcs},
			want: Info{Version: "0.1.0", Revision: "0123456789abcdef0123456789abcdef01234567", Branch: unknown, BuildUser: unknown, BuildDate: "20261207-19:58:01"},
		},
		{
			name: "go build of a dirty tree",
			bi:   &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261207195801-0123456789ab+dirty"}, Settings: dirty},
			want: Info{Version: "0.0.0-20261207195801-0123456789ab+dirty", Revision: "0123456789abcdef0123456789abcdef01234567-modified", Branch: unknown, BuildUser: unknown, BuildDate: "20261207-19:58:01"},
		},
		{
			name: "no VCS stamps (-buildvcs=false)",
			bi:   &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			want: Info{Version: "(devel)", Revision: unknown, Branch: unknown, BuildUser: unknown, BuildDate: unknown},
		},
		{
			name: "no build info at all",
			want: Info{Version: unknown, Revision: unknown, Branch: unknown, BuildUser: unknown, BuildDate: unknown},
		},
		{
			name: "linker flags win",
			have: stamped,
			bi:   &debug.BuildInfo{Main: debug.Module{Version: "v9.9.9"}, Settings: dirty},
			want: stamped,
		},
		{
			name: "a linker flag left out is filled",
			have: Info{Version: "0.1.0"},
			bi:   &debug.BuildInfo{Main: debug.Module{Version: "v9.9.9"}, Settings: vcs},
			want: Info{Version: "0.1.0", Revision: "0123456789abcdef0123456789abcdef01234567", Branch: unknown, BuildUser: unknown, BuildDate: "20261207-19:58:01"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Complete(tc.have, tc.bi); got != tc.want {
				t.Errorf("Complete:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// A plain `go build` (VCS stamping on, which the environment may have
// turned off through GOFLAGS) prints the commit it was built from and no
// empty field; linker flags still decide when given. The build runs in a
// fresh repository holding this package, its program and go.mod: Go stamps
// no VCS data in a git worktree (.git is a file there), and the test then
// knows the commit, the tag and whether the tree is dirty.
func TestPlainBuildReportsWhatGoRecorded(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("SKIPPING: no git: %v", err)
	}
	repo := t.TempDir()
	for _, f := range []string{"go.mod", "go.sum", "internal/buildinfo/buildinfo.go", "internal/buildinfo/testdata/printversion/main.go"} {
		b, err := os.ReadFile(filepath.Join("..", "..", f))
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(repo, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.invalid"}, args...)...)
		cmd.Dir = repo
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-q", "-m", "c", "--date=2026-12-07T19:58:01Z")
	head := git("rev-parse", "HEAD")
	git("tag", "v0.1.0")

	bin := filepath.Join(t.TempDir(), "printversion")
	for _, tc := range []struct {
		name    string
		dirty   bool
		ldflags string
		want    []string
	}{
		{name: "tagged", want: []string{
			`version 0\.1\.0 \(branch: unknown, revision: ` + head + `\)`,
			`build date:\s+\d{8}-\d\d:\d\d:\d\d`,
		}},
		{name: "stamped", ldflags: "-X github.com/prometheus/common/version.Version=2.0.0 -X github.com/prometheus/common/version.Branch=release",
			want: []string{`version 2\.0\.0 \(branch: release, revision: ` + head + `\)`}},
		{name: "dirty", dirty: true, want: []string{
			`version 0\.1\.0\+dirty \(branch: unknown, revision: ` + head + `-modified\)`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.dirty {
				if err := os.WriteFile(filepath.Join(repo, "untracked.txt"), []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			build := exec.Command("go", "build", "-buildvcs=true", "-ldflags="+tc.ldflags, "-o", bin, "./internal/buildinfo/testdata/printversion")
			build.Dir = repo
			build.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("go build: %v\n%s", err, out)
			}
			out, err := exec.Command(bin).Output()
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !regexp.MustCompile(w).Match(out) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			// An empty field shows as a colon followed by nothing, or ", ".
			if regexp.MustCompile(`(?m):\s*$|: ,|version \(`).Match(out) {
				t.Errorf("an empty field:\n%s", out)
			}
		})
	}
}
