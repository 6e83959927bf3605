package main

import (
	"fmt"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/redis-prober/redis-prober/changes"
	"github.com/redis-prober/redis-prober/engine"
)

// addChangeRunFlags declares the change-detection flags of `run`
// (--changes.*) and returns their extension. The host is read under paths,
// the --path.* flags run declared.
func addChangeRunFlags(cmd *kingpin.CmdClause, paths pathFlags) extension {
	interval := durationFlag(cmd, "changes.interval",
		"How often to look for changes: on every target restart, version, config, role, maxmemory; on the host kernel, THP and sysctls (0 disables).", "10s")
	window := durationFlag(cmd, "changes.window",
		"Probe latency window kept before the last change and since it (redis_prober_change_latency_seconds).", "30m")
	minSamples := intFlag(cmd, "changes.min-samples",
		"Samples of a command a window needs before its quantiles are exported.", "300")

	return func(env extensionEnv) ([]engine.Service, error) {
		if *interval == 0 {
			return nil, nil
		}
		if *interval < 100*time.Millisecond {
			return nil, usagef("--changes.interval: %v must be at least 100ms", *interval)
		}
		if *window < time.Minute || *window < 2**interval {
			return nil, usagef("--changes.window: %v must be at least 1m and twice --changes.interval", *window)
		}
		if *minSamples < 1 {
			return nil, usagef("--changes.min-samples: %d must be at least 1", *minSamples)
		}
		svc := changes.New(changes.Config{Interval: *interval, Window: *window, MinSamples: uint64(*minSamples),
			Paths: paths.paths()}, env.log, env.metrics)
		if err := env.reg.Register(svc); err != nil {
			return nil, fmt.Errorf("register change metrics: %w", err)
		}
		env.status.Changes = svc
		return []engine.Service{svc}, nil
	}
}
