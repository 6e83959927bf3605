package engine

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

var _ TaskService = (*Changes)(nil)

// NodeTasks watches node t for changes on the node's housekeeping loop:
// one check at once and then every interval, as RunTarget does on a
// goroutine of its own.
func (c *Changes) NodeTasks(t Target, control *redis.Client) ([]Task, func()) {
	if c.cfg.Interval <= 0 {
		return nil, func() {}
	}
	nw, gen := c.attach(t)
	c.metrics.InitChanges(t.Name, watchedKinds...)
	log := t.logger(c.log, "service", "changes")
	w := &nodeWatcher{c: c, t: t, control: control, nw: nw, log: log, hostGen: gen}
	return []Task{{Every: c.cfg.Interval, Run: func(ctx context.Context) { w.check(ctx, time.Now()) }}},
		func() { c.detach(t, nw) }
}
