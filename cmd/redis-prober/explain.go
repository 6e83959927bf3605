package main

import (
	"fmt"

	"github.com/alecthomas/kingpin/v2"

	"github.com/redis-prober/redis-prober/engine"
	"github.com/redis-prober/redis-prober/explain"
)

// addExplainRunFlags declares the slow-request attribution flags of `run`
// (--explain, --explain.slow-threshold) and returns their extension; a
// local redis-server's /proc is read under paths.
func addExplainRunFlags(cmd *kingpin.CmdClause, paths pathFlags) extension {
	on := cmd.Flag("explain", "Attribute every slow probe request to one cause (redis_prober_slow_requests_total, docs/explain.md).").
		Default("true").Bool()
	threshold := durationFlag(cmd, "explain.slow-threshold",
		"Latency at or above which a probe request is slow (0: min(objective, max(4 × the node's own p99 over 5 minutes, 1ms))).", "0s")

	return func(env extensionEnv) ([]engine.Service, error) {
		if !*on {
			return nil, nil
		}
		if *threshold < 0 {
			return nil, usagef("--explain.slow-threshold: %v must not be negative", *threshold)
		}
		m := explain.NewMetrics()
		if err := env.reg.Register(m); err != nil {
			return nil, fmt.Errorf("register slow-request metrics: %w", err)
		}
		svc := engine.NewExplain(engine.ExplainConfig{Log: env.log, Metrics: m,
			Paths: paths.paths(), Threshold: *threshold})
		env.status.Explain = svc
		return []engine.Service{svc}, nil
	}
}
