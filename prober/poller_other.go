//go:build !linux

package prober

// Poller is the shared event loop of probe connections on Linux. Elsewhere
// the kernel gives no timestamps, so every connection keeps a goroutine of
// its own (timed by the prober's clock) and a Poller holds nothing.
type Poller struct{}

// NewPoller returns a Poller.
func NewPoller() *Poller { return &Poller{} }

// Connections is how many probe connections the loop serves: none here.
func (*Poller) Connections() int { return 0 }

func (*Poller) stopped() {}

func (w *worker) pollable() bool { return false }
func (w *worker) handOver() bool { return false }
