package collector

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis-prober/redis-prober/internal/host"
	"github.com/redis-prober/redis-prober/internal/redisinfo"
)

// isRedisProcess tells the process names accepted as the Redis server.
func isRedisProcess(name string) bool { return name == "redis-server" || name == "valkey-server" }

// ReadProcess reads the Redis process from /proc, after checking that it is
// really the server we talk to: its name is redis-server (or
// valkey-server), when its title shows a listening port that port is the
// server's, and when the start times are readable it started when INFO
// says. A PID from another namespace, or a process we may not read, is
// ErrNoData.
func ReadProcess(paths Paths, id redisinfo.Identity) (*ProcessStats, error) {
	pid, tcpPort := id.PID, id.TCPPort
	if pid <= 0 {
		return nil, fmt.Errorf("no process_id in INFO: %w", ErrNoData)
	}
	proc := paths.Host().Process(pid)
	st, err := proc.Status()
	if err != nil {
		return nil, err
	}
	if !isRedisProcess(st.Name) {
		return nil, fmt.Errorf("pid %d is %q, not redis-server (Redis runs in another PID namespace): %w", pid, st.Name, ErrNoData)
	}
	if args, err := proc.Cmdline(); err == nil && tcpPort > 0 {
		if port, ok := titlePort(args); ok && port != tcpPort {
			return nil, fmt.Errorf("pid %d listens on port %d, not %d (another Redis): %w", pid, port, tcpPort, ErrNoData)
		}
	}
	if id.Started > 0 {
		if err := checkStarted(proc, id.Started); err != nil {
			return nil, fmt.Errorf("pid %d: %w", pid, err)
		}
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

// checkStarted compares the process start time with the server's. Missing
// or unreadable files skip the comparison; a mismatch is another process.
func checkStarted(proc host.Process, started float64) error {
	t, err := proc.StartTime()
	if err != nil {
		return nil
	}
	if d := t - started; d > startSlack || d < -startSlack {
		return fmt.Errorf("started %.0fs apart from the server we talk to (another Redis): %w", d, ErrNoData)
	}
	return nil
}

// titlePort finds the port in a redis-server process title such as
// "redis-server 127.0.0.1:6379" or "redis-server *:6379 [cluster]".
func titlePort(args []string) (int, bool) {
	for _, w := range strings.Fields(strings.Join(args, " ")) {
		i := strings.LastIndexByte(w, ':')
		if i < 0 {
			continue
		}
		if p, err := strconv.Atoi(w[i+1:]); err == nil && p > 0 && p < 65536 {
			return p, true
		}
	}
	return 0, false
}
