package explain

import (
	"strings"
	"testing"

	"github.com/redis-prober/redis-prober/internal/redisinfo"
)

// TestParseKeySizes: INFO of a real Redis 8.0 holding a 300 KB and a 3 MB
// string, lists of 200 items and a hash of 70,000 fields (two databases),
// and hostile Keysizes fields: a field malformed in any way is skipped
// whole, the others still read.
func TestParseKeySizes(t *testing.T) {
	t.Parallel()
	got := parseKeySizes(readInfo(t, "info-8.0-keysizes.txt"))
	want := KeySizes{Largest: [numKeyKinds]uint64{Strings: 2 << 20, Lists: 128, Zsets: 2, Hashes: 64 << 10}}
	if got != want {
		t.Fatalf("fixture: %+v, want %+v", got, want)
	}
	if s := got.String(); s != "strings of 2M-4M bytes, lists of 128-256 items, zsets of 2-4 items, hashes of 64K-128K items" {
		t.Errorf("said %q", s)
	}
	for _, tc := range []struct {
		name  string
		field string
		value string
		want  uint64 // the largest string bin
	}{
		{"one bin", "db0_distrib_strings_sizes", "16=3", 16},
		{"an empty bin does not count", "db0_distrib_strings_sizes", "16=3,1G=0", 16},
		{"the largest unit", "db0_distrib_strings_sizes", "8E=1", 8 << 60},
		{"a bin over 64 bits", "db0_distrib_strings_sizes", "16E=1", 0},
		{"not a power of two", "db0_distrib_strings_sizes", "3K=1", 0},
		{"an unknown unit", "db0_distrib_strings_sizes", "4Q=1", 0},
		{"no count", "db0_distrib_strings_sizes", "4K", 0},
		{"a negative count", "db0_distrib_strings_sizes", "4K=-1", 0},
		{"garbage", "db0_distrib_strings_sizes", "\x00\xff=,,==", 0},
		{"empty", "db0_distrib_strings_sizes", "", 0},
		{"too many bins", "db0_distrib_strings_sizes", strings.Repeat("1=1,", 65) + "1K=1", 0},
		{"very long", "db0_distrib_strings_sizes", strings.Repeat("9", 100000) + "=1", 0},
		{"a database not a number", "dbx_distrib_strings_sizes", "1M=1", 0},
		{"an unknown kind", "db0_distrib_streams_items", "1M=1", 0},
		{"database 10,000", "db10000_distrib_strings_sizes", "1M=1", 1 << 20},
		{"the empty string's bin", "db0_distrib_strings_sizes", "0=5", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info := redisinfo.Info{"redis_version": "8.0.6", "db1_distrib_lists_items": "4=1", tc.field: tc.value}
			got := parseKeySizes(info)
			if got.Largest[Strings] != tc.want || got.Largest[Lists] != 4 {
				t.Errorf("%+v, want strings %d and lists 4 (the other field)", got, tc.want)
			}
		})
	}
	for _, name := range []string{"../../internal/redisinfo/testdata/info/valkey-9.1.txt", "info-7.0-before-bgsave.txt"} {
		if got := parseKeySizes(readInfo(t, name)); !got.Empty() || got.String() != "" {
			t.Errorf("%s: %+v, want none", name, got)
		}
	}
}

// TestKeySizesString: the top bin is said without overflowing.
func TestKeySizesString(t *testing.T) {
	t.Parallel()
	k := KeySizes{Largest: [numKeyKinds]uint64{Strings: 1 << 63, Sets: 1, Hashes: 1 << 30}}
	if s := k.String(); s != "strings of 8E bytes or more, sets of 1-2 items, hashes of 1G-2G items" {
		t.Errorf("said %q", s)
	}
}
