package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/prober/report"
)

func TestCompareHugeFigureAgainstItselfIsValidJSONAndExit0(t *testing.T) {
	rep := synthetic(0, 1, "everysec")
	for i := range rep.Trials {
		tr := &rep.Trials[i]
		for j := range tr.Commands {
			tr.Commands[j].Latency.Percentiles[1].Ms = 1.7e308
			tr.Commands[j].OpsPerSec = 1.7e308
		}
		tr.Totals.Latency.Percentiles[1].Ms = 1.7e308
	}
	var b bytes.Buffer
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "huge.json")
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCompare(t, "--output=json", path, path)
	if code != 0 {
		t.Fatalf("exit %d, want 0 (stderr %q)", code, stderr)
	}
	if !json.Valid([]byte(stdout)) {
		t.Errorf("output is not valid JSON")
	}
}

func TestCompareRefusesHostileReportFiles(t *testing.T) {
	files := hostileFiles(t)
	big := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(big, bytes.Repeat([]byte(" "), maxReportBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	files["over the bound"] = big
	for kind, path := range files {
		t.Run(kind, func(t *testing.T) {
			code, stderr := runSplit(t, 30*time.Second, "compare", path, td("before.json"))
			out := strings.TrimSpace(stderr)
			if code != 2 || strings.Count(out, "\n") != 0 || !strings.Contains(out, path) {
				t.Errorf("exit %d, stderr %q: want 2 and one line naming %s", code, out, path)
			}
		})
	}
}

func TestCompareTwentyThousandCommandsFinishes(t *testing.T) {
	rep := synthetic(0, 1, "everysec")
	rep.Trials = rep.Trials[:2]
	for i := range rep.Trials {
		base := rep.Trials[i].Commands[0]
		cmds := make([]report.CommandReport, 20000)
		for j := range cmds {
			cmds[j] = base
			cmds[j].Command = fmt.Sprintf("cmd%05d", j)
		}
		rep.Trials[i].Commands = cmds
	}
	var b bytes.Buffer
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "many.json")
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	// The quadratic compare burnt over a minute on such a report; the
	// deadline is generous (the binary is built with -race, which slows
	// JSON decoding twentyfold), not a benchmark. prober's
	// TestCompareManyCommandsIsLinear times the comparison itself.
	// Two trials a side over 80,000 figures cannot rule anything out: the
	// verdict is inconclusive (exit 3); this test is about finishing.
	code, stderr := runSplit(t, 60*time.Second, "compare", "--output=json", path, path)
	if code != 0 && code != 3 {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}
