//go:build !linux

package explain

import (
	"testing"
	"time"
)

func starve(t *testing.T, _, _ int, _ time.Duration) func() {
	t.Skip("CPU affinity is Linux's")
	return nil
}

func isolate(t *testing.T, _ int) (int, func()) {
	t.Skip("CPU affinity is Linux's")
	return 0, nil
}
