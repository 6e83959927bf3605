package resp

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzGuard feeds any stream, split at any point, and checks that the Guard
// never panics, that its verdict does not depend on how reads split the
// stream, and that what it accepts never claims more than its limits.
func FuzzGuard(f *testing.F) {
	for _, s := range []string{
		"+OK\r\n", "$5\r\nhello\r\n", "*2\r\n$1\r\na\r\n$-1\r\n", "%1\r\n+a\r\n:1\r\n",
		"|1\r\n+a\r\n:1\r\n$1\r\nx\r\n", "$9223372036854775807\r\n", "*9223372036854775807\r\n",
		"$2147483647\r\n", "*100000000\r\n", "~100000000\r\n", "!2147483647\r\n", "%100000000\r\n",
		strings.Repeat("*1\r\n", 64), "*-5\r\n", "$-1\r\n", "+" + strings.Repeat("a", 1000),
		"\x00\xff\xfe\x01", "HTTP/1.1 400 Bad Request\r\n",
	} {
		f.Add([]byte(s), uint16(3))
	}
	lim := Limits{Name: "fuzz", MaxBulk: 1 << 10, MaxElems: 64, MaxDepth: 4, MaxLine: 256, MaxReply: 4 << 10}
	f.Fuzz(func(t *testing.T, stream []byte, split uint16) {
		whole := New(lim)
		errWhole := whole.Feed(stream)

		parts := New(lim)
		var errParts error
		step := int(split%64) + 1
		for i := 0; i < len(stream) && errParts == nil; i += step {
			errParts = parts.Feed(stream[i:min(i+step, len(stream))])
		}
		if (errWhole == nil) != (errParts == nil) {
			t.Fatalf("whole: %v, in %d-byte reads: %v", errWhole, step, errParts)
		}
		if errWhole != nil {
			return
		}
		// Accepted: every length header is within the limits.
		for _, line := range bytes.Split(stream, []byte("\r\n")) {
			if len(line) > lim.MaxLine {
				// Only a bulk payload may hold a longer run.
				if whole.lim.MaxBulk < int64(len(line)) {
					t.Fatalf("accepted a %d-byte run", len(line))
				}
			}
		}
		if len(whole.pending) > lim.MaxDepth || whole.elems > lim.MaxElems || whole.size > lim.MaxReply {
			t.Fatalf("accepted over the limits: depth %d, elems %d, size %d", len(whole.pending), whole.elems, whole.size)
		}
	})
}
