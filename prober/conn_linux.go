//go:build linux

package prober

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// blockingConn is a net.Conn over a socket in blocking mode. Its Read and Write
// are plain read(2)/write(2) calls made by the calling goroutine, which the probe
// keeps locked to its own OS thread. The kernel then wakes that thread directly
// when the reply lands, exactly as it wakes a C client; Go's netpoller (epoll on
// another thread, a futex hand-off and a scheduler hop) is never on the path.
// Deadlines map to SO_RCVTIMEO/SO_SNDTIMEO, re-armed only when they change.
type blockingConn struct {
	fd     int
	closed atomic.Bool
	mu     sync.Mutex // orders Close against Interrupt from another goroutine
	local  net.Addr
	remote net.Addr

	rcvTimeout time.Duration // last SO_RCVTIMEO set
	sndTimeout time.Duration // last SO_SNDTIMEO set
	rcvDead    time.Time     // the deadline the caller asked for
	sndDead    time.Time

	// limit, when set, caps both deadlines: the probe's own "this request
	// is charged from here and times out then", which go-redis cannot
	// express per call without a context allocation.
	limit time.Time
}

var _ net.Conn = (*blockingConn)(nil)

// timeoutError is what a read or write past its deadline returns; go-redis and
// the prober both recognise it through net.Error.Timeout.
type timeoutError struct{ op string }

func (e *timeoutError) Error() string   { return e.op + ": i/o timeout" }
func (e *timeoutError) Timeout() bool   { return true }
func (e *timeoutError) Temporary() bool { return true }
func (e *timeoutError) Is(target error) bool {
	return target == os.ErrDeadlineExceeded
}

// dialBlocking opens a blocking stream socket to network/addr ("tcp", "unix")
// within timeout. It resolves only literal addresses and names through the
// standard resolver; it never touches the netpoller.
func dialBlocking(ctx context.Context, network, addr string, timeout time.Duration) (*blockingConn, error) {
	if dl, ok := ctx.Deadline(); ok {
		if d := time.Until(dl); d < timeout {
			timeout = d
		}
	}
	if timeout <= 0 {
		return nil, &timeoutError{op: "dial " + addr}
	}
	var (
		family int
		sa     unix.Sockaddr
		remote net.Addr
	)
	switch network {
	case "unix":
		family, sa, remote = unix.AF_UNIX, &unix.SockaddrUnix{Name: addr}, &net.UnixAddr{Name: addr, Net: "unix"}
	case "tcp", "tcp4", "tcp6":
		ip, port, err := resolveTCP(ctx, addr)
		if err != nil {
			return nil, err
		}
		remote = &net.TCPAddr{IP: ip, Port: port}
		if ip4 := ip.To4(); ip4 != nil {
			s := &unix.SockaddrInet4{Port: port}
			copy(s.Addr[:], ip4)
			family, sa = unix.AF_INET, s
		} else {
			s := &unix.SockaddrInet6{Port: port}
			copy(s.Addr[:], ip.To16())
			family, sa = unix.AF_INET6, s
		}
	default:
		return nil, fmt.Errorf("dial %s: unsupported network %q", addr, network)
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("dial %s: socket: %w", addr, err)
	}
	c := &blockingConn{fd: fd, remote: remote}
	if family != unix.AF_UNIX {
		// Small requests must leave at once, as redis-cli's do.
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	}
	// Linux honours SO_SNDTIMEO on a blocking connect(2).
	if err := c.setTimeout(unix.SO_SNDTIMEO, timeout); err != nil {
		unix.Close(fd)
		return nil, err
	}
	c.sndTimeout = timeout
	for {
		err = unix.Connect(fd, sa)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		if err == unix.EINPROGRESS || err == unix.EAGAIN {
			return nil, &timeoutError{op: "dial " + addr}
		}
		return nil, &net.OpError{Op: "dial", Net: network, Addr: remote, Err: os.NewSyscallError("connect", err)}
	}
	if lsa, err := unix.Getsockname(fd); err == nil {
		c.local = sockaddrToAddr(lsa)
	}
	return c, nil
}

func resolveTCP(ctx context.Context, addr string) (net.IP, int, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, 0, fmt.Errorf("dial %s: %w", addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port <= 0 || port > 65535 {
		return nil, 0, fmt.Errorf("dial %s: bad port %q", addr, portStr)
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip, port, nil
	}
	ips, err := net.DefaultResolver.LookupIP(ctx, "ip", host)
	if err != nil {
		return nil, 0, fmt.Errorf("dial %s: %w", addr, err)
	}
	if len(ips) == 0 {
		return nil, 0, fmt.Errorf("dial %s: no address for %q", addr, host)
	}
	return ips[0], port, nil
}

func sockaddrToAddr(sa unix.Sockaddr) net.Addr {
	switch s := sa.(type) {
	case *unix.SockaddrInet4:
		return &net.TCPAddr{IP: net.IP(s.Addr[:]), Port: s.Port}
	case *unix.SockaddrInet6:
		return &net.TCPAddr{IP: net.IP(s.Addr[:]), Port: s.Port}
	case *unix.SockaddrUnix:
		return &net.UnixAddr{Name: s.Name, Net: "unix"}
	}
	return nil
}

func (c *blockingConn) Read(b []byte) (int, error) {
	if c.closed.Load() {
		return 0, net.ErrClosed
	}
	if err := c.arm(unix.SO_RCVTIMEO, c.rcvDead, &c.rcvTimeout); err != nil {
		return 0, err
	}
	for {
		n, err := unix.Read(c.fd, b)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return 0, &timeoutError{op: "read"}
		case err != nil:
			if c.closed.Load() {
				return 0, net.ErrClosed
			}
			return 0, &net.OpError{Op: "read", Net: "tcp", Addr: c.remote, Err: os.NewSyscallError("read", err)}
		case n == 0 && len(b) > 0:
			if c.closed.Load() {
				return 0, net.ErrClosed
			}
			return 0, io.EOF
		}
		return n, nil
	}
}

func (c *blockingConn) Write(b []byte) (int, error) {
	if c.closed.Load() {
		return 0, net.ErrClosed
	}
	if err := c.arm(unix.SO_SNDTIMEO, c.sndDead, &c.sndTimeout); err != nil {
		return 0, err
	}
	written := 0
	for written < len(b) {
		n, err := unix.Write(c.fd, b[written:])
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return written, &timeoutError{op: "write"}
		case err != nil:
			return written, &net.OpError{Op: "write", Net: "tcp", Addr: c.remote, Err: os.NewSyscallError("write", err)}
		}
		written += n
	}
	return written, nil
}

// arm sets the socket timeout for a deadline, skipping the setsockopt when the
// value in force is already within a millisecond of what is needed: go-redis
// sets a deadline before every command and the probe should not pay a syscall
// for it each time.
func (c *blockingConn) arm(opt int, deadline time.Time, cur *time.Duration) error {
	if !c.limit.IsZero() && (deadline.IsZero() || c.limit.Before(deadline)) {
		deadline = c.limit
	}
	var want time.Duration // zero: block forever
	if !deadline.IsZero() {
		want = time.Until(deadline)
		if want <= 0 {
			return &timeoutError{op: "deadline"}
		}
	}
	diff := want - *cur
	if diff < 0 {
		diff = -diff
	}
	if diff < time.Millisecond && (want == 0) == (*cur == 0) {
		return nil
	}
	if err := c.setTimeout(opt, want); err != nil {
		return err
	}
	*cur = want
	return nil
}

func (c *blockingConn) setTimeout(opt int, d time.Duration) error {
	tv := unix.NsecToTimeval(d.Nanoseconds())
	if d > 0 && tv.Sec == 0 && tv.Usec == 0 {
		tv.Usec = 1
	}
	if err := unix.SetsockoptTimeval(c.fd, unix.SOL_SOCKET, opt, &tv); err != nil {
		return fmt.Errorf("setsockopt timeout: %w", err)
	}
	return nil
}

// Close is called by the goroutine that owns the connection; other goroutines
// use Interrupt, so a descriptor number is never closed under a blocked reader
// and reused.
func (c *blockingConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.Swap(true) {
		return nil
	}
	_ = unix.Shutdown(c.fd, unix.SHUT_RDWR)
	return unix.Close(c.fd)
}

// Interrupt wakes a blocked Read or Write without closing the descriptor, so
// the owner goroutine remains the only one that closes it.
func (c *blockingConn) Interrupt() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed.Load() {
		_ = unix.Shutdown(c.fd, unix.SHUT_RDWR)
	}
}

func (c *blockingConn) LocalAddr() net.Addr  { return c.local }
func (c *blockingConn) RemoteAddr() net.Addr { return c.remote }

func (c *blockingConn) SetDeadline(t time.Time) error {
	c.rcvDead, c.sndDead = t, t
	return nil
}
func (c *blockingConn) SetReadDeadline(t time.Time) error  { c.rcvDead = t; return nil }
func (c *blockingConn) SetWriteDeadline(t time.Time) error { c.sndDead = t; return nil }
