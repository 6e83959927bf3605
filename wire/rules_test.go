package wire

import (
	"testing"
	"time"
)

func TestAfterTimeout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		replies uint64
		between bool
		want    Kept
	}{
		{"nothing came: owed", 0, true, KeepOwed},
		{"the whole reply came late: in step", 1, true, KeepInStep},
		{"amid a reply", 0, false, Drop},
		{"a reply and part of another", 1, false, Drop},
		{"more replies than requests", 2, true, Drop},
	} {
		if got := AfterTimeout(tc.replies, tc.between); got != tc.want {
			t.Errorf("%s: AfterTimeout(%d, %v) = %v, want %v", tc.name, tc.replies, tc.between, got, tc.want)
		}
	}
}

func TestLateReply(t *testing.T) {
	t.Parallel()
	read := time.Now()
	deadline := read.Add(-time.Millisecond)
	for _, tc := range []struct {
		name string
		ex   Exchange
		want bool
	}{
		{"stamped before its deadline, read after it", Exchange{ReadAt: read, RXWall: read.Round(0).Add(-2 * time.Millisecond), RX: true}, false},
		{"stamped after its deadline", Exchange{ReadAt: read, RXWall: read.Round(0).Add(-500 * time.Microsecond), RX: true}, true},
		{"no stamp: read after its deadline", Exchange{ReadAt: read}, true},
	} {
		if got := LateReply(tc.ex, deadline); got != tc.want {
			t.Errorf("%s: LateReply = %v, want %v", tc.name, got, tc.want)
		}
	}
	if got, want := OwedBy(deadline, time.Second), deadline.Add(OwedPatience*time.Second); !got.Equal(want) {
		t.Errorf("OwedBy = %v, want %v", got, want)
	}
}
