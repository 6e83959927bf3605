package collector

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func readFixture(t testing.TB, elem ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(append([]string{"testdata"}, elem...)...))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseInfoVersions(t *testing.T) {
	tests := []struct {
		file         string
		server       string
		major, minor int
		forkUsec     int64
		hasTotal     bool
		maxclients   bool
	}{
		{"redis-6.2.txt", "redis 6.2.14", 6, 2, 28311, false, false},
		{"redis-7.0.txt", "redis 7.0.15", 7, 0, 451, true, true},
		{"redis-8.0.txt", "redis 8.0.2", 8, 0, 1163, true, true},
		{"valkey-8.0.txt", "valkey 8.0.1", 7, 2, 1305, true, true},
		{"valkey-8.1.txt", "valkey 8.1.1", 7, 2, 1243, true, true},
		{"valkey-9.1.txt", "valkey 9.1.2", 7, 2, 1799, true, true},
		{"redis-8.0.6.txt", "redis 8.0.6", 8, 0, 2441, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			info, err := ParseInfo(readFixture(t, "info", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if got := info.Server(); got != tt.server {
				t.Errorf("Server() = %q, want %q", got, tt.server)
			}
			ma, mi, ok := info.Version()
			if !ok || ma != tt.major || mi != tt.minor {
				t.Errorf("Version() = %d.%d %v, want %d.%d", ma, mi, ok, tt.major, tt.minor)
			}
			if v, _ := info.Int("latest_fork_usec"); v != tt.forkUsec {
				t.Errorf("latest_fork_usec = %d, want %d", v, tt.forkUsec)
			}
			if _, ok := info.Int("total_forks"); ok != tt.hasTotal {
				t.Errorf("total_forks present = %v, want %v", ok, tt.hasTotal)
			}
			if _, ok := info.Int("maxclients"); ok != tt.maxclients {
				t.Errorf("maxclients present = %v, want %v", ok, tt.maxclients)
			}
			for k, v := range info {
				if k == "" || strings.ContainsAny(k, ":\r\n") || strings.ContainsAny(v, "\r\n") {
					t.Errorf("bad field %q=%q", k, v)
				}
			}
		})
	}
}

func TestParseInfoErrors(t *testing.T) {
	for _, in := range []string{"", "# Server\r\n", "no colon here\r\n", ":value\r\n"} {
		if _, err := ParseInfo(in); err == nil {
			t.Errorf("ParseInfo(%q): no error", in)
		}
	}
	// A value may hold colons (listener lines, IPv6).
	info, err := ParseInfo("listener0:name=tcp,bind=-::*,port=6379\n")
	if err != nil || info["listener0"] != "name=tcp,bind=-::*,port=6379" {
		t.Errorf("got %v, %v", info, err)
	}
}

func TestForkTracker(t *testing.T) {
	snap := func(run string, latest, total int64, withTotal bool) Info {
		i := Info{"run_id": run, "latest_fork_usec": itoa(latest)}
		if withTotal {
			i["total_forks"] = itoa(total)
		}
		return i
	}
	tests := []struct {
		name  string
		steps []Info
		want  []int
	}{
		{"first snapshot is a baseline", []Info{snap("a", 500, 3, true)}, []int{0}},
		{"one fork", []Info{snap("a", 0, 0, true), snap("a", 500, 1, true), snap("a", 500, 1, true)}, []int{0, 1, 0}},
		{"several forks between refreshes", []Info{snap("a", 500, 1, true), snap("a", 700, 4, true)}, []int{0, 3}},
		{"same duration twice still counts by total", []Info{snap("a", 500, 1, true), snap("a", 500, 2, true)}, []int{0, 1}},
		{"restart rebases", []Info{snap("a", 500, 9, true), snap("b", 400, 1, true), snap("b", 400, 2, true)}, []int{0, 0, 1}},
		{"counter went back", []Info{snap("a", 500, 9, true), snap("a", 500, 2, true)}, []int{0, 0}},
		{"no total_forks: a change of latest is a fork", []Info{snap("a", 0, 0, false), snap("a", 800, 0, false), snap("a", 800, 0, false), snap("a", 900, 0, false)}, []int{0, 1, 0, 1}},
		{"bounded", []Info{snap("a", 1, 0, true), snap("a", 1, 1<<40, true)}, []int{0, maxForksPerRefresh}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f forkTracker
			for i, s := range tt.steps {
				if got := f.next(s); got != tt.want[i] {
					t.Errorf("step %d: next = %d, want %d", i, got, tt.want[i])
				}
			}
		})
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// FuzzParseInfo: any input parses or fails cleanly, and what parses
// survives a render/parse round trip unchanged.
func FuzzParseInfo(f *testing.F) {
	for _, name := range []string{"redis-6.2.txt", "redis-7.0.txt", "redis-8.0.txt", "redis-8.0.6.txt", "valkey-8.0.txt", "valkey-8.1.txt", "valkey-9.1.txt"} {
		f.Add(readFixture(f, "info", name))
	}
	for _, name := range []string{"info-invalid-utf8.txt", "info-control-chars.txt", "info-absurd-values.txt"} {
		f.Add(readFixture(f, "hostile", name))
	}
	f.Fuzz(func(t *testing.T, s string) {
		info, err := ParseInfo(s)
		if err != nil {
			return
		}
		var b strings.Builder
		for k, v := range info {
			if k == "" || strings.ContainsAny(k, ":\n") || strings.Contains(v, "\n") || k[0] == '#' {
				t.Fatalf("bad field %q=%q", k, v)
			}
			b.WriteString(k + ":" + v + "\r\n")
		}
		again, err := ParseInfo(b.String())
		if err != nil {
			t.Fatalf("round trip: %v", err)
		}
		if len(again) != len(info) {
			t.Fatalf("round trip: %d fields, want %d", len(again), len(info))
		}
		for k, v := range info {
			if again[k] != v {
				t.Fatalf("round trip: %q=%q, want %q", k, again[k], v)
			}
		}
		if len(info) > maxInfoFields {
			t.Fatalf("%d fields kept, over maxInfoFields", len(info))
		}
		// The accessors never panic on what the parser accepts.
		info.Version()
		info.Server()
		_, _ = info.Float("mem_fragmentation_ratio")
		for _, k := range []string{"redis_version", "role", "os"} {
			if v := LabelValue(info[k]); !utf8.ValidString(v) || len(v) > MaxLabelValueLen {
				t.Fatalf("LabelValue(%q) = %q", info[k], v)
			}
		}
		// What survives dropAbsurd is a finite number in its range.
		dropAbsurd(info)
		for k, r := range infoRanges {
			if raw, ok := info[k]; ok {
				v, err := strconv.ParseFloat(raw, 64)
				if err != nil || math.IsNaN(v) || v < r.min || v > r.max {
					t.Fatalf("dropAbsurd kept %s=%q", k, raw)
				}
			}
		}
		var ft forkTracker
		ft.next(info)
		ft.next(info)
	})
}

// BenchmarkParseInfo is the collectors' most frequent parse (a default INFO
// every refresh of every node): its allocations are GC work at fleet scale.
func BenchmarkParseInfo(b *testing.B) {
	s := readFixture(b, "info", "redis-7.0.txt")
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := parseInfo(s, nil); err != nil {
			b.Fatal(err)
		}
	}
}
