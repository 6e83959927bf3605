//go:build linux

package prober

import (
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/redistest"
)

// The loop reads a connection's TCP_INFO only after a request long on the
// wire, and tells the recorder before the request's Record: a fast
// request costs no read; one that waited on a paused server gives a
// sample spanning its time on the wire, with nothing retransmitted.
func TestPollLoopNetworkSample(t *testing.T) {
	srv := redistest.Start(t)
	l, pc, rec, cancel := manualLoop(t, Endpoint{Network: "tcp", Addr: srv.Addr()}, 2*time.Second)
	defer cancel()
	pc.tcp, pc.tcpOK = readTCPInfo(pc.fd)
	if !pc.tcpOK {
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
