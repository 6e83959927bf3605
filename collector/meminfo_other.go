//go:build !linux

package collector

import "github.com/redis-prober/redis-prober/internal/host"

func newMeminfoCollector(host.Paths) source { return unavailable("meminfo") }
