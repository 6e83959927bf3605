package main

import (
	"strings"
	"testing"

	"github.com/redis-prober/redis-prober/internal/redistest"
)

// TestStartupSaysBurstsAreOn: periodic bursts are on by default and write
// keys, so the start-up log says so plainly, at WARN, with how to turn them
// off; with --burst.interval=0 it says nothing of them.
func TestStartupSaysBurstsAreOn(t *testing.T) {
	srv := redistest.Start(t)
	p := startProber(t, nil, "--redis.addr="+srv.URL())
	if _, err := p.stop(t); err != nil {
		t.Fatalf("stop: %v\n%s", err, p.stderr.String())
	}
	var line string
	for _, l := range strings.Split(p.stderr.String(), "\n") {
		if strings.Contains(l, "periodic bursts on") {
			line = l
		}
	}
	for _, want := range []string{"level=WARN", "2000 ops/s for 10s every 15m on each target", "writing up to 16 MiB of keys",
		"--burst.interval=0 turns them off"} {
		if !strings.Contains(line, want) {
			t.Errorf("start-up log line %q lacks %q\nlog:\n%s", line, want, p.stderr.String())
		}
	}

	off := startProber(t, nil, "--redis.addr="+srv.URL(), "--burst.interval=0")
	if _, err := off.stop(t); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if strings.Contains(off.stderr.String(), "periodic bursts") {
		t.Errorf("bursts off, yet the log mentions them:\n%s", off.stderr.String())
	}
}
