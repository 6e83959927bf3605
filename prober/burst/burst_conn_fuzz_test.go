package burst

import (
	"bytes"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/resp"
	"github.com/redis-prober/redis-prober/prober"
)

// readerConn is a net.Conn whose reads come from a fixed stream; writes
// fail with err.
type readerConn struct {
	err error
	r   *bytes.Reader
}

func (c readerConn) Read(b []byte) (int, error)     { return c.r.Read(b) }
func (c readerConn) Write([]byte) (int, error)      { return 0, c.err }
func (readerConn) Close() error                     { return nil }
func (readerConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (readerConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (readerConn) SetDeadline(time.Time) error      { return nil }
func (readerConn) SetReadDeadline(time.Time) error  { return nil }
func (readerConn) SetWriteDeadline(time.Time) error { return nil }

// FuzzBurstCodec reads any stream as burst replies, beneath the same guard
// as a real burst connection: it must never panic, loop or report negative
// counts, and it stops at the first refused or broken reply.
func FuzzBurstCodec(f *testing.F) {
	for _, s := range []string{
		"+OK\r\n", "*4\r\n$1\r\na\r\n$-1\r\n$-1\r\n$1\r\nb\r\n", "*-5\r\n", "*-1\r\n", ":12\r\n",
		"*2\r\n*2\r\n:1\r\n:2\r\n$-1\r\n", strings.Repeat("*1\r\n", 100), "$9223372036854775807\r\n",
		"*9223372036854775807\r\n", "-ERR x\r\n+OK\r\n", "$3\r\nab", "\x00",
	} {
		f.Add([]byte(s))
	}
	lim := burstLimits(Plan{DataSize: 32})
	f.Fuzz(func(t *testing.T, stream []byte) {
		c, _ := prober.GuardConn(readerConn{net.ErrClosed, bytes.NewReader(stream)}, lim)
		bc := &burstConn{c: c, r: resp.NewReader(c, 4096)}
		for range len(stream) + 1 {
			n, nils, err := bc.r.Reply()
			if nils < 0 || (n >= 0 && nils > n) {
				t.Fatalf("n %d, nils %d", n, nils)
			}
			hit, miss := burstOps[burstOpIndex("mget")].hitsOf(n, nils, err)
			if hit < 0 || miss < 0 {
				t.Fatalf("hits %d misses %d from n %d nils %d", hit, miss, n, nils)
			}
			if err != nil {
				if _, ok := err.(resp.ErrorReply); !ok {
					return
				}
			}
		}
		t.Fatal("more replies than bytes")
	})
}
