package faulttest

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSilentNeverAnswers(t *testing.T) {
	l := Silent(t)
	c, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	n, err := c.Read(make([]byte, 16))
	if ne, ok := err.(net.Error); !ok || !ne.Timeout() || n != 0 {
		t.Fatalf("read %d bytes, err %v; want a timeout and nothing", n, err)
	}
	if l.Accepted() != 1 {
		t.Errorf("accepted %d connections, want 1", l.Accepted())
	}
	l.Close()
	if l.Open() != 0 {
		t.Errorf("%d connections open after Close", l.Open())
	}
}

func TestGarbageIsNotRESP(t *testing.T) {
	l := Garbage(t)
	c, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(line[:1], "+-:$*_,#!=(%~>|") {
		t.Errorf("first byte %q is a RESP type byte", line[:1])
	}
}

func TestSlowRequestIsCutOffByAServerTimeout(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Config.ReadHeaderTimeout = 300 * time.Millisecond
	srv.Start()
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	if _, err := SlowRequest(addr, "/", 10*time.Millisecond, 5*time.Second); err != nil {
		t.Errorf("with a read-header timeout: %v", err)
	}

	// Without one the server waits; SlowRequest says so.
	patient := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer patient.Close()
	if _, err := SlowRequest(strings.TrimPrefix(patient.URL, "http://"), "/", 10*time.Millisecond, 300*time.Millisecond); err == nil {
		t.Error("no error from a server without timeouts")
	}
}

func TestUnreadSendsACompleteRequest(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got <- r.URL.Path }))
	defer srv.Close()
	u, err := SendUnread(strings.TrimPrefix(srv.URL, "http://"), "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	select {
	case p := <-got:
		if p != "/metrics" {
			t.Errorf("path %q", p)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the server never saw the request")
	}
}

func TestRESPAnswersEachCommand(t *testing.T) {
	l := RESP(t, Handshake(func(args []string) Reply {
		if args[0] == "PING" {
			return Bytes("$9223372036854775807\r\n")
		}
		return Reply{}
	}))
	c, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	for _, tc := range []struct{ send, want string }{
		{"*2\r\n$4\r\nAUTH\r\n$1\r\nx\r\n", "+OK\r\n"},
		{"*1\r\n$4\r\nping\r\n", "$9223372036854775807\r\n"},
	} {
		if _, err := c.Write([]byte(tc.send)); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		got, err := r.ReadString('\n')
		if err != nil || got != tc.want {
			t.Fatalf("after %q got %q (%v), want %q", tc.send, got, err, tc.want)
		}
	}
	// An unknown command gets no reply: the connection is closed.
	if _, err := c.Write([]byte("*1\r\n$4\r\nINFO\r\n")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := r.ReadByte(); err != io.EOF {
		t.Fatalf("read after an unanswered command: %v, want EOF", err)
	}
}
