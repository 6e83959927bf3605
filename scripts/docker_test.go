package scripts

import (
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// No container engine runs where the tests do, so these check what goes
// into the image: the Dockerfile's stages and the build context that
// .dockerignore leaves.

type instruction struct{ cmd, args string }

// parseDockerfile splits a Dockerfile into stages of instructions, with
// continuation lines joined and comments dropped.
func parseDockerfile(t *testing.T, text string) [][]instruction {
	t.Helper()
	var stages [][]instruction
	var cur strings.Builder
	flush := func() {
		line := strings.TrimSpace(cur.String())
		cur.Reset()
		if line == "" {
			return
		}
		cmd, args, _ := strings.Cut(line, " ")
		in := instruction{strings.ToUpper(cmd), strings.TrimSpace(args)}
		if in.cmd == "FROM" {
			stages = append(stages, nil)
		}
		if len(stages) == 0 {
			if in.cmd != "ARG" {
				t.Fatalf("%s before the first FROM", in.cmd)
			}
			return
		}
		stages[len(stages)-1] = append(stages[len(stages)-1], in)
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		if s, ok := strings.CutSuffix(line, "\\"); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(line)
		flush()
	}
	flush()
	return stages
}

func find(stage []instruction, cmd string) []string {
	var out []string
	for _, in := range stage {
		if in.cmd == cmd {
			out = append(out, in.args)
		}
	}
	return out
}

func TestDockerfileBuildsMultiArchAndRunsAsNonRoot(t *testing.T) {
	b, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	stages := parseDockerfile(t, string(b))
	if len(stages) != 2 {
		t.Fatalf("%d stages, want a build stage and the image", len(stages))
	}
	build, final := stages[0], stages[1]

	// The Go stage runs on the builder's platform and cross-compiles.
	if from := build[0].args; !strings.HasPrefix(from, "--platform=$BUILDPLATFORM ") || !strings.HasSuffix(from, " AS build") {
		t.Errorf("build stage FROM %q: want --platform=$BUILDPLATFORM ... AS build", from)
	}
	args := strings.Join(find(build, "ARG"), " ")
	for _, a := range []string{"TARGETOS", "TARGETARCH", "VERSION", "REVISION"} {
		if !regexp.MustCompile(`\b` + a + `\b`).MatchString(args) {
			t.Errorf("build stage does not declare ARG %s", a)
		}
	}
	runs := strings.Join(find(build, "RUN"), "\n")
	for _, w := range []string{"GOOS=$TARGETOS", "GOARCH=$TARGETARCH", "make build", "VERSION=$VERSION", "REVISION=$REVISION"} {
		if !strings.Contains(runs, w) {
			t.Errorf("build stage's RUN lacks %s:\n%s", w, runs)
		}
	}

	// The image: distroless's non-root variant, a numeric non-root USER
	// (Kubernetes' runAsNonRoot can only verify a number), the binary the
	// ENTRYPOINT runs copied from the build stage.
	if from := final[0].args; !strings.HasPrefix(from, "gcr.io/distroless/static") || !strings.HasSuffix(from, ":nonroot") {
		t.Errorf("image FROM %q: want distroless static, nonroot", from)
	}
	users := find(final, "USER")
	if len(users) == 0 {
		t.Fatal("the image has no USER: it would run as root")
	}
	user := users[len(users)-1]
	uid, gid, _ := strings.Cut(user, ":")
	for _, id := range []string{uid, gid} {
		n, err := strconv.Atoi(id)
		if err != nil || n == 0 {
			t.Errorf("USER %s: want numeric, non-zero ids", user)
		}
	}
	var entry []string
	if e := find(final, "ENTRYPOINT"); len(e) != 1 || json.Unmarshal([]byte(e[0]), &entry) != nil || len(entry) == 0 {
		t.Fatalf("ENTRYPOINT %q: want one in exec (JSON) form", e)
	}
	copied := map[string]bool{}
	for _, c := range find(final, "COPY") {
		f := strings.Fields(c)
		if len(f) < 3 || f[0] != "--from=build" {
			t.Errorf("COPY %s: the image takes files from the build stage only", c)
			continue
		}
		dst := f[len(f)-1]
		for _, src := range f[1 : len(f)-1] {
			p := dst
			if strings.HasSuffix(dst, "/") {
				p = dst + path.Base(src)
			}
			copied[p] = true
		}
	}
	for _, want := range []string{entry[0], "/LICENSE", "/NOTICE"} {
		if !copied[want] {
			t.Errorf("the image lacks %s (copied: %v)", want, copied)
		}
	}
	if e := find(final, "EXPOSE"); len(e) != 1 || e[0] != "9379" {
		t.Errorf("EXPOSE %v, want 9379", e)
	}
}

// dockerignored reports whether Docker leaves a context path out: the last
// pattern that matches the path or one of its parents decides, ! negates.
func dockerignored(patterns []string, p string) bool {
	ignored := false
	for _, pat := range patterns {
		neg := strings.HasPrefix(pat, "!")
		pat = path.Clean(strings.TrimPrefix(strings.TrimPrefix(pat, "!"), "/"))
		re := "^" + strings.NewReplacer(`\*\*/`, `(.*/)?`, `\*`, `[^/]*`, `\?`, `[^/]`).Replace(regexp.QuoteMeta(pat)) + "(/.*)?$"
		if regexp.MustCompile(re).MatchString(p) {
			ignored = !neg
		}
	}
	return ignored
}

// The build context holds every tracked source and nothing of the host's
// builds: no .git (the image's context took it whole), no dist, no
// artifacts, no binary.
func TestDockerignore(t *testing.T) {
	b, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			patterns = append(patterns, l)
		}
	}
	for _, p := range []string{".git", ".git/objects/ab/cdef", "dist/redis-prober-0.1.0.linux-amd64.tar.gz",
		"artifacts/bench.json", "redis-prober", "bin/redis-prober", "prober/prober.test", "bench/refclient/refclient"} {
		if !dockerignored(patterns, p) {
			t.Errorf("%s goes into the build context", p)
		}
	}
	out, err := exec.Command("git", "-C", "..", "ls-files").Output()
	if err != nil {
		t.Skipf("SKIPPING the tracked files: git ls-files: %v", err)
	}
	left := map[string]bool{".gitignore": true, ".dockerignore": true, "Dockerfile": true}
	for _, f := range strings.Fields(string(out)) {
		if dockerignored(patterns, f) && !left[f] {
			t.Errorf("tracked %s is left out of the build context", f)
		}
	}
	for _, must := range []string{"go.mod", "go.sum", "Makefile", "LICENSE", "NOTICE", "cmd/redis-prober/main.go"} {
		if dockerignored(patterns, must) {
			t.Errorf("%s, which the build needs, is left out", must)
		}
	}
}
