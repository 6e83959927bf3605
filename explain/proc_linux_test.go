//go:build linux

package explain

import "testing"

func TestParseProcFiles(t *testing.T) {
	if v, ok := parseSchedstat([]byte("123456 7890 42\n")); !ok || v != 7890 {
		t.Errorf("schedstat: %d %v", v, ok)
	}
	if _, ok := parseSchedstat([]byte("1 2")); ok {
		t.Error("a short schedstat was taken")
	}
	// A command name with spaces and a parenthesis, as a process title
	// may have.
	stat := "4242 (redis-server (x) 1) S 1 4242 4242 0 -1 4194560 1000 0 17 0 250 130 0 0 20 0 5 0 100 0 0\n"
	majflt, ticks, ok := parseStat([]byte(stat))
	if !ok || majflt != 17 || ticks != 380 {
		t.Errorf("stat: majflt %d ticks %d %v, want 17 and 250+130", majflt, ticks, ok)
	}
	if _, _, ok := parseStat([]byte("4242 (x) S 1 2")); ok {
		t.Error("a short stat was taken")
	}
}
