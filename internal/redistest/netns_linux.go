//go:build linux

package redistest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Netns is a network namespace of the test's own, joined to the test's
// namespace by a veth pair: a server started in it (StartInNetns) is
// reached over a link the test can break (Blackhole) without touching the
// host's other traffic. It needs root and the ip(8) and tc(8) tools; under
// CI=true their absence fails the test, elsewhere it skips.
type Netns struct {
	t      testing.TB
	ip, tc string
	// Name is the namespace's; HostIf and PeerIf the veth ends in the
	// test's namespace and in this one; HostIP and PeerIP their addresses.
	Name           string
	HostIf, PeerIf string
	HostIP, PeerIP string
}

var netnsSeq atomic.Int32

// NewNetns creates a namespace with its veth pair, removed when the test
// ends (whether it passed or not).
func NewNetns(t testing.TB) *Netns {
	t.Helper()
	if os.Geteuid() != 0 {
		missing(t, "network namespaces need root", "run the test as root")
		return nil
	}
	n := &Netns{t: t, ip: sbinTool(t, "ip"), tc: sbinTool(t, "tc")}
	// Names and addresses of this process alone: test binaries of other
	// packages (and other users of the host) make namespaces too.
	seq, pid := int(netnsSeq.Add(1)), os.Getpid()
	n.Name = fmt.Sprintf("redistest-%d-%d", pid, seq)
	tag := fmt.Sprintf("rt%d%c", pid%1_000_000, 'a'+byte(seq%26))
	n.HostIf, n.PeerIf = tag+"h", tag+"p"
	if out, err := exec.Command(n.ip, "netns", "add", n.Name).CombinedOutput(); err != nil {
		missing(t, fmt.Sprintf("ip netns add: %v: %s", err, out), "run on a kernel with network namespaces")
		return nil
	}
	t.Cleanup(n.remove)
	n.ipRun("link", "add", n.HostIf, "type", "veth", "peer", "name", n.PeerIf)
	n.ipRun("link", "set", n.PeerIf, "netns", n.Name)
	n.HostIP, n.PeerIP = n.freeSubnet(pid*8 + seq)
	n.ipRun("addr", "add", n.HostIP+"/30", "dev", n.HostIf)
	n.ipRun("link", "set", n.HostIf, "up")
	n.ipRun("-n", n.Name, "addr", "add", n.PeerIP+"/30", "dev", n.PeerIf)
	n.ipRun("-n", n.Name, "link", "set", n.PeerIf, "up")
	n.ipRun("-n", n.Name, "link", "set", "lo", "up")
	return n
}

// sbinTool finds a tool that lives in /usr/sbin or /sbin, which a
// non-login PATH may lack.
func sbinTool(t testing.TB, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		p := dir + "/" + name
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return p
		}
	}
	missing(t, name+" not found", "install iproute2")
	return ""
}

// freeSubnet picks a /30 of 10.231.0.0/16 that no interface of the test's
// namespace has an address in, starting from hint.
func (n *Netns) freeSubnet(hint int) (host, peer string) {
	n.t.Helper()
	const subnets = 1 << 14 // the /30s of a /16
	for i := range 64 {
		s := (hint + i) % subnets
		a, b := s/64, (s%64)*4
		host, peer = fmt.Sprintf("10.231.%d.%d", a, b+1), fmt.Sprintf("10.231.%d.%d", a, b+2)
		out, err := exec.Command(n.ip, "-o", "addr", "show", "to", fmt.Sprintf("10.231.%d.%d/30", a, b)).Output()
		if err == nil && len(strings.TrimSpace(string(out))) == 0 {
			return host, peer
		}
	}
	n.t.Fatal("redistest: no free /30 in 10.231.0.0/16 among 64 tried")
	return "", ""
}

func (n *Netns) ipRun(args ...string) {
	n.t.Helper()
	if out, err := exec.Command(n.ip, args...).CombinedOutput(); err != nil {
		n.t.Fatalf("redistest: ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// remove deletes the namespace and its veth pair (deleting either end
// deletes both); what failed to go is reported, not fatal.
func (n *Netns) remove() {
	_ = exec.Command(n.ip, "link", "del", n.HostIf).Run() // gone already when the namespace went
	if out, err := exec.Command(n.ip, "netns", "del", n.Name).CombinedOutput(); err != nil {
		n.t.Logf("redistest: ip netns del %s: %v: %s", n.Name, err, out)
	}
}

// Command is name run inside the namespace (ip netns exec).
func (n *Netns) Command(name string, args ...string) *exec.Cmd {
	return exec.Command(n.ip, append([]string{"netns", "exec", n.Name, name}, args...)...)
}

// Blackhole drops every packet the namespace sends to the test (a
// blackhole qdisc on its end of the veth pair: the sender's kernel thinks
// them sent, as over a lossy path) until restore is called, or the test
// ends. The test's packets still reach the namespace.
func (n *Netns) Blackhole() (restore func()) {
	n.t.Helper()
	return n.qdisc("run on a kernel with the blackhole qdisc", "blackhole")
}

// Throttle limits what the namespace sends to the test to rate bits a
// second, with a queue of at most queue's worth of packets (a tbf qdisc on
// its end of the veth pair: over it packets are dropped, as at a congested
// link's router), until restore is called, or the test ends. A flow that
// fills the link (a bulk reply) then keeps the queue full, and every other
// reply waits behind it: round trips rise by up to queue. The test's
// packets still reach the namespace at once. (This kernel has tbf, not
// netem: there is no fixed delay to add.)
func (n *Netns) Throttle(rate int64, queue time.Duration) (restore func()) {
	n.t.Helper()
	if rate <= 0 || queue <= 0 {
		n.t.Fatalf("redistest: Throttle(%d, %v): want a rate and a queue", rate, queue)
	}
	// The bucket holds at least a tick's worth of bytes (HZ=1000 at most
	// ticks a millisecond) and a few full packets, or tbf cannot send at
	// its rate.
	burst := max(rate/8/250, 4*1514)
	return n.qdisc("run on a kernel with the tbf qdisc", "tbf", "rate", strconv.FormatInt(rate, 10)+"bit",
		"burst", strconv.FormatInt(burst, 10), "latency", strconv.FormatInt(queue.Microseconds(), 10)+"us")
}

// qdisc sets the root qdisc of the namespace's end of the veth pair until
// restore is called or the test ends; a kernel without it skips the test
// (fails under CI=true), with fix as the advice.
func (n *Netns) qdisc(fix string, spec ...string) (restore func()) {
	n.t.Helper()
	args := append([]string{"netns", "exec", n.Name, n.tc, "qdisc", "add", "dev", n.PeerIf, "root"}, spec...)
	if out, err := exec.Command(n.ip, args...).CombinedOutput(); err != nil {
		missing(n.t, fmt.Sprintf("tc qdisc add %s: %v: %s", strings.Join(spec, " "), err, out), fix)
		return func() {}
	}
	var once sync.Once
	restore = func() {
		once.Do(func() {
			if out, err := exec.Command(n.ip, "netns", "exec", n.Name, n.tc, "qdisc", "del", "dev", n.PeerIf, "root").CombinedOutput(); err != nil {
				n.t.Errorf("redistest: tc qdisc del: %v: %s", err, out)
			}
		})
	}
	n.t.Cleanup(restore)
	return restore
}

// NetnsServer is a redis-server started inside a Netns, bound to its end
// of the veth pair.
type NetnsServer struct {
	t    testing.TB
	ns   *Netns
	Dir  string
	Port int
	cmd  *exec.Cmd
}

// StartInNetns runs redis-server inside ns with extra config directives, as
// Start does, and waits until it answers PING over the veth pair. The port
// is the namespace's alone, so it is always 6379.
func StartInNetns(t testing.TB, ns *Netns, directives ...string) *NetnsServer {
	t.Helper()
	s := &NetnsServer{t: t, ns: ns, Dir: t.TempDir(), Port: 6379}
	args := (&Server{Port: s.Port, Dir: s.Dir}).buildArgs(append(directives, "bind "+ns.PeerIP))
	cmd := ns.Command(Binary(t), args...)
	cmd.Dir = s.Dir
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		t.Fatalf("redistest: start redis-server in %s: %v", ns.Name, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// Before the namespace's own clean-up (clean-ups run last first).
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			t.Errorf("redistest: redis-server in %s did not exit in 5 s", ns.Name)
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case err := <-exited:
			exited <- err // for the clean-up
			t.Fatalf("redistest: redis-server in %s exited: %v; log: %s", ns.Name, err,
				(&Server{Dir: s.Dir}).logTail())
		default:
		}
		if err := s.ping(); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("redistest: redis-server in %s did not answer within 10 s: %v", ns.Name, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.cmd = cmd
	return s
}

func (s *NetnsServer) ping() error { return pingAddr(s.Addr(), nil) }

// Addr is the server's host:port, over the veth pair.
func (s *NetnsServer) Addr() string { return net.JoinHostPort(s.ns.PeerIP, strconv.Itoa(s.Port)) }

// PID of the redis-server.
func (s *NetnsServer) PID() int { return s.cmd.Process.Pid }

// Client returns a go-redis client for the server, closed at test end.
func (s *NetnsServer) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2, DisableIdentity: true})
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}
