package redisinfo

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readFixture(t testing.TB, elem ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(append([]string{"testdata"}, elem...)...))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseVersions(t *testing.T) {
	t.Parallel()
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
			t.Parallel()
			info, err := Parse(readFixture(t, "info", tt.file))
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

func TestParseErrors(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"", "# Server\r\n", "no colon here\r\n", ":value\r\n"} {
		if _, err := Parse(in); err == nil {
			t.Errorf("Parse(%q): no error", in)
		}
	}
	// A value may hold colons (listener lines, IPv6).
	info, err := Parse("listener0:name=tcp,bind=-::*,port=6379\n")
	if err != nil || info["listener0"] != "name=tcp,bind=-::*,port=6379" {
		t.Errorf("got %v, %v", info, err)
	}
}

// TestParseBounds: a huge INFO keeps at most MaxFields fields and
// MaxBytes of text, skips overlong lines, and says how many it skipped.
func TestParseBounds(t *testing.T) {
	t.Parallel()
	var many strings.Builder
	const n = 200_000
	for i := range n {
		fmt.Fprintf(&many, "field%d:%d\r\n", i, i)
	}
	tests := []struct {
		name      string
		in        string
		fields    int
		skipped   int
		wantField string
	}{
		{"many fields", many.String(), MaxFields, n - MaxFields, "field4095"},
		{"an overlong line", "redis_version:7.2.5\r\nos:" + strings.Repeat("A", 10<<20) + "\r\nrole:master\r\n", 2, 1, "role"},
		{"much text", strings.Repeat("# Server\r\n", 1000) + func() string {
			var b strings.Builder
			for i := range 1000 {
				fmt.Fprintf(&b, "k%04d:%s\r\n", i, strings.Repeat("v", 4000))
			}
			return b.String()
		}(), MaxBytes / 4006, 1000 - MaxBytes/4006, "k0000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			info, skipped, err := ParseBounded(tt.in, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(info) != tt.fields || skipped != tt.skipped {
				t.Errorf("%d fields, %d skipped; want %d, %d", len(info), skipped, tt.fields, tt.skipped)
			}
			if _, ok := info[tt.wantField]; !ok {
				t.Errorf("%s missing", tt.wantField)
			}
			kept := 0
			for k, v := range info {
				kept += len(k) + 1 + len(v)
			}
			if kept > MaxBytes {
				t.Errorf("%d bytes kept", kept)
			}
			// With a filter the bounds count every field alike: the
			// fields kept are those of the whole parse that keep takes.
			odd := func(k string) bool { return len(k)%2 == 1 }
			some, skippedSome, err := ParseBounded(tt.in, odd)
			if err != nil {
				t.Fatal(err)
			}
			if skippedSome != skipped {
				t.Errorf("with a filter %d skipped, without %d", skippedSome, skipped)
			}
			want := 0
			for k, v := range info {
				if odd(k) {
					want++
					if got, ok := some[k]; !ok || got != v {
						t.Errorf("%s: %q with a filter, %q without", k, got, v)
					}
				}
			}
			if len(some) != want {
				t.Errorf("with a filter %d fields, want %d", len(some), want)
			}
		})
	}
}

func TestCommandlogSupported(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		want bool
	}{{"redis-6.2.txt", false}, {"redis-7.0.txt", false}, {"redis-8.0.txt", false}, {"redis-8.0.6.txt", false}, {"valkey-8.0.txt", false}, {"valkey-8.1.txt", true}, {"valkey-9.1.txt", true}} {
		info, err := Parse(readFixture(t, "info", tt.name))
		if err != nil {
			t.Fatal(err)
		}
		if got := CommandlogSupported(info); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
	for v, want := range map[string]bool{"8.1.0": true, "8.2.1": true, "9.0.0": true, "10.0": true, "8.0.9": false, "7.9": false, "8": false, "x.y": false} {
		if got := CommandlogSupported(Info{"valkey_version": v}); got != want {
			t.Errorf("valkey %s: %v, want %v", v, got, want)
		}
	}
}

// FuzzParse: any input parses or fails cleanly, and what parses survives
// a render/parse round trip unchanged.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"redis-6.2.txt", "redis-7.0.txt", "redis-8.0.txt", "redis-8.0.6.txt", "valkey-8.0.txt", "valkey-8.1.txt", "valkey-9.1.txt"} {
		f.Add(readFixture(f, "info", name))
	}
	for _, name := range []string{"info-invalid-utf8.txt", "info-control-chars.txt", "info-absurd-values.txt"} {
		f.Add(readFixture(f, "hostile", name))
	}
	f.Fuzz(func(t *testing.T, s string) {
		info, err := Parse(s)
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
		again, err := Parse(b.String())
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
		if len(info) > MaxFields {
			t.Fatalf("%d fields kept, over MaxFields", len(info))
		}
		// The accessors never panic on what the parser accepts.
		info.Version()
		info.Server()
		_, _ = info.Float("mem_fragmentation_ratio")
		CommandlogSupported(info)
		IdentityFromInfo(info)
	})
}

// BenchmarkParse is the collectors' most frequent parse (a default INFO
// every refresh of every node): its allocations are GC work at fleet scale.
func BenchmarkParse(b *testing.B) {
	s := readFixture(b, "info", "redis-7.0.txt")
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ParseBounded(s, nil); err != nil {
			b.Fatal(err)
		}
	}
}
