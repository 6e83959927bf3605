package collector

import (
	"time"

	"github.com/redis-prober/redis-prober/internal/host"
	"github.com/redis-prober/redis-prober/internal/redisinfo"
)

// ReadProcess reads the Redis process from /proc, once host's
// RedisProcess has checked that it is really the server we talk to. A PID
// from another namespace, or a process we may not read, is ErrNoData.
func ReadProcess(paths host.Paths, id redisinfo.Identity) (*ProcessStats, error) {
	pid := id.PID
	proc, st, err := paths.Host().RedisProcess(pid, id.TCPPort, id.Started)
	if err != nil {
		return nil, err
	}
	ps := &ProcessStats{
		PID:                 pid,
		RSSBytes:            st.RSS,
		SwapBytes:           st.Swap,
		VoluntarySwitches:   st.Voluntary,
		InvoluntarySwitches: st.Involuntary,
	}
	if n, err := host.ParseListCount(st.CPUsAllowed); err == nil {
		ps.CPUsAllowed = n
	}
	if n, err := host.ParseListCount(st.MemsAllow); err == nil {
		ps.NUMANodesAllowed = n
	}
	if v, err := proc.AnonHugePages(); err == nil {
		ps.AnonHugePagesBytes, ps.HasAnonHugePages = v, true
	}
	if v, ok, err := proc.OpenFilesLimit(); err == nil {
		ps.OpenFilesLimit, ps.HasOpenFilesLimit = v, ok
	}
	if t, err := proc.StartTime(); err == nil && t > 0 {
		ps.Started = time.Unix(0, int64(t*1e9))
		ps.started = startStamp(ps.Started)
	}
	return ps, nil
}
