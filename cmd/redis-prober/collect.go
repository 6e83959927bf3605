package main

import "github.com/redis-prober/redis-prober/engine"

// addCollectorRunFlags declares the collector flags of `run` (--collector.*,
// --path.procfs, --path.sysfs) and returns their extension.
func addCollectorRunFlags(g flagGroup) extension {
	return func(extensionEnv) ([]engine.Service, error) { return nil, nil }
}
