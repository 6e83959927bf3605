//go:build linux

package explain

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/redistest"
	"github.com/redis-prober/redis-prober/prober"
)

// TestTLSNetworkEvidence: a TLS probe (its connections on goroutines of
// their own, not the event loop) of a redis-server in a network namespace
// of the test's own, whose packets to the prober are dropped for 0.6 s:
// the TCP_INFO beneath TLS says the requests out then waited on a
// retransmission, and the slow requests of the fault, over a control
// window's, are network mostly.
func TestTLSNetworkEvidence(t *testing.T) {
	const faultFor = 600 * time.Millisecond // the server's retransmission comes within the probe's timeout
	ns := redistest.NewNetns(t)
	certs := redistest.NewCerts(t)
	// The plain port answers StartInNetns's PING and the reader's INFO;
	// the probe speaks TLS. The certificate names 127.0.0.1, which the
	// client config expects whatever address it dials.
	srv := redistest.StartInNetns(t, ns, "tls-port 6380", "tls-cert-file "+certs.CertFile,
		"tls-key-file "+certs.KeyFile, "tls-ca-cert-file "+certs.CAFile, "tls-auth-clients no")
	node := NewNode(Config{Threshold: 5 * time.Millisecond})
	samples := sampleLog{Recorder: node.Tap(prober.NopRecorder{})}
	reader := NewReader(ReaderConfig{Node: node, Client: srv.Client(), NoProc: true})
	cmds, err := prober.ParseCommands("ping")
	if err != nil {
		t.Fatal(err)
	}
	ep := prober.Endpoint{Network: "tcp", Addr: net.JoinHostPort(ns.PeerIP, "6380"), TLS: certs.ClientConfig(t)}
	probe := prober.NewProbe(prober.ProbeConfig{Rate: 100, Timeout: 2 * time.Second, Commands: cmds, Connections: 2},
		ep, &samples, prober.NewFaultLog(slog.New(slog.NewTextHandler(io.Discard, nil))))
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	wg.Add(2)
	go func() { defer wg.Done(); probe.Run(ctx) }()
	go func() {
		defer wg.Done()
		tick := time.NewTicker(TickInterval)
		defer tick.Stop()
		for {
			reader.Tick(ctx)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	waitFor := func(d time.Duration, what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %v; counts %v", what, d, node.Counts())
			}
		}
	}
	waitFor(10*time.Second, "two reads of the sources", func() bool { return node.Settles() >= 2 })
	// A control window as long as the fault's, just before it: a busy test
	// host has slow requests of its own (unexplained mostly).
	const window = 3 * time.Second
	c0 := node.Counts()
	waitFor(2*window, "the control window", func() bool { return node.Settles() >= 2+int64(window/TickInterval) })
	c1, start := node.Counts(), time.Now()
	restore := ns.Blackhole()
	time.Sleep(faultFor) // the fault's length, not a wait for something
	restore()
	waitFor(15*time.Second, "the blackhole's slow requests decided", func() bool {
		return node.Counts()[Network] > c1[Network] && !node.Pending() && time.Since(start) >= window
	})
	c2 := node.Counts()
	var excess [NumCauses]float64
	var all float64
	for c := range c2 {
		excess[c] = max(0, float64(c2[c]-c1[c])-float64(c1[c]-c0[c])*float64(time.Since(start))/float64(window))
		all += excess[c]
	}
	t.Logf("slow requests: control %v, blackhole %v; excess %v", c1, c2, excess)
	retrans := false
	for _, n := range samples.all() {
		retrans = retrans || n.Retrans > 0
	}
	if !retrans {
		t.Errorf("no network sample with a retransmission from the TLS probe: %s", samples.String())
	}
	// Those out and those queued behind them: about 90 at 100 a second on
	// two connections, 87-93 on a quiet host; with the host's two CPUs
	// busy with loops beside the race detector, once 48 (and 19 more
	// unexplained than the control window had): hence the low bars, which
	// still say the evidence beneath TLS arrives and is what names them.
	if got := c2[Network] - c1[Network]; got < 20 {
		t.Errorf("%d slow requests network, want at least 20; the probe's network samples: %s", got, samples.String())
	}
	if excess[Network] < 0.5*all {
		t.Errorf("%.0f of %.0f slow requests over the control's network, want at least half; the probe's network samples: %s",
			excess[Network], all, samples.String())
	}
}

// sampleLog keeps the probe's network samples, to say them.
type sampleLog struct {
	prober.Recorder
	mu  sync.Mutex
	net []prober.NetworkSample
}

func (l *sampleLog) RecordNetwork(s prober.NetworkSample) {
	l.Recorder.RecordNetwork(s)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.net = append(l.net, s)
}

func (l *sampleLog) all() []prober.NetworkSample {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]prober.NetworkSample(nil), l.net...)
}

func (l *sampleLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, s := range l.net {
		fmt.Fprintf(&b, "\n  %s +%v retrans %d rto %v rtt %v", s.From.Format("15:04:05.000"), s.To.Sub(s.From).Round(time.Millisecond),
			s.Retrans, s.RTOTime, s.TCP.RTT)
	}
	return b.String()
}
