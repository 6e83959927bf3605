package resp

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
)

// The codec below speaks just enough RESP2 for the prober's own hot paths
// (the steady probe and the burst's pipelines) to send pre-encoded commands
// and read their replies without allocating per request. go-redis, which
// the control path uses, spends more per command than Redis itself on a
// small request (docs/performance.md, "The hand-written parts"). It trusts lengths no more than
// go-redis does: read it through a Guard, which refuses any header over the
// connection's limits before the codec sees it.

// ErrorReply is a Redis error reply: Redis answered, and said no. It
// satisfies go-redis's redis.Error, so code that tells a refusal from a
// broken connection treats both clients' errors alike.
type ErrorReply string

func (e ErrorReply) Error() string { return string(e) }

// RedisError marks ErrorReply as a reply of the server (go-redis's
// redis.Error interface).
func (ErrorReply) RedisError() {}

// Reader reads replies from one connection.
type Reader struct {
	r    *bufio.Reader
	long []byte // a line longer than the buffer, gathered (rare: long error replies)
}

// maxCodecLine bounds a line the codec gathers past its buffer, whatever
// the guard beneath allows.
const maxCodecLine = 64 << 10

// NewReader buffers rd with size bytes.
func NewReader(rd io.Reader, size int) *Reader {
	return &Reader{r: bufio.NewReaderSize(rd, size)}
}

// Reset makes r read from rd, dropping whatever it had buffered.
func (r *Reader) Reset(rd io.Reader) { r.r.Reset(rd) }

// Buffered is how many bytes r has read ahead of the replies it returned.
func (r *Reader) Buffered() int { return r.r.Buffered() }

// Reply reads one reply. n is the integer, the bulk length (-1 for nil) or
// the array length; nils is how many nil bulks a top-level array held. An
// error reply is returned as ErrorReply, with the stream still in step; any
// other error leaves the stream unusable. Nested aggregates are skipped with
// a counter, not by recursion: the guard bounds their depth, and the codec
// does not rely on it.
func (r *Reader) Reply() (n int64, nils int64, err error) {
	n, isArray, err := r.element()
	if err != nil || !isArray || n <= 0 {
		return n, 0, err
	}
	// Elements arrive depth first, so the elements of nested arrays still
	// to come (inner) are all read before the next top-level one.
	var inner int64
	for topLeft := n; topLeft > 0 || inner > 0; {
		m, nested, err := r.element()
		if _, isReply := err.(ErrorReply); err != nil && !isReply {
			return n, nils, err
		}
		if inner > 0 {
			inner--
		} else {
			topLeft--
			if !nested && m < 0 {
				nils++
			}
		}
		if nested && m > 0 {
			inner += m
		}
	}
	return n, nils, nil
}

// element reads one reply header and, for a scalar, its payload. For an
// array it returns its length with isArray set; the elements follow.
func (r *Reader) element() (n int64, isArray bool, err error) {
	line, err := r.line()
	if err != nil {
		return 0, false, err
	}
	switch line[0] {
	case '+':
		return 0, false, nil
	case '-':
		return 0, false, ErrorReply(line[1:])
	case ':':
		n, err := parseInt(line[1:])
		return n, false, err
	case '$':
		n, err := parseInt(line[1:])
		if err != nil || n < 0 {
			return -1, false, err
		}
		_, err = r.r.Discard(int(n) + 2)
		return n, false, err
	case '*':
		n, err := parseInt(line[1:])
		if err != nil || n < 0 {
			return -1, true, err
		}
		return n, true, nil
	}
	return 0, false, fmt.Errorf("unexpected reply type %q", line[0])
}

// line returns one reply line without its CRLF. The slice is only valid
// until the next read.
func (r *Reader) line() ([]byte, error) {
	line, err := r.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		line, err = r.longLine(line)
	}
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("malformed reply line")
	}
	return line[:len(line)-2], nil
}

// longLine gathers a line that did not fit the buffer; first is its start.
// Small buffers keep a thousand probe connections cheap, and a long line
// (an error reply quoting a script) must not break the stream.
func (r *Reader) longLine(first []byte) ([]byte, error) {
	r.long = append(r.long[:0], first...)
	for {
		more, err := r.r.ReadSlice('\n')
		if len(r.long)+len(more) > maxCodecLine {
			return nil, fmt.Errorf("reply line longer than %d bytes", maxCodecLine)
		}
		r.long = append(r.long, more...)
		if err != bufio.ErrBufferFull {
			return r.long, err
		}
	}
}

// parseInt reads a decimal without allocating. The guard bounds length
// headers, not integer replies, so overflow is checked here.
func parseInt(b []byte) (int64, error) {
	if len(b) == 0 {
		return 0, fmt.Errorf("empty number in reply")
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, fmt.Errorf("bad number in reply")
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("bad number in reply")
		}
		d := int64(c - '0')
		if n > (math.MaxInt64-d)/10 {
			return 0, fmt.Errorf("number in reply out of range")
		}
		n = n*10 + d
	}
	if neg {
		n = -n
	}
	return n, nil
}

// AppendCommand encodes a command of string arguments.
func AppendCommand(b []byte, args ...string) []byte {
	b = AppendHeader(b, '*', len(args))
	for _, a := range args {
		b = AppendHeader(b, '$', len(a))
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}

// AppendHeader encodes a type byte and a length: "*3\r\n", "$5\r\n".
func AppendHeader(b []byte, kind byte, n int) []byte {
	b = append(b, kind)
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

// AppendBulk encodes one bulk string.
func AppendBulk(b, v []byte) []byte {
	b = AppendHeader(b, '$', len(v))
	b = append(b, v...)
	return append(b, '\r', '\n')
}

// BulkString pre-encodes a constant argument.
func BulkString(s string) []byte { return AppendBulk(nil, []byte(s)) }
