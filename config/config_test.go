package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseValid(t *testing.T) {
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Parse([]byte(`
global:
  probe:
    rate: 20
    timeout: 500ms
    commands: [ping, get]
  objective: 2ms
targets:
  - name: cache
    addr: redis://127.0.0.1:6379
    password_file: ` + pw + `
    labels: {team: payments, tier: gold}
    probe:
      rate: 50
  - name: sessions
    cluster:
      addrs: [redis://127.0.0.1:7000]
  - name: queue
    sentinel:
      master_name: mymaster
      addrs: [127.0.0.1:26379]
    labels: {team: infra}
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Targets) != 3 || *f.Targets[0].Probe.Rate != 50 || time.Duration(*f.Global.Probe.Timeout) != 500*time.Millisecond {
		t.Errorf("parsed %+v", f)
	}
	if strings.Join(f.Global.Labels, ",") != "team,tier" {
		t.Errorf("label union = %v", f.Global.Labels)
	}
}

func TestParseErrorsNameFieldAndLine(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"unknown field", "targets:\n  - name: a\n    adr: x\n", `line 3: targets[0]: unknown field "adr" (did you mean addr?)`},
		{"bad duration", "global:\n  probe:\n    timeout: fast\ntargets:\n  - {name: a, addr: x}\n", `line 3: "fast" is not a duration`},
		{"bad rate", "targets:\n  - name: a\n    addr: x\n    probe:\n      rate: 0\n", "targets[0].probe.rate (line 5): must be above 0"},
		{"no targets", "global: {}\n", "targets"},
		{"empty file", "", "empty"},
		{"duplicate name", "targets:\n  - {name: a, addr: x}\n  - {name: a, addr: y}\n", `targets[1].name (line 3): name "a" used twice`},
		{"two kinds", "targets:\n  - name: a\n    addr: x\n    cluster: {addrs: [y]}\n", "exactly one of addr, cluster or sentinel"},
		{"no kind", "targets:\n  - name: a\n", "exactly one of addr"},
		{"sentinel without master", "targets:\n  - name: a\n    sentinel: {addrs: [x]}\n", "targets[0].sentinel.master_name (line 3): is required"},
		{"reserved label", "targets:\n  - name: a\n    addr: x\n    labels: {target: b}\n", `"target" is a label the prober sets itself`},
		{"bad label", "targets:\n  - name: a\n    addr: x\n    labels: {9x: b}\n", "not a valid label name"},
		{"missing password file", "targets:\n  - name: a\n    addr: x\n    password_file: /nonexistent/pw\n", "targets[0].password_file (line 4): cannot read"},
		{"missing ca", "targets:\n  - name: a\n    addr: x\n    tls: {ca_file: /nonexistent/ca.pem}\n", "targets[0].tls (line 4): ca_file"},
		{"cert without key", "targets:\n  - name: a\n    addr: x\n    tls: {cert_file: /x}\n", "cert_file and key_file go together"},
		{"wrong type", "targets:\n  - name: a\n    addr: x\n    probe: {connections: many}\n", "line 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.yml")
	bad, _ := filepath.Glob("testdata/unknown/*.yml")
	seeds = append(seeds, bad...)
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("targets:\n  - {name: a, addr: x}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := Parse(b)
		if err != nil {
			return
		}
		// Targets may all come from the sources (file_sd, http_sd).
		if len(cfg.Targets) == 0 && len(cfg.FileSD) == 0 && len(cfg.HTTPSD) == 0 {
			t.Fatal("a config without targets or target sources was accepted")
		}
	})
}
