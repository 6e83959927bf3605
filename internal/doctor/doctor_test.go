package doctor

import (
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/host"
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
		Paths:     host.DefaultPaths(),
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

// The doctor attributes the slow PINGs of its window as run does: a DEBUG
// SLEEP from another client, once the doctor has read the slow log's
// last id, is slow_command, in the report and its text. On Redis 8+ the
// report says the largest keys beside it (INFO KEYSIZES: a 3 MB string),
// on any other server nothing of them.
func TestDoctorAttributesSlowRequests(t *testing.T) {
	v := redistest.BinaryVersion(t)
	keysizes := v.Flavor == "redis" && v.AtLeast(8, 0)
	srv := redistest.Start(t, "enable-debug-command yes")
	other := srv.Client()
	if err := other.Set(t.Context(), "big", strings.Repeat("x", 3_000_000), 0).Err(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		// The doctor's first read of the slow log (its last id) comes
		// before the sleep, or the sleep would be history.
		deadline := time.Now().Add(2 * time.Second)
		for {
			stats, err := other.Info(t.Context(), "commandstats").Result()
			if err != nil {
				done <- err
				return
			}
			// SLOWLOG GET, or COMMANDLOG GET on Valkey 8.1+.
			if strings.Contains(stats, "cmdstat_slowlog|get:calls=") || strings.Contains(stats, "cmdstat_commandlog|get:calls=") {
				break
			}
			if time.Now().After(deadline) {
				done <- errors.New("the doctor never read the slow log")
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		done <- other.Do(t.Context(), "debug", "sleep", "0.3").Err()
	}()
	rep := Run(t.Context(), Config{
		Names:     []string{"sleepy"},
		Endpoints: []prober.Endpoint{{Network: "tcp", Addr: srv.Addr()}},
		Paths:     host.DefaultPaths(),
		Duration:  2 * time.Second,
		Log:       slog.New(slog.DiscardHandler),
	})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	tr := rep.Targets[0]
	if tr.SlowThreshold != 0.005 {
		t.Errorf("slow threshold %v, want the default objective", tr.SlowThreshold)
	}
	// 0.3 s at 100 PINGs a second: about 30 waited. A busy test host
	// adds slow PINGs of its own (redis_cpu, unexplained): the sleep's
	// are the most.
	if len(tr.Slow) == 0 || tr.Slow[0].Cause != "slow_command" || tr.Slow[0].Count < 15 {
		t.Errorf("slow PINGs by cause %+v: want slow_command first, with most of some 30", tr.Slow)
	}
	var text strings.Builder
	rep.WriteText(&text, false)
	if !strings.Contains(text.String(), "slow PINGs (at or above 5.000 ms): slow_command ") {
		t.Errorf("the text lacks the slow PINGs' causes:\n%s", text.String())
	}
	if keysizes {
		if !strings.Contains(tr.LargestKeys, "strings of 2M-4M bytes") ||
			!strings.Contains(text.String(), "largest keys then (INFO KEYSIZES): strings of 2M-4M bytes") {
			t.Errorf("%s: largest keys %q, want a 3 MB string's bin in the report and its text:\n%s", v, tr.LargestKeys, text.String())
		}
	} else if tr.LargestKeys != "" {
		t.Errorf("%s has no INFO KEYSIZES, yet largest keys %q", v, tr.LargestKeys)
	}
}
