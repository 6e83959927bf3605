package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/alecthomas/kingpin/v2"
)

// The collectors and the change watch read the host under one pair of
// --path.* flags, declared once (kingpin refuses a flag declared twice).
func TestPathFlagsDeclaredOnce(t *testing.T) {
	app := kingpin.New("test", "")
	cmd := app.Command("run", "")
	paths := addPathFlags(cmd)
	addCollectorRunFlags(cmd, paths)
	addChangeRunFlags(cmd, paths)
	if _, err := app.Parse([]string{"run", "--path.procfs=/host/proc", "--path.sysfs=/host/sys"}); err != nil {
		t.Fatal(err)
	}
	if got := paths.paths(); got.ProcFS != "/host/proc" || got.SysFS != "/host/sys" {
		t.Fatalf("paths %+v", got)
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
