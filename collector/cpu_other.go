//go:build !linux

package collector

import "github.com/redis-prober/redis-prober/internal/host"

func newCPUCollector(host.Paths) source { return unavailable("cpu") }
