// Package explain attributes every slow probe request of a node to one
// cause (fork, a slow command of another client, a starved CPU, the
// network, ...), from the node's own timeline: the INFO read the engine
// already shares, the timestamps Redis gives (SLOWLOG/COMMANDLOG, LATENCY
// events), /proc of a local redis-server, the probe's own client delay
// and the probe socket's TCP_INFO. docs/explain.md says how, at what resolution and with what
// limits.
package explain

// Cause is what a slow request is attributed to. The list is fixed, so
// redis_prober_slow_requests_total has a bounded, known label set, every
// value of it exported from the start.
type Cause uint8

// The causes, in the order of precedence: when several sources overlap a
// slow request equally well, the first in this list wins (see Decide).
const (
	// Fork is the fork(2) of a BGSAVE or AOF rewrite stalling the main
	// thread, and the copy-on-write faults while its child runs.
	Fork Cause = iota
	// Persistence is the AOF's write and fsync (aof_delayed_fsync, the
	// aof-* latency events) and the removal of an old RDB file.
	Persistence
	// SlowCommand is another command (of any client) that ran while ours
	// waited: SLOWLOG/COMMANDLOG entries, the command latency events.
	SlowCommand
	// LatencyEvent is a LATENCY event of a class none of the above or
	// below names (a module's, a new server's).
	LatencyEvent
	// Eviction is maxmemory eviction (evicted_keys, the eviction-* events).
	Eviction
	// Expiry is the active expire cycle (expire-cycle events, the cycle's
	// CPU time in INFO).
	Expiry
	// Defrag is active defragmentation.
	Defrag
	// RedisCPU is the redis-server main thread waiting for a CPU
	// (/proc/<pid>/schedstat run delay), when its /proc is visible.
	RedisCPU
	// Swap is the redis-server process faulting pages in from disk
	// (major faults), when its /proc is visible.
	Swap
	// Network is the probe connection's round trip rising in the kernel's
	// own view (TCP_INFO): a segment retransmitted during the request, or
	// a smoothed round trip well over the path's minimum.
	Network
	// Host is the prober's host: a request timed by the prober's own clock
	// while this host was slow to read replies (a client-delay spike).
	Host
	// Unexplained is a slow request no source accounts for. Its share is
	// exported, never hidden.
	Unexplained

	// NumCauses is the length of the list.
	NumCauses
)

var causeNames = [NumCauses]string{
	Fork: "fork", Persistence: "persistence", SlowCommand: "slow_command", LatencyEvent: "latency_event",
	Eviction: "eviction", Expiry: "expiry", Defrag: "defrag", RedisCPU: "redis_cpu", Swap: "swap",
	Network: "network", Host: "host", Unexplained: "unexplained",
}

// String is the cause's label value.
func (c Cause) String() string {
	if c < NumCauses {
		return causeNames[c]
	}
	return "unknown"
}

// Causes returns every cause in the order of precedence, Unexplained last.
func Causes() []Cause {
	out := make([]Cause, NumCauses)
	for i := range out {
		out[i] = Cause(i)
	}
	return out
}

// ParseCause is the inverse of String.
func ParseCause(s string) (Cause, bool) {
	for i, n := range causeNames {
		if n == s {
			return Cause(i), true
		}
	}
	return 0, false
}

// latencyEventCause maps a LATENCY event class (Redis 2.8.13 to 8, Valkey)
// to its cause: the classes the server names after a fork, the AOF, a
// command, eviction, expiry or defrag go there; any other is LatencyEvent.
func latencyEventCause(event string) Cause {
	switch {
	case event == "fork":
		return Fork
	case len(event) > 4 && event[:4] == "aof-", event == "rdb-unlink-temp-file":
		return Persistence
	case event == "command", event == "fast-command":
		return SlowCommand
	case len(event) > 9 && event[:9] == "eviction-":
		return Eviction
	case event == "expire-cycle", event == "expire-del":
		return Expiry
	case event == "active-defrag-cycle":
		return Defrag
	}
	return LatencyEvent
}
