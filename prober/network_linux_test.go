//go:build linux

package prober

import (
	"context"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/redistest"
	"github.com/redis-prober/redis-prober/wire"
)

// The loop reads a connection's TCP_INFO only after a request long on the
// wire, and tells the recorder before the request's Record: a fast
// request costs no read; one that waited on a paused server gives a
// sample spanning its time on the wire, with nothing retransmitted.
func TestPollLoopNetworkSample(t *testing.T) {
	srv := redistest.Start(t)
	l, pc, rec, cancel := manualLoop(t, Endpoint{Network: "tcp", Addr: srv.Addr()}, 2*time.Second)
	defer cancel()
	pc.net.begin(func() (wire.TCPStats, bool) { return readTCPInfo(pc.fd) })
	if !pc.net.ok {
		t.Fatal("no TCP_INFO of a TCP connection")
	}
	exchange := func(pause time.Duration) {
		t.Helper()
		pc.s = pc.w.claim()
		if pause > 0 {
			srv.Pause()
		}
		if !l.send(pc, time.Now()) || !pc.inflight {
			srv.Resume()
			t.Fatal("the request was not sent")
		}
		if pause > 0 {
			time.Sleep(pause)
			srv.Resume()
		}
		for deadline := time.Now().Add(5 * time.Second); pc.inflight; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("no reply in 5 s")
			}
			l.read(pc, false)
		}
	}
	// A fast PING on a quiet loopback: under networkFloor on the wire.
	// A busy host can make one slow, so the check is on a few of them.
	for range 5 {
		exchange(0)
	}
	rec.mu.Lock()
	fast, lat := len(rec.net), rec.lat
	rec.mu.Unlock()
	if fast == len(lat) {
		t.Errorf("a TCP_INFO read after every one of %d fast requests (%v)", fast, lat)
	}

	exchange(20 * time.Millisecond)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.net) != fast+1 {
		t.Fatalf("%d network samples after the slow request, want %d", len(rec.net), fast+1)
	}
	s := rec.net[len(rec.net)-1]
	t.Logf("sample %+v; request charged %v", s, rec.lat[len(rec.lat)-1])
	if wire := s.To.Sub(s.From); wire < 20*time.Millisecond || wire > rec.lat[len(rec.lat)-1]+time.Millisecond {
		t.Errorf("sample spans %v on the wire, want at least the 20 ms pause and at most the charge %v", wire, rec.lat[len(rec.lat)-1])
	}
	if s.Retrans != 0 || s.RTOTime != 0 {
		t.Errorf("retransmissions on loopback: %+v", s)
	}
	if s.TCP.RTT <= 0 || s.TCP.MinRTT <= 0 {
		t.Errorf("no round trip in the sample: %+v", s.TCP)
	}
}

// runRecorded runs a PING probe at rate against ep into a resultRecorder
// until the test ends.
func runRecorded(t *testing.T, ep Endpoint, rate float64, timeout time.Duration) *resultRecorder {
	t.Helper()
	cmds, err := ParseCommands("ping")
	if err != nil {
		t.Fatal(err)
	}
	rec := &resultRecorder{}
	p := NewProbe(ProbeConfig{Rate: rate, Timeout: timeout, Commands: cmds, Connections: 2},
		ep, rec, NewFaultLog(slog.New(slog.NewTextHandler(io.Discard, nil))))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return rec
}

// samples is what rec holds: the network samples and the replies.
func (r *resultRecorder) samples() (net []NetworkSample, ok int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, res := range r.res {
		if res == ResultOK {
			ok++
		}
	}
	return append([]NetworkSample(nil), r.net...), ok
}

// A TLS probe connection stays on a goroutine of its own, and reads the
// TCP_INFO of the TCP socket beneath TLS by the loop's rule: a request
// that waited on a paused server gives a sample spanning its time on the
// wire; the fast ones before it none.
func TestTLSProbeNetworkSample(t *testing.T) {
	certs := redistest.NewCerts(t)
	srv := redistest.StartTLS(t, certs)
	rec := runRecorded(t, Endpoint{Network: "tcp", Addr: srv.Addr(), TLS: certs.ClientConfig(t)}, 50, 2*time.Second)
	eventually(t, 10*time.Second, "20 replies", func() bool { _, ok := rec.samples(); return ok >= 20 })
	before, _ := rec.samples()
	srv.Pause()
	time.Sleep(50 * time.Millisecond) // the pause's length, not a wait for something
	srv.Resume()
	eventually(t, 10*time.Second, "a network sample after the pause", func() bool {
		net, _ := rec.samples()
		for _, s := range net[len(before):] {
			if s.To.Sub(s.From) >= 30*time.Millisecond {
				return true
			}
		}
		return false
	})
	net, ok := rec.samples()
	t.Logf("%d samples over %d replies (%d before the pause): %+v", len(net), ok, len(before), net[len(before):])
	if len(before) > 10 {
		t.Errorf("%d samples in the first 20 fast replies: TCP_INFO read after fast requests", len(before))
	}
	for _, s := range net {
		if s.Retrans != 0 || s.TCP.MinRTT <= 0 {
			t.Errorf("sample on loopback %+v: want no retransmission and a round trip", s)
		}
	}
}

// A unix socket has no TCP_INFO: its probe gives no network sample, even
// after a request that waited.
func TestUnixProbeNoNetworkSample(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "redis.sock")
	srv := redistest.Start(t, "unixsocket "+sock, "unixsocketperm 700")
	rec := runRecorded(t, Endpoint{Network: "unix", Addr: sock}, 50, 2*time.Second)
	eventually(t, 10*time.Second, "10 replies", func() bool { _, ok := rec.samples(); return ok >= 10 })
	srv.Pause()
	time.Sleep(50 * time.Millisecond) // the pause's length
	srv.Resume()
	eventually(t, 10*time.Second, "10 replies after the pause", func() bool { _, ok := rec.samples(); return ok >= 20 })
	if net, _ := rec.samples(); len(net) != 0 {
		t.Errorf("network samples of a unix socket: %+v", net)
	}
}

// TestTLSProbeNetworkBlackhole: a TLS redis-server in a network namespace
// of the test's own whose packets to the prober are dropped for 0.6 s: the
// TLS probe's requests out then are resent (the server's ACK is lost), and
// the sample after one says so.
func TestTLSProbeNetworkBlackhole(t *testing.T) {
	// Short enough that the server's own retransmission comes within the
	// probe's 2 s timeout: a timed-out request closes its connection, and
	// the new one's first request is timed without stamps (no sample).
	const faultFor = 600 * time.Millisecond
	ns := redistest.NewNetns(t)
	certs := redistest.NewCerts(t)
	// The plain port answers StartInNetns's PING; the probe speaks TLS.
	// The certificate names 127.0.0.1, which the client config expects
	// whatever address it dials.
	redistest.StartInNetns(t, ns, "tls-port 6380", "tls-cert-file "+certs.CertFile,
		"tls-key-file "+certs.KeyFile, "tls-ca-cert-file "+certs.CAFile, "tls-auth-clients no")
	ep := Endpoint{Network: "tcp", Addr: net.JoinHostPort(ns.PeerIP, "6380"), TLS: certs.ClientConfig(t)}
	rec := runRecorded(t, ep, 100, 2*time.Second)
	eventually(t, 10*time.Second, "20 replies over TLS", func() bool { _, ok := rec.samples(); return ok >= 20 })
	restore := ns.Blackhole()
	time.Sleep(faultFor) // the fault's length, not a wait for something
	restore()
	eventually(t, 15*time.Second, "a sample with a retransmission", func() bool {
		net, _ := rec.samples()
		for _, s := range net {
			if s.Retrans > 0 {
				return true
			}
		}
		return false
	})
	net, ok := rec.samples()
	t.Logf("%d samples over %d replies", len(net), ok)
	for _, s := range net {
		if s.Retrans > 0 {
			t.Logf("retransmission: %+v (%v on the wire)", s, s.To.Sub(s.From))
			if s.To.Sub(s.From) < 200*time.Millisecond {
				t.Errorf("a retransmission within %v on the wire: the kernel's timeout is 200 ms at the least", s.To.Sub(s.From))
			}
		}
	}
}
