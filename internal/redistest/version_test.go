package redistest

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Version
	}{
		{"Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=c4e7f6bf175a885b\n", Version{"redis", 7, 0, 15}},
		{"Redis server v=8.0.2 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=b843bbd074c0e1da", Version{"redis", 8, 0, 2}},
		{"Valkey server v=8.1.1 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=384b3c0d511f998a", Version{"valkey", 8, 1, 1}},
		{"Valkey server v=9.1.2 sha=00000000:0 malloc=jemalloc-5.3.1 bits=64 build=9108e8f1788612b", Version{"valkey", 9, 1, 2}},
		{"Redis server v=8.0.6 sha=00000000:0 malloc=jemalloc-5.3.1 bits=64 build=4ff5c8d39231b5d1", Version{"redis", 8, 0, 6}},
	} {
		got, err := ParseVersion(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseVersion(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "Redis server", "Redis server v=x.y"} {
		if _, err := ParseVersion(bad); err == nil {
			t.Errorf("ParseVersion(%q): no error", bad)
		}
	}
	if !(Version{"valkey", 8, 1, 0}).AtLeast(8, 1) || (Version{"redis", 7, 2, 4}).AtLeast(8, 0) {
		t.Error("AtLeast")
	}
}

// TestSelectedBinary starts whichever server the matrix selected and checks
// that INFO agrees with --version, so REDIS_SERVER_BIN cannot point at one
// server while the tests talk to another.
func TestSelectedBinary(t *testing.T) {
	v := BinaryVersion(t)
	s := Start(t)
	info, err := s.Client().Info(t.Context(), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%s_version:%d.%d.%d\r\n", v.Flavor, v.Major, v.Minor, v.Patch)
	if !strings.Contains(info, want) {
		t.Fatalf("INFO server of %s lacks %q:\n%s", v, want, info)
	}
	t.Logf("testing against %s", v)
}
