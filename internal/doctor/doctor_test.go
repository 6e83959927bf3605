package doctor

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/collector"
	"github.com/redis-prober/redis-prober/internal/redistest"
	"github.com/redis-prober/redis-prober/prober"
)

// syncBuffer is a log sink the probes write from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A healthy Redis measures without errors: the connect probe's ticker (200
// ms) lands on the end of a 1 s window, and the connect cut by that end is
// neither counted, nor logged as failing, nor reported (it was "1 errors"
// and a "probe failing command=connect ... i/o timeout" line in most runs).
// The cut itself is checked deterministically in the prober's tests
// (TestConnectCutByWindowIsNotAnError); this is the doctor's whole path.
func TestDoctorHealthyRedisMeasuresNoErrors(t *testing.T) {
	srv := redistest.Start(t)
	logs := &syncBuffer{}
	rep := Run(t.Context(), Config{
		Names:     []string{"healthy"},
		Endpoints: []prober.Endpoint{{Network: "tcp", Addr: srv.Addr()}},
		Paths:     collector.DefaultPaths(),
		Duration:  time.Second,
		Log:       slog.New(slog.NewTextHandler(logs, nil)),
	})
	tr := rep.Targets[0]
	if !tr.Reachable || tr.Ping == nil || tr.Connect == nil {
		t.Fatalf("no measurement of a healthy Redis: %+v", tr)
	}
	if tr.Ping.Errors != 0 || tr.Connect.Errors != 0 || tr.Connect.Count == 0 {
		t.Errorf("ping %+v, connect %+v: want no errors", *tr.Ping, *tr.Connect)
	}
	if strings.Contains(logs.String(), "probe failing") {
		t.Errorf("a healthy Redis logged as failing:\n%s", logs.String())
	}
}
