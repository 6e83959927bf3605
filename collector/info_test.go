package collector

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"unicode/utf8"

	"github.com/redis-prober/redis-prober/internal/redisinfo"
)

func readFixture(t testing.TB, elem ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(append([]string{"testdata"}, elem...)...))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// infoFixture reads an INFO sample of redisinfo's testdata (info/ as
// captured from real servers, hostile/ as no server sends).
func infoFixture(t testing.TB, elem ...string) string {
	t.Helper()
	return readFixture(t, append([]string{"..", "..", "internal", "redisinfo", "testdata"}, elem...)...)
}

func TestForkTracker(t *testing.T) {
	snap := func(run string, latest, total int64, withTotal bool) redisinfo.Info {
		i := redisinfo.Info{"run_id": run, "latest_fork_usec": itoa(latest)}
		if withTotal {
			i["total_forks"] = itoa(total)
		}
		return i
	}
	tests := []struct {
		name  string
		steps []redisinfo.Info
		want  []int
	}{
		{"first snapshot is a baseline", []redisinfo.Info{snap("a", 500, 3, true)}, []int{0}},
		{"one fork", []redisinfo.Info{snap("a", 0, 0, true), snap("a", 500, 1, true), snap("a", 500, 1, true)}, []int{0, 1, 0}},
		{"several forks between refreshes", []redisinfo.Info{snap("a", 500, 1, true), snap("a", 700, 4, true)}, []int{0, 3}},
		{"same duration twice still counts by total", []redisinfo.Info{snap("a", 500, 1, true), snap("a", 500, 2, true)}, []int{0, 1}},
		{"restart rebases", []redisinfo.Info{snap("a", 500, 9, true), snap("b", 400, 1, true), snap("b", 400, 2, true)}, []int{0, 0, 1}},
		{"counter went back", []redisinfo.Info{snap("a", 500, 9, true), snap("a", 500, 2, true)}, []int{0, 0}},
		{"no total_forks: a change of latest is a fork", []redisinfo.Info{snap("a", 0, 0, false), snap("a", 800, 0, false), snap("a", 800, 0, false), snap("a", 900, 0, false)}, []int{0, 1, 0, 1}},
		{"bounded", []redisinfo.Info{snap("a", 1, 0, true), snap("a", 1, 1<<40, true)}, []int{0, maxForksPerRefresh}},
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

// FuzzInfoFields: what the parser accepts (see redisinfo's FuzzParse)
// comes out of the collector's readers safe: labels printable and bounded,
// only finite in-range numbers after dropAbsurd, the fork tracker calm.
func FuzzInfoFields(f *testing.F) {
	for _, name := range []string{"redis-6.2.txt", "redis-7.0.txt", "redis-8.0.txt", "redis-8.0.6.txt", "valkey-8.0.txt", "valkey-8.1.txt", "valkey-9.1.txt"} {
		f.Add(infoFixture(f, "info", name))
	}
	for _, name := range []string{"info-invalid-utf8.txt", "info-control-chars.txt", "info-absurd-values.txt"} {
		f.Add(infoFixture(f, "hostile", name))
	}
	f.Fuzz(func(t *testing.T, s string) {
		info, err := redisinfo.Parse(s)
		if err != nil {
			return
		}
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
