package engine

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/redis-prober/redis-prober/internal/usage"
	"github.com/redis-prober/redis-prober/prober"
)

// Reload hands its request to Run and gets the outcome back; a failed load
// keeps what runs and shows in the gauge; once Run is done, Reload fails at
// once instead of waiting.
func TestReloaderServesRequestsUntilStopped(t *testing.T) {
	var fail atomic.Bool
	src := &TargetSource{ShardIndex: -1, MaxNodes: DefaultMaxNodes,
		Endpoints: func(*slog.Logger) ([]string, []prober.Endpoint, error) {
			if fail.Load() {
				return nil, nil, usage.Errorf("--redis.addr: bad")
			}
			return nil, nil, nil
		}}
	log := slog.New(slog.DiscardHandler)
	reg := prometheus.NewRegistry()
	eng := New(reg, log)
	r := NewReloader(src, eng, log, reg)
	ctx, cancel := context.WithCancel(context.Background())
	initial, err := src.Load(ctx, log)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx, initial) }()

	if err := r.Reload(ctx); err != nil {
		t.Fatalf("reload: %v", err)
	}
	if v := testutil.ToFloat64(r.ok); v != 1 {
		t.Errorf("reload gauge %v after a good reload, want 1", v)
	}
	fail.Store(true)
	var ue usage.Error
	if err := r.Reload(ctx); !errors.As(err, &ue) {
		t.Fatalf("reload of a bad config: %v, want its usage error", err)
	}
	if v := testutil.ToFloat64(r.ok); v != 0 {
		t.Errorf("reload gauge %v after a failed reload, want 0", v)
	}

	cancel()
	<-done
	got := make(chan error, 1)
	go func() { got <- r.Reload(context.Background()) }()
	select {
	case err := <-got:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("reload after stop: %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reload after stop still waiting after 5s")
	}
}
