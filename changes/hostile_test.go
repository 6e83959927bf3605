package changes

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/redis-prober/redis-prober/collector"
	"github.com/redis-prober/redis-prober/internal/faulttest"
	"github.com/redis-prober/redis-prober/internal/host"
)

// TestServerInfoFromAHostileServer: a server whose INFO redis_version and
// role are not valid UTF-8 and carry escape sequences panicked in
// MustNewConstMetric on every scrape (issue 11). Now redis_prober_server_info
// carries the values made safe by collector.LabelValue, and gathers cleanly.
func TestServerInfoFromAHostileServer(t *testing.T) {
	info := "# Server\r\nredis_version:7.2.5\xff\x1b[2J" + strings.Repeat("x", 500) + "\r\nrun_id:\xff\r\n# Replication\r\nrole:mas\xc3ter\x07\r\n"
	srv := faulttest.RESP(t, faulttest.Handshake(func(args []string) faulttest.Reply {
		switch args[0] {
		case "INFO":
			return faulttest.Bytes(fmt.Sprintf("$%d\r\n%s\r\n", len(info), info))
		case "CONFIG":
			return faulttest.Bytes("-NOPERM this user has no permissions to run the 'config|get' command\r\n")
		}
		return faulttest.Bytes("-ERR unknown command\r\n")
	}))
	r := newChangesRig(t, host.Paths{ProcFS: t.TempDir(), SysFS: t.TempDir()})
	r.run("hostile", "", srv.Addr(), nil)
	r.rounds(3)
	got := r.gather("redis_prober_server_info") // fails on a gather error
	if len(got) != 1 {
		t.Fatalf("server_info = %v", got)
	}
	version, role := label(got[0], "version"), label(got[0], "role")
	if want := collector.LabelValue("7.2.5\xff\x1b[2J" + strings.Repeat("x", 500)); version != want || len(version) > collector.MaxLabelValueLen {
		t.Errorf("version = %q, want %q", version, want)
	}
	if role != "mas\uFFFDter\uFFFD" {
		t.Errorf("role = %q", role)
	}
	for _, v := range []string{version, role} {
		if !utf8.ValidString(v) || strings.ContainsAny(v, "\x1b\x07") {
			t.Errorf("label %q is not sanitised", v)
		}
	}
	if logs := r.logs.String(); strings.Contains(logs, "level=ERROR") {
		t.Errorf("errors logged:\n%s", logs)
	}
}
