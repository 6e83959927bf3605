package report

import (
	"math"
	"testing"
)

func TestIECBytes(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{1, "1 B"},
		{32, "32 B"},
		{1023, "1023 B"},
		{1024, "1 KiB"},
		{1536, "1.5 KiB"},
		{1000, "1000 B"},
		{10*1024 + 512, "10.5 KiB"},
		{1000000, "977 KiB"},
		{1040464, "1016 KiB"},
		{1048575, "1 MiB"}, // 1023.999 KiB rounds up a unit, not to "1024 KiB"
		{1 << 20, "1 MiB"},
		{1<<20 + 1<<10*5, "1 MiB"},     // 1.0049 MiB: three digits
		{1<<20 + 1<<10*10, "1.01 MiB"}, // 1.0098 MiB
		{16 << 20, "16 MiB"},
		{123456789, "118 MiB"},
		{256 << 20, "256 MiB"},
		{256<<20 + 1, "256 MiB"},
		{5 << 30 / 4, "1.25 GiB"},
		{3 << 30, "3 GiB"},
		{1 << 40, "1 TiB"},
		{1 << 50, "1 PiB"},
		{math.MaxInt64, "8 EiB"},
		{-1, "-1 B"},
		{-256 << 20, "-256 MiB"},
		{math.MinInt64, "-8 EiB"},
	} {
		if got := iecBytes(tc.n); got != tc.want {
			t.Errorf("iecBytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
