package engine

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"
)

// A clean-up that cannot connect yet (a control pool still failing fast
// after Redis came back) is tried again within its budget; any other
// failure, or the end of the budget, ends it at once.
func TestCleanupRetryingOnlyRetriesDials(t *testing.T) {
	dialErr := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	other := errors.New("NOPERM")
	for _, tc := range []struct {
		name   string
		errs   []error // what each call returns; nil after the list
		budget time.Duration
		want   error
		calls  int
	}{
		{"dial errors, then it works", []error{dialErr, dialErr}, 5 * time.Second, nil, 3},
		{"another error is final", []error{other, nil}, 5 * time.Second, other, 1},
		// How many tries fit in the budget is the host's business: -1.
		{"dial errors past the budget", []error{dialErr, dialErr, dialErr, dialErr, dialErr, dialErr}, 150 * time.Millisecond, dialErr, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), tc.budget)
			defer cancel()
			calls := 0
			err := cleanupRetrying(ctx, func(context.Context) error {
				calls++
				if calls <= len(tc.errs) {
					return tc.errs[calls-1]
				}
				return nil
			})
			if !errors.Is(err, tc.want) || (tc.calls >= 0 && calls != tc.calls) || calls > len(tc.errs)+1 {
				t.Fatalf("err %v after %d calls, want %v after %d", err, calls, tc.want, tc.calls)
			}
		})
	}
}
