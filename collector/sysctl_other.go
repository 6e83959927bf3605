//go:build !linux

package collector

import "github.com/redis-prober/redis-prober/internal/host"

func newSysctlCollector(host.Paths) source { return unavailable("sysctl") }
