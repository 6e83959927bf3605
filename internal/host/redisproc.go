package host

import (
	"fmt"
	"strconv"
	"strings"
)

// StartSlack is how far a process start time may be from the one INFO
// implies (uptime_in_seconds is whole seconds), in seconds.
const StartSlack = 5.0

// isRedisProcess tells the process names accepted as the Redis server.
func isRedisProcess(name string) bool { return name == "redis-server" || name == "valkey-server" }

// RedisProcess finds the Redis process pid after checking that it is
// really the server we talk to: its name is redis-server (or
// valkey-server), when its title shows a listening port that port is
// tcpPort, and when the start times are readable it started at started
// (Unix seconds; 0: unknown) as INFO says. A PID from another namespace,
// or a process we may not read, is ErrNoData. It returns the process and
// its status, read once.
func (r Reader) RedisProcess(pid, tcpPort int, started float64) (Process, ProcStatus, error) {
	if pid <= 0 {
		return Process{}, ProcStatus{}, fmt.Errorf("no process_id in INFO: %w", ErrNoData)
	}
	proc := r.Process(pid)
	st, err := proc.Status()
	if err != nil {
		return Process{}, ProcStatus{}, err
	}
	if !isRedisProcess(st.Name) {
		return Process{}, ProcStatus{}, fmt.Errorf("pid %d is %q, not redis-server (Redis runs in another PID namespace): %w", pid, st.Name, ErrNoData)
	}
	if args, err := proc.Cmdline(); err == nil && tcpPort > 0 {
		if port, ok := titlePort(args); ok && port != tcpPort {
			return Process{}, ProcStatus{}, fmt.Errorf("pid %d listens on port %d, not %d (another Redis): %w", pid, port, tcpPort, ErrNoData)
		}
	}
	if started > 0 {
		if err := checkStarted(proc, started); err != nil {
			return Process{}, ProcStatus{}, fmt.Errorf("pid %d: %w", pid, err)
		}
	}
	return proc, st, nil
}

// checkStarted compares the process start time with the server's. Missing
// or unreadable files skip the comparison; a mismatch is another process.
func checkStarted(proc Process, started float64) error {
	t, err := proc.StartTime()
	if err != nil {
		return nil
	}
	if d := t - started; d > StartSlack || d < -StartSlack {
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
