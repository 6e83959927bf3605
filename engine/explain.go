package engine

import (
	"log/slog"
	"time"

	"github.com/redis-prober/redis-prober/explain"
	"github.com/redis-prober/redis-prober/internal/host"
	"github.com/redis-prober/redis-prober/internal/nodeid"
)

// ExplainConfig is slow-request attribution in run mode.
type ExplainConfig struct {
	Log     *slog.Logger
	Metrics *explain.Metrics // registered by the caller
	Paths   host.Paths       // where a local redis-server's /proc is read
	// Threshold fixes the slow threshold; 0 follows each node's own p99
	// under its objective (explain.BaselineFactor).
	Threshold time.Duration
}

// Explain attributes every slow probe request of every node to one cause
// (package explain): it taps the node's probe samples and reads the
// node's sources on its housekeeping loop.
type Explain struct {
	cfg   ExplainConfig
	share *explain.Share // the nodes' servers' /proc samples, a budget of log reads
}

var _ Service = (*Explain)(nil)

// NewExplain returns the service; add it to the engine's services.
func NewExplain(cfg ExplainConfig) *Explain {
	if cfg.Metrics == nil {
		cfg.Metrics = explain.NewMetrics()
	}
	return &Explain{cfg: cfg, share: explain.NewShare()}
}

// Name names the service in logs.
func (s *Explain) Name() string { return "explain" }

// Node is the attribution of target's node, nil when it does not run.
func (s *Explain) Node(id nodeid.ID) *explain.Node { return s.cfg.Metrics.Node(id) }

// Attach taps the node's probe samples into its attribution and reads the
// node's sources on its housekeeping loop.
func (s *Explain) Attach(nd Node) NodeHooks {
	t := nd.Target
	n := explain.NewNode(explain.Config{Objective: t.Objective, Threshold: s.cfg.Threshold, MaxLatency: t.Probe.Timeout})
	r := explain.NewReader(explain.ReaderConfig{Node: n, Client: nd.Control, Log: t.Logger(s.cfg.Log), Paths: s.cfg.Paths, Share: s.share,
		Cached: nd.CachedInfo})
	remove := s.cfg.Metrics.Add(t.ID(), n)
	// /proc between the ticks is the Share's to sample, once for all the
	// nodes of a local server and only while one had slow requests.
	s.share.Hold()
	done := func() {
		remove()
		s.share.Release()
	}
	return NodeHooks{Tap: n.Tap, Tasks: []Task{{Every: explain.TickInterval, Run: r.Tick}}, Done: done}
}
