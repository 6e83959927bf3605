package scripts

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"debug/macho"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const releaseVersion = "0.1.0-test"

// releasePlatforms are the platforms make release builds, with how each
// binary's header names its machine.
var releasePlatforms = []struct {
	os, arch string
	machine  string
}{
	{"linux", "amd64", elf.EM_X86_64.String()},
	{"linux", "arm64", elf.EM_AARCH64.String()},
	{"darwin", "arm64", macho.CpuArm64.String()},
}

// TestMakeRelease runs `make release` as a maintainer would and checks what
// a user downloads: each tarball's files, each binary built for its
// platform, the linux/amd64 binary's --version, the chart, and that
// sha256sum -c passes. It cross-builds three binaries, minutes on a
// loaded host. RELEASE_DIST keeps the artifacts in that folder.
func TestMakeRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-builds every release binary")
	}
	for _, tool := range []string{"make", "tar", "sha256sum", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("SKIPPING: %s not found", tool)
		}
	}
	dist := os.Getenv("RELEASE_DIST")
	if dist == "" {
		dist = t.TempDir()
	}
	dist, err := filepath.Abs(dist)
	if err != nil {
		t.Fatal(err)
	}
	head := strings.TrimSpace(run(t, "..", "git", "rev-parse", "HEAD")) // what make stamps
	cmd := exec.Command("make", "--no-print-directory", "release", "VERSION="+releaseVersion, "DIST="+dist)
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make release: %v\n%s", err, out)
	}

	var want []string // the files every tarball holds, under its directory
	for _, pattern := range []string{"dashboards/*.json", "alerts/*.yml", "alerts/fallback/*.yml"} {
		m, err := filepath.Glob(filepath.Join("..", pattern))
		if err != nil || len(m) == 0 {
			t.Fatalf("%s: %v %v", pattern, m, err)
		}
		for _, f := range m {
			want = append(want, strings.TrimPrefix(f, "../"))
		}
	}
	want = append(want, "redis-prober", "LICENSE", "NOTICE", "README.md")
	slices.Sort(want)

	artifacts := []string{"redis-prober-" + releaseVersion + ".tgz"}
	for _, p := range releasePlatforms {
		dir := fmt.Sprintf("redis-prober-%s.%s-%s", releaseVersion, p.os, p.arch)
		artifacts = append(artifacts, dir+".tar.gz")
		t.Run(p.os+"-"+p.arch, func(t *testing.T) {
			files := readTarGz(t, filepath.Join(dist, dir+".tar.gz"))
			var got []string
			for name, f := range files {
				rel, ok := strings.CutPrefix(name, dir+"/")
				if !ok && name != dir {
					t.Errorf("%s is outside %s/", name, dir)
					continue
				}
				if f.mode.IsRegular() {
					got = append(got, rel)
				}
				if f.uid != 0 || f.gid != 0 {
					t.Errorf("%s owned by %d:%d, want 0:0", name, f.uid, f.gid)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("tarball holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			for _, same := range []string{"LICENSE", "NOTICE", "README.md", "alerts/alerts.yml"} {
				orig, err := os.ReadFile(filepath.Join("..", same))
				if err != nil {
					t.Fatal(err)
				}
				if f := files[dir+"/"+same]; f == nil || !bytes.Equal(f.data, orig) {
					t.Errorf("%s differs from the repository's", same)
				}
			}
			bin := files[dir+"/redis-prober"]
			if bin == nil {
				t.Fatal("no binary")
			}
			if bin.mode.Perm()&0o111 != 0o111 {
				t.Errorf("binary mode %v, want executable by all", bin.mode)
			}
			if got := machineOf(t, p.os, bin.data); got != p.machine {
				t.Errorf("binary built for %s, want %s", got, p.machine)
			}
			if p.os != runtime.GOOS || p.arch != runtime.GOARCH {
				return
			}
			exe := filepath.Join(t.TempDir(), "redis-prober")
			if err := os.WriteFile(exe, bin.data, 0o755); err != nil {
				t.Fatal(err)
			}
			out := run(t, ".", exe, "--version")
			for _, w := range []string{
				"redis-prober, version " + releaseVersion + " (branch: ",
				"revision: " + head,
				"build date:       20",
			} {
				if !strings.Contains(out, w) {
					t.Errorf("--version lacks %q:\n%s", w, out)
				}
			}
		})
	}

	t.Run("chart", func(t *testing.T) {
		files := readTarGz(t, filepath.Join(dist, "redis-prober-"+releaseVersion+".tgz"))
		chart := files["redis-prober/Chart.yaml"]
		if chart == nil {
			t.Fatalf("no redis-prober/Chart.yaml in the chart among %d files", len(files))
		}
		for _, w := range []string{"\nversion: " + releaseVersion + "\n", "\nappVersion: "} {
			if !strings.Contains(string(chart.data), w) {
				t.Errorf("Chart.yaml lacks %q:\n%s", w, chart.data)
			}
		}
		if !strings.Contains(string(chart.data), releaseVersion) {
			t.Errorf("Chart.yaml's appVersion is not %s:\n%s", releaseVersion, chart.data)
		}
		for _, must := range []string{"values.yaml", "values.schema.json", "templates/NOTES.txt", "README.md",
			"files/alerts/alerts.yml", "files/alerts/recording.yml", "files/dashboards/redis-latency.json"} {
			if files["redis-prober/"+must] == nil {
				t.Errorf("the chart lacks %s", must)
			}
		}
		for name := range files {
			if strings.HasSuffix(name, ".go") || strings.Contains(name, "/tests/") {
				t.Errorf("the chart holds %s, which .helmignore leaves out", name)
			}
		}
	})

	sums, err := os.ReadFile(filepath.Join(dist, "sha256sums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range artifacts {
		if !strings.Contains(string(sums), "  "+a+"\n") {
			t.Errorf("sha256sums.txt lacks %s:\n%s", a, sums)
		}
	}
	run(t, dist, "sha256sum", "--strict", "-c", "sha256sums.txt")
}

// make release without a VERSION refuses, rather than naming a release
// after git describe.
func TestMakeReleaseNeedsVersion(t *testing.T) {
	cmd := exec.Command("make", "--no-print-directory", "release", "DIST="+t.TempDir())
	cmd.Dir = ".."
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "VERSION=") })
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "needs VERSION") {
		t.Errorf("make release without VERSION: %v\n%s", err, out)
	}
	cmd = exec.Command("make", "--no-print-directory", "release", "VERSION=v1", "DIST="+t.TempDir())
	cmd.Dir = ".."
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "is not semantic") {
		t.Errorf("make release VERSION=v1: %v\n%s", err, out)
	}
}

// NOTICE is what scripts/notice.sh writes from today's module graph.
func TestNoticeIsCurrent(t *testing.T) {
	got := run(t, ".", "./notice.sh")
	want, err := os.ReadFile("../NOTICE")
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("NOTICE is stale: run scripts/notice.sh > NOTICE\ngot:\n%s", got)
	}
}

type tarFile struct {
	mode     os.FileMode
	uid, gid int
	data     []byte
}

func readTarGz(t *testing.T, path string) map[string]*tarFile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	files := map[string]*tarFile{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("%s: %s: %v", path, h.Name, err)
		}
		files[strings.TrimSuffix(h.Name, "/")] = &tarFile{mode: h.FileInfo().Mode(), uid: h.Uid, gid: h.Gid, data: data}
	}
}

// machineOf names the machine a binary's header says it runs on.
func machineOf(t *testing.T, goos string, b []byte) string {
	t.Helper()
	r := bytes.NewReader(b)
	if goos == "darwin" {
		f, err := macho.NewFile(r)
		if err != nil {
			t.Fatalf("not a Mach-O binary: %v", err)
		}
		return f.Cpu.String()
	}
	f, err := elf.NewFile(r)
	if err != nil {
		t.Fatalf("not an ELF binary: %v", err)
	}
	return f.Machine.String()
}

func run(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}
