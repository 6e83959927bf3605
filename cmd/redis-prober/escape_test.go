package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis-prober/redis-prober/internal/faulttest"
	"github.com/redis-prober/redis-prober/prober/report"
)

func bulk(s string) string { return fmt.Sprintf("$%d\r\n%s\r\n", len(s), s) }

// A server whose INFO and LATENCY LATEST carry terminal escape sequences
// (set the window title, clear the screen, colour): doctor prints them
// escaped.
func TestDoctorEscapesControlCharactersFromRedis(t *testing.T) {
	const title, clear, colour = "\x1b]0;pwned\x07", "\x1b[2J", "\x1b[31m"
	srv := faulttest.RESP(t, faulttest.Handshake(func(args []string) faulttest.Reply {
		switch args[0] {
		case "PING":
			return faulttest.Bytes("+PONG\r\n")
		case "INFO":
			return faulttest.Bytes(bulk("# Server\r\nredis_version:7.2.4" + title + "\r\nredis_mode:standalone\r\nprocess_id:1\r\n" +
				"# Replication\r\nrole:master" + clear + "\r\n# Memory\r\nmaxmemory:0\r\n"))
		case "LATENCY":
			return faulttest.Bytes("*1\r\n*4\r\n" + bulk("fork"+colour) + ":1700000000\r\n:5\r\n:10\r\n")
		case "CONFIG":
			return faulttest.Bytes("*0\r\n")
		}
		return faulttest.Bytes("-ERR unknown command\r\n")
	}))
	procfs, sysfs := hostTree(t, true)
	_, out, errOut := runDoctorCmd(t, "--redis.addr="+srv.Addr(), "--path.procfs="+procfs, "--path.sysfs="+sysfs, "--measure.duration=0s")
	if strings.ContainsAny(out+errOut, "\x1b\x07") {
		t.Fatalf("doctor printed raw control characters:\n%q\n%q", out, errOut)
	}
	if !strings.Contains(out, `7.2.4\x1b]0;pwned\a`) {
		t.Errorf("the version is not shown escaped:\n%s", out)
	}
}

// A report file whose names and environment carry escape sequences and a
// bidirectional override: compare's text and markdown show them escaped.
// (Invalid UTF-8 cannot come through JSON: the decoder makes it U+FFFD.)
func TestCompareEscapesControlCharactersFromReports(t *testing.T) {
	rep := synthetic(0, 1, "everysec\x1b[2J")
	rep.Target = "redis-a\x1b]0;pwned\x07"
	rep.Environment.Redis.Version = "7.2.4\u202e"
	for i := range rep.Trials {
		rep.Trials[i].Commands[0].Command = "set\x1b[31m"
	}
	var b bytes.Buffer
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	hostile := filepath.Join(t.TempDir(), "hostile\x1b[1m.json")
	if err := os.WriteFile(hostile, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"text", "markdown"} {
		t.Run(format, func(t *testing.T) {
			code, out, errOut := runCompare(t, "--output="+format, td("before.json"), hostile)
			if code == 2 {
				t.Fatalf("exit 2: %s", errOut)
			}
			if strings.ContainsAny(out+errOut, "\x1b\x07\u202e") {
				t.Fatalf("raw control characters or invalid UTF-8 in the output:\n%q", out)
			}
			for _, want := range []string{`set\x1b[31m`, `everysec\x1b[2J`, `7.2.4\u202e`, `hostile\x1b[1m.json`} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %s escaped:\n%s", want, out)
				}
			}
		})
	}
}

// The burst's tables print command names and environment values.
func TestReportRenderingEscapesControlCharacters(t *testing.T) {
	rep := synthetic(0, 1, "everysec")
	rep.StepPlan = &report.StepPlanReport{Start: 1000, Factor: 2, Precision: 0.05, StepSeconds: 1, MaxSteps: 2, ObjectiveSeconds: 0.001}
	rep.Capacity = &report.CapacityReport{Stop: "objective\x1b[2J"}
	rep.Environment.Redis.Role = "master\x1b]0;x\x07"
	rep.Environment.Redis.Config["maxmemory\x1b[1m"] = "0\r\n"
	var b bytes.Buffer
	if err := report.WriteStepMarkdown(&b, rep, "chart.svg"); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(b.String(), "\x1b\x07\r") {
		t.Fatalf("raw control characters in the markdown report:\n%q", b.String())
	}
	if !strings.Contains(b.String(), `master\x1b]0;x\a`) {
		t.Errorf("role not shown escaped:\n%s", b.String())
	}
}
