//go:build !linux

package collector

import "github.com/redis-prober/redis-prober/internal/host"

func newVMStatCollector(host.Paths) source { return unavailable("vmstat") }
