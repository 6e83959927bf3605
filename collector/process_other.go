//go:build !linux

package collector

import (
	"github.com/redis-prober/redis-prober/internal/redisinfo"

	"github.com/redis-prober/redis-prober/internal/host"
)

// ReadProcess has no /proc to read on this OS: the process collector
// exports nothing, and says so at debug.
func ReadProcess(host.Paths, redisinfo.Identity) (*ProcessStats, error) {
	return nil, errNotHere("the redis-server process (/proc)")
}
