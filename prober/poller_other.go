//go:build !linux

package prober

import "github.com/redis-prober/redis-prober/wire"

// Poller is the shared event loop of probe connections on Linux. Elsewhere
// the kernel gives no timestamps, so every connection keeps a goroutine of
// its own (timed by the prober's clock) and a Poller holds nothing.
type Poller struct{}

// Stamping is nil: there are no kernel timestamps.
func (*Poller) Stamping() *wire.Stamping { return nil }

// NewPoller returns a Poller.
func NewPoller() *Poller { return &Poller{} }

// Connections is how many probe connections the loop serves: none here.
func (*Poller) Connections() int { return 0 }

func (*Poller) stopped() {}

func (w *worker) pollable() bool { return false }
func (w *worker) handOver() bool { return false }
