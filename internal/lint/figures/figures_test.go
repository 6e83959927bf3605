package figures

import (
	"go/token"
	"strings"
	"testing"
)

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		sentence string
		flagged  bool
	}{
		// Measurements.
		{"the old encoder took 34-41 ms a scrape", true},
		{"that cost 38-44 % of a core at 1,000 targets", true},
		{"requests a second cost it about a fifth of a core of a small VM", true},
		{"the reply's map was 7.5 MB of the live heap", true},
		{"a hundred parameters was 8 KiB a node", true},
		{"the wire mean went from 1.10-1.12× the C client's", true},
		{"27-29 ms", true},
		{"alone was 3 % of the prober's CPU", true},
		{"the copies were a third of the prober's heap", true},
		{"procfs's Stat costs about 90 µs of CPU a sample", true},
		{"measured at 2.5 KiB a node", true},
		{"building its closures anew each time was a twentieth of what the prober allocated", true},
		{"expfmt's encoder was half of a protobuf scrape", true},
		{"the sort, though by keys, was a third of their gathering", true},
		{"one ulp on a third of them", false},
		{"the GC costs about 1 % of a core", true},
		// Rules, bounds and units as words.
		{"maxTrackedKeys bounds the written-key bitsets (at most 8 MiB per key space)", false},
		{"a 250 ms timeout", false},
		{"parseFraction reads \"10%\", \"10\" (a percentage) or \"0.1\"", false},
		{"one a decade from 1 ms to 10 s", false},
		{"a range of 0-4294967295 would fill memory", false},
		{"a quantile is within ±9.1%", false},
		{"the retransmission timeout, 200 ms at the least", false},
		{"the frames under the tasks are kept small", false},
		{"its cost is in docs/performance.md", false},
		{"ByteSize is a byte count written as people write it: \"16MiB\"", false},
		{"a retransmission costs a request at least the kernel's 200 ms retransmission timeout", false},
		{"judge the fork as if it were 1 GB rather than extrapolate", false},
		{"at 1,000 nodes that is 16 MiB (docs/performance.md, \"Measured reasons\")", false},
		{"that kept sysmon polling every 20 µs, and the prober used more CPU", false},
		{"the largest classic bucket, 2^20 µs (about 1 s)", false},
		{"native buckets of schema 2 (±9 %, enough for a threshold)", false},
		{"its {1,63} counts compile to 100 KB of program that stayed live", true},
		{"parsing at init cost every prober's start 1,180 allocations", true},
		{"one getsockopt(2), about 1.5 µs on the 2-CPU test VM", true},
	} {
		_, got := Flags(tc.sentence)
		if got != tc.flagged {
			t.Errorf("Flags(%q) = %v, want %v", tc.sentence, got, tc.flagged)
		}
	}
}

func TestFileFindsAFigureOverTwoLines(t *testing.T) {
	src := `package p

// Why the loop parks. Parked on the netpoller it
// used 14.6-18.4 % of a core. The rest says why.
func f() {}

// at most 8 MiB
var x = 1
`
	found, err := File(token.NewFileSet(), "p.go", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].Pos.Line != 3 || !strings.Contains(found[0].Phrase, "14.6-18.4 %") {
		t.Fatalf("found %v, want one finding on line 3", found)
	}
}

// TestTreeHasNoMeasuredFigures keeps figures out of the production code's
// comments: they belong in docs/performance.md, which the comment names.
func TestTreeHasNoMeasuredFigures(t *testing.T) {
	found, err := Tree("../../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Error(f)
	}
}
