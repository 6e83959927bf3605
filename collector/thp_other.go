//go:build !linux

package collector

import "github.com/redis-prober/redis-prober/internal/host"

func newTHPCollector(host.Paths) source { return unavailable("thp") }
