package prober

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/redistest"
)

// A control client's call ends at its caller's deadline when that is
// sooner than the client's timeout: a burst's 200 ms INFO check or a
// collector's refresh on a stopped server must not wait out the timeout.
func TestControlClientHonoursTheCallersDeadline(t *testing.T) {
	srv := redistest.Start(t)
	const timeout = 10 * time.Second
	c := Endpoint{Network: "tcp", Addr: srv.Addr()}.NewClient(timeout, 1)
	defer c.Close()
	if err := c.Ping(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	srv.Pause()
	defer srv.Resume()
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := c.Info(ctx, "server").Err()
	took := time.Since(start)
	if err == nil {
		t.Fatal("INFO answered by a stopped server")
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("INFO on a stopped server: %v, want a deadline error", err)
	}
	// The bound is the client's own timeout, far above the deadline: what
	// is checked is which of the two ended the call, not how fast.
	if took >= timeout {
		t.Errorf("INFO with a 200 ms deadline took %v: the client waited out its %v timeout", took, timeout)
	}
}
