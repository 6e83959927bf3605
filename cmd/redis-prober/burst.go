package main

import "github.com/redis-prober/redis-prober/engine"

// addBurstRunFlags declares the periodic-burst flags of `run` (--burst.*) and
// returns their extension.
func addBurstRunFlags(g flagGroup) extension {
	durationFlag(g, "burst.interval", "How often to run a bounded load burst (0 disables).", "0s")
	return func(extensionEnv) ([]engine.Service, error) { return nil, nil }
}
