//go:build !linux

package collector

import "github.com/redis-prober/redis-prober/internal/host"

func newPressureCollector(host.Paths) source { return unavailable("memory pressure (PSI)") }
