package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/alecthomas/kingpin/v2"
)

func TestPathFlagSharesTheCollectorsFlag(t *testing.T) {
	app := kingpin.New("test", "")
	cmd := app.Command("run", "")
	addCollectorRunFlags(cmd)
	procfs := pathFlag(cmd, "path.procfs", "/proc")  // declared by the collectors
	other := pathFlag(cmd, "path.elsewhere", "/def") // declared here
	if _, err := app.Parse([]string{"run", "--path.procfs=/host/proc"}); err != nil {
		t.Fatal(err)
	}
	if procfs() != "/host/proc" || other() != "/def" {
		t.Fatalf("procfs %q, other %q", procfs(), other())
	}
}

func TestChangeFlagsBadValuesExit2(t *testing.T) {
	for _, tc := range []struct{ arg, flag string }{
		{"--changes.interval=10ms", "--changes.interval"},
		{"--changes.window=30s", "--changes.window"},
		{"--changes.interval=20m", "--changes.window"}, // the window must be twice the interval
		{"--changes.interval=soon", "--changes.interval"},
	} {
		var stdout, stderr bytes.Buffer
		code := realMain([]string{"run", "--redis.addr=127.0.0.1:1", "--web.listen-address=127.0.0.1:0", tc.arg}, &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), tc.flag) || strings.Count(strings.TrimSpace(stderr.String()), "\n") > 0 {
			t.Errorf("%s: exit %d, stderr %q; want 2 and one line naming %s", tc.arg, code, stderr.String(), tc.flag)
		}
	}
}
