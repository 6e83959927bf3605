// Package scripts holds the shell scripts of make test, make demo and the
// benchmarks; its tests run them on fixture trees.
package scripts

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// aptFixture writes an /etc/apt tree with n source files of each format,
// every one naming the same mirror (as a host with a cloud image's sources
// beside the distribution's does), and returns its root.
func aptFixture(t *testing.T, n int, uri string) string {
	t.Helper()
	root := t.TempDir()
	d := filepath.Join(root, "sources.list.d")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		deb822 := fmt.Sprintf("Types: deb\nURIs: %s\nSuites: bookworm bookworm-updates\nComponents: main\n\n"+
			"Types: deb\nURIs: %s-security\nSuites: bookworm-security\nComponents: main\n", uri, uri)
		oneLine := fmt.Sprintf("deb %s bookworm main\n# deb http://elsewhere.invalid/debian bookworm main\n", uri)
		write(t, filepath.Join(d, fmt.Sprintf("m%03d.sources", i)), deb822)
		write(t, filepath.Join(d, fmt.Sprintf("m%03d.list", i)), oneLine)
	}
	return root
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func runPeers(t *testing.T, aptEtc string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{"./peers.sh"}, args...)...)
	cmd.Env = append(os.Environ(), "APT_ETC="+aptEtc, "PEERS_CACHE="+t.TempDir())
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// TestMirrorWithManySources is issue 28's make test that died of SIGPIPE
// ("Error 141", nothing else): with many source files naming the mirror,
// `mirror_uri | head -1` under pipefail killed the writer at random. Ten
// runs over 2×60 files made that near certain on the old script.
func TestMirrorWithManySources(t *testing.T) {
	const uri = "http://mirror.example/debian"
	for _, n := range []int{1, 2, 60} {
		etc := aptFixture(t, n, uri)
		for i := range 10 {
			out, errOut, err := runPeers(t, etc, "--print-mirror")
			if err != nil || strings.TrimSpace(out) != uri {
				t.Fatalf("%d files, run %d: --print-mirror = %q, %v; stderr %q; want %q", 2*n, i, out, err, errOut, uri)
			}
		}
	}
}

// TestPeersFailureSaysWhat: a failing step prints one line naming it, never
// a bare exit code.
func TestPeersFailureSaysWhat(t *testing.T) {
	etc := t.TempDir()
	write(t, filepath.Join(etc, "sources.list"), "deb http://mirror.example/debian-security bookworm-security main\n")
	out, errOut, err := runPeers(t, etc, "--print-mirror")
	if err == nil {
		t.Fatalf("--print-mirror with no archive succeeded: %q", out)
	}
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "ERROR: no Debian archive found") {
		t.Fatalf("stderr = %q, want one line naming the missing archive", errOut)
	}
}

// earlyClose matches a pipe into a reader that may stop reading before its
// writer is done: under pipefail the writer's SIGPIPE fails the pipeline.
var earlyClose = regexp.MustCompile(`\|\s*(head\b|grep\s+(-\w*[qm]|--quiet|--max-count)|awk\b[^|]*\bexit\b)`)

// TestNoEarlyCloseReaderUnderPipefail reads every script (and the Makefile)
// for the pattern that made make test die at random.
func TestNoEarlyCloseReaderUnderPipefail(t *testing.T) {
	files, err := filepath.Glob("*.sh")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../Makefile", "../.ci/run")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			code := strings.TrimSpace(line)
			if strings.HasPrefix(code, "#") {
				continue
			}
			// awk's exit in an END block comes after all input is read.
			if m := earlyClose.FindString(code); m != "" && !(strings.Contains(m, "awk") && strings.Contains(m, "END")) {
				t.Errorf("%s:%d: %q reads part of a pipe (SIGPIPE under pipefail): %s", f, i+1, m, code)
			}
		}
	}
}

// fakeGo writes a go command that lists n packages and "compiles" them with
// build -v, failing the build when fail is set.
func fakeGo(t *testing.T, n int, fail bool) string {
	t.Helper()
	exit := 0
	if fail {
		exit = 1
	}
	p := filepath.Join(t.TempDir(), "go")
	write(t, p, fmt.Sprintf(`#!/bin/sh
case "$1" in
mod) exit 0 ;;
list) seq %[1]d | sed 's|^|example.com/p|' ;;
build) seq %[1]d | sed 's|^|example.com/p|' >&2; [ %[2]d = 0 ] || echo "p7.go:1:1: syntax error" >&2; exit %[2]d ;;
esac
`, n, exit))
	if err := os.Chmod(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBuildSaysWhatItDoes is issue 28's first make demo, silent for 100 s
// while Go compiled: build.sh says a first build takes a minute or two
// before it starts, counts the packages as they compile, and a failure
// says so in one line with the compiler's own message.
func TestBuildSaysWhatItDoes(t *testing.T) {
	run := func(goBin string) (string, error) {
		cmd := exec.Command("bash", "./build.sh", filepath.Join(t.TempDir(), "bin"))
		cmd.Env = append(os.Environ(), "GO="+goBin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run(fakeGo(t, 120, false))
	if err != nil {
		t.Fatalf("build.sh: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.Contains(lines[0], "a minute or two") {
		t.Errorf("first line %q does not say how long a first build takes", lines[0])
	}
	for _, want := range []string{"compiled 50 of at most 120", "compiled 100 of at most 120", "120 packages compiled"} {
		if !strings.Contains(out, want) {
			t.Errorf("no progress %q in:\n%s", want, out)
		}
	}
	out, err = run(fakeGo(t, 10, true))
	if err == nil || !strings.Contains(out, "p7.go:1:1: syntax error") || !strings.Contains(out, "ERROR: go build failed") {
		t.Errorf("a failing build: err %v, output:\n%s", err, out)
	}
}

// fakeGoProxy writes a go command for peers.sh's Go-built entries: with
// offline set, every download fails as Go does without a network; else
// `go install` writes prometheus and promtool into GOBIN, each saying it
// is version 3.16.0. Every call is appended to the returned log.
func fakeGoProxy(t *testing.T, offline bool) (goBin, calls string) {
	t.Helper()
	dir := t.TempDir()
	calls = filepath.Join(dir, "calls")
	fail := ""
	if offline {
		fail = `echo 'go: github.com/prometheus/prometheus@v0.316.0: Get "https://proxy.golang.org/github.com/prometheus/prometheus/@v/v0.316.0.info": dial tcp: lookup proxy.golang.org: no such host' >&2; exit 1`
	}
	goBin = filepath.Join(dir, "go")
	write(t, goBin, fmt.Sprintf(`#!/bin/sh
echo "$*" >>%q
case "$1" in
env) case "$2" in GOPROXY) echo https://proxy.golang.org,direct ;; GOVERSION) echo go1.26.8 ;; esac ;;
mod) %s ;;
install)
	%s
	for b in prometheus promtool; do
		printf '#!/bin/sh\necho "%%s, version 3.16.0 (branch: HEAD, revision: v0.316.0)"\n' $b >"$GOBIN/$b"
		chmod +x "$GOBIN/$b"
	done ;;
esac
`, calls, fail, fail))
	if err := os.Chmod(goBin, 0o755); err != nil {
		t.Fatal(err)
	}
	return goBin, calls
}

// TestPeersGoBuild: the Prometheus built from its Go module lands in the
// cache with both binaries and a .complete marker, and a second run runs
// no go command at all. Where the module proxy cannot be reached, the
// entry is skipped with a message (exit 0), and under CI=true that fails
// in one line.
func TestPeersGoBuild(t *testing.T) {
	run := func(goBin, cache string, ci bool) (string, error) {
		cmd := exec.Command("bash", "./peers.sh")
		cmd.Env = append(os.Environ(), "GO="+goBin, "PEERS_CACHE="+cache, "PEERS_ONLY=prometheus-3.16", "CI=")
		if ci {
			cmd.Env = append(cmd.Env, "CI=true")
		}
		var e bytes.Buffer
		cmd.Stderr = &e
		err := cmd.Run()
		return e.String(), err
	}

	goBin, calls := fakeGoProxy(t, false)
	cache := t.TempDir()
	out, err := run(goBin, cache, false)
	if err != nil {
		t.Fatalf("peers.sh: %v\n%s", err, out)
	}
	for _, b := range []string{"prometheus", "promtool"} {
		if _, err := os.Stat(filepath.Join(cache, "prometheus-3.16", "bin", b)); err != nil {
			t.Errorf("no %s in the cache: %v\n%s", b, err, out)
		}
	}
	marker, err := os.ReadFile(filepath.Join(cache, "prometheus-3.16", ".complete"))
	if err != nil || !strings.Contains(string(marker), "github.com/prometheus/prometheus@v0.316.0") {
		t.Errorf(".complete = %q, %v", marker, err)
	}
	if _, err := os.Stat(filepath.Join(cache, "prometheus-3.16.work")); !os.IsNotExist(err) {
		t.Errorf("the build's work folder is left behind: %v", err)
	}
	log, _ := os.ReadFile(calls)
	if !strings.Contains(string(log), "install -trimpath") || !strings.Contains(string(log), "cmd/promtool@v0.316.0") {
		t.Errorf("go was called as:\n%s", log)
	}
	if err := os.Remove(calls); err != nil {
		t.Fatal(err)
	}
	out, err = run(goBin, cache, false)
	if err != nil || !strings.Contains(out, "cached: prometheus-3.16") {
		t.Errorf("second run: %v\n%s", err, out)
	}
	if log, err := os.ReadFile(calls); err == nil {
		t.Errorf("a warm cache ran go:\n%s", log)
	}

	offline, _ := fakeGoProxy(t, true)
	cache = t.TempDir()
	out, err = run(offline, cache, false)
	if err != nil || !strings.Contains(out, "SKIPPING prometheus-3.16: the Go module proxy is unreachable") {
		t.Errorf("offline, not CI: %v; want a SKIPPING line and exit 0:\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(cache, "prometheus-3.16")); !os.IsNotExist(err) {
		t.Errorf("offline: a cache entry is left behind: %v", err)
	}
	out, err = run(offline, cache, true)
	var errLines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "ERROR") {
			errLines = append(errLines, l)
		}
	}
	if err == nil || len(errLines) != 1 || !strings.Contains(errLines[0], "prometheus-3.16") {
		t.Errorf("offline under CI=true: %v; want a failure with one ERROR line naming the entry:\n%s", err, out)
	}
}

// TestMakefileServersArePeers: every server of the Makefile's matrix
// (SERVERS) is an entry peers.sh fetches into a folder of its name, so a
// server added to one is not forgotten in the other (make test would then
// skip it, or fail under CI, for want of a binary).
func TestMakefileServersArePeers(t *testing.T) {
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	sh, err := os.ReadFile("peers.sh")
	if err != nil {
		t.Fatal(err)
	}
	all := regexp.MustCompile(`(?m)^ALL="([^"]*)"`).FindSubmatch(sh)
	if all == nil {
		t.Fatal(`peers.sh has no ALL="..." line`)
	}
	entries := map[string]bool{}
	for _, e := range strings.Fields(string(all[1])) {
		entries[e] = true
	}
	block := regexp.MustCompile(`(?ms)^SERVERS\s*\?=(.*?)^#`).FindSubmatch(mk)
	if block == nil {
		t.Fatal("the Makefile has no SERVERS ?= block")
	}
	servers := regexp.MustCompile(`([a-z0-9.-]+)=\$\(PEERS_CACHE\)/([a-z0-9._-]+)/bin/`).FindAllSubmatch(block[1], -1)
	if len(servers) < 5 {
		t.Fatalf("SERVERS names %d servers, want Redis 8.0, the newest Redis 8, Valkey 8.0, 8.1 and 9.1 at least", len(servers))
	}
	for _, s := range servers {
		name, dir := string(s[1]), string(s[2])
		if name != dir || !entries[name] {
			t.Errorf("SERVERS has %s in the folder %s; peers.sh's entries are %s", name, dir, all[1])
		}
	}
	out, _, err := runPeers(t, t.TempDir(), "--print-env")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"VALKEY_9_1=", "REDIS_8="} {
		if !strings.Contains(out, v) {
			t.Errorf("--print-env lacks %s:\n%s", v, out)
		}
	}
}
