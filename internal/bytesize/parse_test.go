package bytesize

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"512", 512},
		{"512B", 512},
		{"64KiB", 64 << 10},
		{"16MiB", 16 << 20},
		{"16 MiB", 16 << 20},
		{"16mib", 16 << 20},
		{"1.5GiB", 3 << 29},
		{"8GiB", 8 << 30},
		{"2TiB", 2 << 40},
		{" 268435456 ", 268435456},
	} {
		got, err := Parse(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"", "not a size"},
		{"MiB", "not a size"},
		{"-1", "not a size"},
		{"16MB", "ambiguous"},
		{"16M", "ambiguous"},
		{"16k", "ambiguous"},
		{"16XiB", "not B, KiB"},
		{"0.5B", "whole number"},
		{"1.1KiB", "whole number"},
		{"99999999TiB", "too large"},
	} {
		if n, err := Parse(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %d, %v; want an error saying %q", tc.in, n, err, tc.want)
		}
	}
}

// Format writes what Parse reads back, in the largest exact unit.
func TestFormatRoundTrips(t *testing.T) {
	for n, want := range map[int64]string{0: "0B", 32: "32B", 1000: "1000B", 1536: "1536B", 16 << 20: "16MiB",
		256 << 20: "256MiB", 1 << 30: "1GiB", 3 << 29: "1536MiB", 8 << 30: "8GiB"} {
		got := Format(n)
		if got != want {
			t.Errorf("Format(%d) = %q, want %q", n, got, want)
		}
		if back, err := Parse(got); err != nil || back != n {
			t.Errorf("Parse(Format(%d)) = %d, %v", n, back, err)
		}
	}
}
