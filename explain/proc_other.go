//go:build !linux

package explain

import (
	"github.com/redis-prober/redis-prober/internal/host"
	"github.com/redis-prober/redis-prober/internal/redisinfo"
)

// procSampler has nothing to read off Linux.
type procSampler struct {
	paths host.Paths
	off   bool
}

func (s *procSampler) attach(redisinfo.Info) {}

func (s *procSampler) attached() bool { return false }

func (s *procSampler) sample(int64) []Evidence { return nil }

func (s *procSampler) key() (int, bool) { return 0, false }

func (s *procSampler) unsampled() procSampler { return *s }
