package main

import (
	"sync"

	"github.com/redis-prober/redis-prober/collector"
	"github.com/redis-prober/redis-prober/engine"
)

// checkBoard holds the collector target of every running node, so the
// status page can list the checks that fail at their last evaluation. One
// pointer a running node, removed when the node stops; the zero value is
// ready.
type checkBoard struct {
	mu    sync.Mutex
	nodes map[[2]string]*collector.Target
}

func (b *checkBoard) add(t engine.Target, tgt *collector.Target) (remove func()) {
	key := [2]string{t.Name, t.Node}
	b.mu.Lock()
	if b.nodes == nil {
		b.nodes = map[[2]string]*collector.Target{}
	}
	b.nodes[key] = tgt
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		if b.nodes[key] == tgt {
			delete(b.nodes, key)
		}
		b.mu.Unlock()
	}
}

var _ engine.CheckSource = (*collectorService)(nil)

// FailingChecks serves the status page: the node's checks that failed at
// the last refresh.
func (s *collectorService) FailingChecks(target, node string) ([]collector.FailedCheck, bool) {
	s.checks.mu.Lock()
	tgt := s.checks.nodes[[2]string{target, node}]
	s.checks.mu.Unlock()
	if tgt == nil {
		return nil, false
	}
	return tgt.FailingChecks()
}
