// Package redistest starts real redis-server processes for tests: each on a
// free loopback port in its own temp dir, stopped when the test ends. The
// binary is a parameter (REDIS_SERVER_BIN: any Redis or Valkey server, so the
// same tests run on Redis 7.0, 8.x and Valkey 8.x, 9.x; see BinEnv). Under
// CI=true a missing server fails the test; elsewhere it skips loudly.
package redistest

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is one redis-server started for a test.
type Server struct {
	t    testing.TB
	bin  string
	Dir  string
	Port int
	args []string

	tls *tls.Config // set for a TLS-only server

	mu  sync.Mutex
	cmd *exec.Cmd
}

// BinEnv names the environment variable that selects the server binary
// the harness starts (a path: redis-server, or valkey-server of any
// version); unset, redis-server is looked up on PATH. VersionEnv, when set,
// is the version that binary must report (a prefix such as "8.0"), so a
// matrix run cannot silently test the wrong server.
const (
	BinEnv     = "REDIS_SERVER_BIN"
	VersionEnv = "REDIS_SERVER_VERSION"
)

// Binary finds the server binary (REDIS_SERVER_BIN, else redis-server on
// PATH), or fails (CI) / skips (elsewhere) the test.
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(BinEnv); p != "" {
		if st, err := os.Stat(p); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			missing(t, fmt.Sprintf("%s=%s is not an executable file", BinEnv, p), "run scripts/peers.sh to fetch the test peers")
			return ""
		}
		checkVersion(t, p)
		return p
	}
	p := requireBinary(t, "redis-server")
	checkVersion(t, p)
	return p
}

func requireBinary(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	missing(t, name+" not found on PATH", "install it (apt-get install redis-server)")
	return ""
}

func missing(t testing.TB, what, fix string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s: CI must provide it (see .ci/run)", what)
	}
	t.Skipf("SKIPPING: %s; %s to run this test", what, fix)
}

// Version is what a server binary says of itself.
type Version struct {
	// Flavor is "redis" or "valkey".
	Flavor string
	// Major, Minor, Patch of the server version (v=8.1.1).
	Major, Minor, Patch int
}

func (v Version) String() string {
	return fmt.Sprintf("%s %d.%d.%d", v.Flavor, v.Major, v.Minor, v.Patch)
}

// AtLeast reports whether v is major.minor or newer (any flavor).
func (v Version) AtLeast(major, minor int) bool {
	return v.Major > major || v.Major == major && v.Minor >= minor
}

// BinaryVersion runs the selected binary with --version and parses its
// answer, for tests whose expectations depend on
// the server (Valkey's COMMANDLOG, Redis 8's LATENCY events).
func BinaryVersion(t testing.TB) Version {
	t.Helper()
	return binaryVersion(t, Binary(t))
}

func binaryVersion(t testing.TB, bin string) Version {
	t.Helper()
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("redistest: %s --version: %v: %s", bin, err, out)
	}
	v, err := ParseVersion(string(out))
	if err != nil {
		t.Fatalf("redistest: %s --version: %v", bin, err)
	}
	return v
}

// ParseVersion reads "Redis server v=8.0.2 sha=..." or "Valkey server
// v=8.1.1 sha=...".
func ParseVersion(s string) (Version, error) {
	var v Version
	f := strings.Fields(s)
	if len(f) < 3 {
		return v, fmt.Errorf("unexpected version line %q", s)
	}
	v.Flavor = strings.ToLower(f[0])
	for _, w := range f {
		if num, ok := strings.CutPrefix(w, "v="); ok {
			if _, err := fmt.Sscanf(num, "%d.%d.%d", &v.Major, &v.Minor, &v.Patch); err != nil {
				return v, fmt.Errorf("version %q: %w", num, err)
			}
			return v, nil
		}
	}
	return v, fmt.Errorf("no v= in version line %q", s)
}

func checkVersion(t testing.TB, bin string) {
	t.Helper()
	want := os.Getenv(VersionEnv)
	if want == "" {
		return
	}
	v := binaryVersion(t, bin)
	got := fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
	if got != want && !strings.HasPrefix(got, want+".") {
		t.Fatalf("redistest: %s is %s, but %s=%s", bin, v, VersionEnv, want)
	}
}

// Start runs redis-server with extra config directives ("maxmemory 10mb",
// "enable-debug-command yes", ...) and waits until it answers PING.
func Start(t testing.TB, directives ...string) *Server {
	t.Helper()
	s := &Server{t: t, bin: Binary(t), Dir: t.TempDir()}
	var lastErr error
	for range 5 {
		s.Port = FreePort(t)
		s.args = s.buildArgs(directives)
		if lastErr = s.start(); lastErr == nil {
			t.Cleanup(s.Stop)
			return s
		}
	}
	t.Fatalf("redistest: start redis-server: %v", lastErr)
	return nil
}

func (s *Server) buildArgs(directives []string) []string {
	args := []string{
		"--port", strconv.Itoa(s.Port),
		"--bind", "127.0.0.1",
		"--dir", s.Dir,
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--logfile", filepath.Join(s.Dir, "redis.log"),
		"--protected-mode", "no",
	}
	for _, d := range directives {
		f := strings.Fields(d)
		if len(f) == 0 {
			continue
		}
		args = append(args, "--"+f[0])
		args = append(args, f[1:]...)
	}
	return args
}

func (s *Server) start() error {
	cmd := exec.Command(s.bin, s.args...)
	cmd.Dir = s.Dir
	// Its own process group, so a stopped test leaves no orphan.
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("redis-server exited: %v; log: %s", err, s.logTail())
		default:
		}
		if s.ping() == nil {
			s.mu.Lock()
			s.cmd = cmd
			s.mu.Unlock()
			go func() { <-exited }()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	return fmt.Errorf("redis-server on port %d did not answer within 10s; log: %s", s.Port, s.logTail())
}

func (s *Server) ping() error { return pingAddr(s.Addr(), s.tls) }

// pingAddr tells whether a server at addr answers (PONG, or a refusal that
// says it is there: NOAUTH, LOADING), over TLS when cfg is set.
func pingAddr(addr string, cfg *tls.Config) error {
	var c net.Conn
	var err error
	if cfg != nil {
		c, err = tls.DialWithDialer(&net.Dialer{Timeout: 200 * time.Millisecond}, "tcp", addr, cfg)
	} else {
		c, err = net.DialTimeout("tcp", addr, 200*time.Millisecond)
	}
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") && !strings.HasPrefix(line, "-NOAUTH") && !strings.HasPrefix(line, "-LOADING") {
		return fmt.Errorf("unexpected reply %q", line)
	}
	return nil
}

func (s *Server) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// Addr is host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)) }

// URL is the redis:// URL of the server.
func (s *Server) URL() string { return "redis://" + s.Addr() }

// PID of the running redis-server, 0 when it is not running.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Client returns a go-redis client for the server, closed at test end.
func (s *Server) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2, DisableIdentity: true, TLSConfig: s.tls})
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}

// Kill SIGKILLs the server and waits until its port is free.
func (s *Server) Kill() {
	s.t.Helper()
	s.mu.Lock()
	cmd := s.cmd
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	resume(cmd.Process) // a paused server dies at once
	_ = cmd.Process.Kill()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if !s.running(cmd.Process) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Restart starts the server again on the same port with the same options.
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	var err error
	for range 50 {
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond) // the port may linger briefly
	}
	s.t.Fatalf("redistest: restart: %v", err)
}

// Stop ends the server; Cleanup calls it.
func (s *Server) Stop() { s.Kill() }

// Keys returns every key matching pattern (SCAN), for no-stray-key checks.
func (s *Server) Keys(ctx context.Context, pattern string) []string {
	s.t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2, DisableIdentity: true, TLSConfig: s.tls})
	defer c.Close()
	var out []string
	iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
	for iter.Next(ctx) {
		out = append(out, iter.Val())
	}
	if err := iter.Err(); err != nil {
		s.t.Fatalf("redistest: scan: %v", err)
	}
	return out
}

// FreePort returns a loopback TCP port that was free a moment ago, reserved
// for the test. Test binaries of other packages run beside this one and ask
// the kernel for ports too, and a port is free for anyone between this call
// and the bind of what it is for: of two servers handed one port, one fails
// to bind and the other answers both tests' PINGs. So a port is also locked
// (see lockPort), and one another test process holds is not handed out.
func FreePort(t testing.TB) int {
	t.Helper()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("redistest: free port: %v", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		locked := lockPort(t, port)
		_ = l.Close()
		if locked {
			return port
		}
	}
	t.Fatal("redistest: free port: 100 ports from the kernel, each locked by another test process")
	return 0
}

// ClientWithPassword returns a client that authenticates with password.
func ClientWithPassword(s *Server, password string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), Password: password, Protocol: 2, DisableIdentity: true})
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o600) }
