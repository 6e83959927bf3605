package collector

import (
	"github.com/redis-prober/redis-prober/internal/host"
)

// Host returns the host reader over these roots: the one reader of /proc
// and /sys that the collectors, the change watcher and the burst report's
// environment snapshot share.
func (p Paths) Host() host.Reader { return host.New(p.ProcFS, p.SysFS) }
