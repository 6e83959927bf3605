package changes

import (
	"context"
	"time"

	"github.com/redis-prober/redis-prober/engine"
	"github.com/redis-prober/redis-prober/prober"
	"github.com/redis-prober/redis-prober/prober/history"
)

// Attach watches the node for changes on its housekeeping loop (one check
// at once and then every interval) and keeps its probe's latency in the
// window the change latency is read from; the node's series go at Done.
func (c *Detector) Attach(n engine.Node) engine.NodeHooks {
	if c.cfg.Interval <= 0 {
		return engine.NodeHooks{}
	}
	t := n.Target
	nw, gen := c.attach(t, n.Commands)
	c.metrics.InitChanges(t.Name, watchedKinds...)
	log := t.Logger(c.log, "service", "changes")
	w := &nodeWatcher{c: c, t: t, control: n.Control, nw: nw, log: log, hostGen: gen}
	return engine.NodeHooks{
		Tap:   func(rec prober.Recorder) prober.Recorder { return history.TapRecorder(rec, nw.window) },
		Tasks: []engine.Task{{Every: c.cfg.Interval, Run: func(ctx context.Context) { w.check(ctx, time.Now()) }}},
		Done:  func() { c.detach(t, nw) },
	}
}
