package resp

import (
	"errors"
	"strings"
	"testing"
)

func TestGuardAcceptsRealReplies(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, stream string }{
		{"simple", "+OK\r\n+PONG\r\n"},
		{"error", "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
		{"integer", ":1000\r\n:-3\r\n"},
		{"bulk", "$5\r\nhello\r\n$0\r\n\r\n"},
		{"bulk with CRLF inside", "$4\r\n\r\n\r\n\r\n"},
		{"null bulk and array", "$-1\r\n*-1\r\n_\r\n"},
		{"array", "*3\r\n$3\r\nfoo\r\n$-1\r\n:7\r\n"},
		{"empty array", "*0\r\n+OK\r\n"},
		{"nested", "*2\r\n*3\r\n:0\r\n:5460\r\n*2\r\n$9\r\n127.0.0.1\r\n:7000\r\n*1\r\n*0\r\n"},
		{"resp3 map set attribute", "%1\r\n+a\r\n~2\r\n#t\r\n,1.5\r\n|1\r\n+ttl\r\n:3\r\n$2\r\nok\r\n(12345678901234567890\r\n"},
		{"verbatim and blob error", "=7\r\ntxt:abc\r\n!3\r\nERR\r\n"},
		{"push", ">2\r\n$7\r\nmessage\r\n$1\r\nx\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := New(Probe)
			if err := g.Feed([]byte(tc.stream)); err != nil {
				t.Fatalf("refused: %v", err)
			}
			if g.st != stType || len(g.pending) > 0 {
				t.Fatal("stream ended inside a reply")
			}
			// Byte by byte gives the same verdict: network reads split
			// replies anywhere.
			g = New(Probe)
			for i := range len(tc.stream) {
				if err := g.Feed([]byte{tc.stream[i]}); err != nil {
					t.Fatalf("byte %d: refused: %v", i, err)
				}
			}
		})
	}
}

func TestGuardRefusesHostileReplies(t *testing.T) {
	t.Parallel()
	nested := func(n int) string { return strings.Repeat("*1\r\n", n) + ":1\r\n" }
	for _, tc := range []struct {
		name, stream string
		lim          Limits
		want         string // in the error
	}{
		{"bulk of max int64", "$9223372036854775807\r\n", Control, "more than 18 digits"},
		{"array of max int64", "*9223372036854775807\r\n", Control, "more than 18 digits"},
		{"bulk of 2 GiB", "$2147483647\r\n", Control, "over the limit of 8 MiB"},
		{"bulk over the probe limit", "$2097152\r\n", Probe, "over the limit of"},
		{"bulk over the hard ceiling", "$536870913\r\n", Limits{MaxBulk: 1 << 40}, "over the limit of 512 MiB"},
		{"array of 1e8", "*100000000\r\n", Control, "over the limit of 1048576 elements"},
		{"set of 1e8", "~100000000\r\n", Control, "elements"},
		{"map of 1e8 pairs", "%100000000\r\n", Control, "elements"},
		{"map pairs count twice", "%600000\r\n", Control, "elements"},
		{"blob error of 2 GiB", "!2147483647\r\n", Control, "over the limit"},
		{"nesting 3 million deep", nested(3_000_000), Control, "nesting deeper than 8"},
		{"nesting past the probe depth", nested(5), Probe, "nesting deeper than 4"},
		{"elements add up over nesting", "*2\r\n*1000\r\n" + strings.Repeat(":1\r\n", 1000) + "*100\r\n", Probe, "elements"},
		{"line without CRLF", "+" + strings.Repeat("a", 70<<10), Control, "line longer than 64 KiB"},
		{"reply longer than the limit", "*1000\r\n" + strings.Repeat("$1048576\r\n"+strings.Repeat("x", 1<<20)+"\r\n", 9), Probe, "reply longer than 8 MiB"},
		{"negative bulk other than -1", "$-5\r\n", Control, "negative length -5"},
		{"negative array other than -1", "*-5\r\n", Control, "negative length -5"},
		{"negative map", "%-1\r\n", Control, "negative length"},
		{"streamed bulk", "$?\r\n", Control, "malformed $ header"},
		{"not RESP", "HTTP/1.1 400 Bad Request\r\n", Control, "unknown reply type byte 'H'"},
		{"binary noise", "\x00\xff", Control, "unknown reply type byte"},
		{"header without digits", "*\r\n", Control, "malformed * header"},
		{"header CR without LF", "$3\rx", Control, "malformed $ header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := New(tc.lim)
			err := g.Feed([]byte(tc.stream))
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tc.want) || !errors.As(err, new(*Error)) {
				t.Fatalf("error %q, want it to name %q", err, tc.want)
			}
			if again := g.Feed([]byte("+OK\r\n")); again == nil {
				t.Fatal("a refused stream was accepted again")
			}
		})
	}
}

func TestGuardResetsBetweenReplies(t *testing.T) {
	t.Parallel()
	// Each top-level reply has its own element and size budget: a
	// connection may read many replies that together exceed one reply's.
	g := New(Limits{Name: "t", MaxElems: 10, MaxReply: 64})
	reply := "*5\r\n:1\r\n:2\r\n:3\r\n:4\r\n:5\r\n"
	for i := range 100 {
		if err := g.Feed([]byte(reply)); err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
	}
}
