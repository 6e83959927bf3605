package resp

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestReaderReply(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		stream  string
		n, nils int64
		reply   string // the error reply, if one
		broken  bool   // a non-reply error: the stream is unusable
	}{
		{name: "simple", stream: "+OK\r\n"},
		{name: "integer", stream: ":42\r\n", n: 42},
		{name: "negative integer", stream: ":-7\r\n", n: -7},
		{name: "largest integer", stream: ":9223372036854775807\r\n", n: 9223372036854775807},
		{name: "integer overflow", stream: ":9223372036854775808\r\n", broken: true},
		{name: "long integer", stream: ":" + strings.Repeat("9", 40) + "\r\n", broken: true},
		{name: "bad digit", stream: ":12a\r\n", broken: true},
		{name: "bare minus", stream: ":-\r\n", broken: true},
		{name: "bulk", stream: "$5\r\nhello\r\n", n: 5},
		{name: "nil bulk", stream: "$-1\r\n", n: -1},
		{name: "array with nils", stream: "*3\r\n$1\r\na\r\n$-1\r\n$-1\r\n", n: 3, nils: 2},
		{name: "nested", stream: "*2\r\n*2\r\n:1\r\n$-1\r\n$-1\r\n", n: 2, nils: 1},
		{name: "error reply", stream: "-WRONGPASS invalid password\r\n", reply: "WRONGPASS invalid password"},
		{name: "error inside an array", stream: "*2\r\n-ERR x\r\n:1\r\n", n: 2},
		{name: "unknown type", stream: "!3\r\nabc\r\n", broken: true},
		{name: "no CR", stream: "+OK\n", broken: true},
		{name: "cut short", stream: "*2\r\n:1\r\n", broken: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, nils, err := NewReader(strings.NewReader(tc.stream), 16).Reply()
			var er ErrorReply
			switch {
			case tc.broken:
				if err == nil || errors.As(err, &er) {
					t.Fatalf("err %v, want a broken stream", err)
				}
				return
			case tc.reply != "":
				if !errors.As(err, &er) || string(er) != tc.reply {
					t.Fatalf("err %v, want the reply %q", err, tc.reply)
				}
				return
			case err != nil:
				t.Fatalf("err %v", err)
			}
			if n != tc.n || nils != tc.nils {
				t.Fatalf("n %d nils %d, want %d %d", n, nils, tc.n, tc.nils)
			}
		})
	}
}

// Replies follow one another on a stream: each Reply reads exactly one.
func TestReaderInStep(t *testing.T) {
	t.Parallel()
	r := NewReader(strings.NewReader("-ERR first\r\n*1\r\n$3\r\nabc\r\n:5\r\n"), 16)
	if _, _, err := r.Reply(); err.Error() != "ERR first" {
		t.Fatalf("first: %v", err)
	}
	if n, _, err := r.Reply(); err != nil || n != 1 {
		t.Fatalf("second: %d %v", n, err)
	}
	if n, _, err := r.Reply(); err != nil || n != 5 {
		t.Fatalf("third: %d %v", n, err)
	}
	if _, _, err := r.Reply(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last: %v", err)
	}
}

func TestAppendCommand(t *testing.T) {
	t.Parallel()
	got := string(AppendCommand(nil, "SET", "k", ""))
	if want := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n"; got != want {
		t.Fatalf("%q, want %q", got, want)
	}
}

// ErrorReply is what go-redis callers test for (redis.Error).
func TestErrorReplyIsARedisError(t *testing.T) {
	t.Parallel()
	var err error = ErrorReply("MOVED 1 127.0.0.1:7000")
	if _, ok := err.(interface{ RedisError() }); !ok {
		t.Fatal("ErrorReply does not satisfy go-redis's redis.Error")
	}
}

// A line longer than the buffer is gathered, up to a bound.
func TestReaderLongLines(t *testing.T) {
	t.Parallel()
	msg := "ERR " + strings.Repeat("x", 5000)
	r := NewReader(strings.NewReader("-"+msg+"\r\n:1\r\n-"+strings.Repeat("y", maxCodecLine+10)+"\r\n"), 16)
	if _, _, err := r.Reply(); err == nil || err.Error() != msg {
		t.Fatalf("long error reply: %.40v", err)
	}
	if n, _, err := r.Reply(); err != nil || n != 1 {
		t.Fatalf("after it: %d %v", n, err)
	}
	var er ErrorReply
	if _, _, err := r.Reply(); err == nil || errors.As(err, &er) {
		t.Fatalf("a line over the bound: %.40v, want a broken stream", err)
	}
}
