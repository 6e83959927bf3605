package explain

import (
	"strconv"
	"strings"
	"time"

	"github.com/redis-prober/redis-prober/collector"
)

// infoSnap is what attribution reads of one INFO reply.
type infoSnap struct {
	at    int64 // Unix ns on the prober's clock when the server wrote it
	runID string

	totalForks, latestForkUsec int64
	hasTotalForks              bool
	child                      bool // a BGSAVE, AOF rewrite or module fork child runs
	aofDelayedFsync            int64
	evicted                    int64
	expireCPUMillis            int64
	expireCapReached           int64
	defragRunning              bool
	defragHits                 int64
	// activeNs and cpuNs are the main thread's time active (out of its
	// event loop's wait) and on a CPU (user + system), Valkey 9.1+;
	// hasActive says the server gives both.
	activeNs, cpuNs int64
	hasActive       bool
}

func infoInt(info collector.Info, key string) int64 {
	v, _ := info.Int(key)
	return v
}

// snapOf reads info, dated at (see Reader.dateInfo).
func snapOf(info collector.Info, at int64) infoSnap {
	s := infoSnap{at: at, runID: strings.Clone(info["run_id"])}
	s.totalForks, s.hasTotalForks = info.Int("total_forks")
	s.latestForkUsec = infoInt(info, "latest_fork_usec")
	s.child = infoInt(info, "rdb_bgsave_in_progress") == 1 || infoInt(info, "aof_rewrite_in_progress") == 1 ||
		infoInt(info, "module_fork_in_progress") == 1
	s.aofDelayedFsync = infoInt(info, "aof_delayed_fsync")
	s.evicted = infoInt(info, "evicted_keys")
	s.expireCPUMillis = infoInt(info, "expire_cycle_cpu_milliseconds")
	s.expireCapReached = infoInt(info, "expired_time_cap_reached_count")
	s.defragRunning = infoInt(info, "active_defrag_running") > 0
	s.defragHits = infoInt(info, "active_defrag_hits")
	active, ok1 := info.Float("used_active_time_main_thread")
	user, ok2 := info.Float("used_cpu_user_main_thread")
	sys, ok3 := info.Float("used_cpu_sys_main_thread")
	if s.hasActive = ok1 && ok2 && ok3; s.hasActive {
		s.activeNs, s.cpuNs = int64(active*1e9), int64((user+sys)*1e9)
	}
	return s
}

// minRunDelay is the smallest wait for a CPU in one sample kept as
// evidence: a busy host's scheduler makes a few µs of it all the time.
const minRunDelay = 250 * time.Microsecond

// offCPUEvidence is the time the main thread was busy but not on a CPU
// between two INFO reads of a Valkey 9.1+ (used_active_time_main_thread
// less the main thread's CPU time): waiting for a CPU mostly, or in a
// blocking call. It stands in for /proc's run delay where the server's
// /proc is not visible (a remote server), at the INFO interval's
// resolution; with /proc it is not used (the same wait twice).
func offCPUEvidence(prev, cur infoSnap) []Evidence {
	if !prev.hasActive || !cur.hasActive || prev.runID != cur.runID || cur.at <= prev.at {
		return nil
	}
	off := time.Duration((cur.activeNs - prev.activeNs) - (cur.cpuNs - prev.cpuNs))
	if off < minRunDelay {
		return nil
	}
	off = min(off, time.Duration(cur.at-prev.at))
	return []Evidence{{Cause: RedisCPU, From: prev.at, To: cur.at, Dur: off, Spread: true}}
}

// infoEvidence is what changed between two INFO snapshots of the same
// server, as evidence over the interval between them: what happened
// between two reads happened somewhere in it. A restart in between (a new
// run_id) gives none: counters started over.
func infoEvidence(prev, cur infoSnap) []Evidence {
	if prev.runID != cur.runID || cur.at <= prev.at {
		return nil
	}
	var out []Evidence
	add := func(c Cause, d time.Duration) {
		out = append(out, Evidence{Cause: c, From: prev.at, To: cur.at, Dur: d})
	}
	forked := cur.totalForks > prev.totalForks
	if !cur.hasTotalForks {
		forked = cur.latestForkUsec > 0 && cur.latestForkUsec != prev.latestForkUsec
	}
	if forked {
		add(Fork, time.Duration(cur.latestForkUsec)*time.Microsecond)
	}
	if prev.child || cur.child {
		add(Fork, 0) // the child's copy-on-write
	}
	if cur.aofDelayedFsync > prev.aofDelayedFsync {
		add(Persistence, 0)
	}
	if cur.evicted > prev.evicted {
		add(Eviction, 0)
	}
	if d := cur.expireCPUMillis - prev.expireCPUMillis; d > 0 {
		add(Expiry, time.Duration(d)*time.Millisecond)
		out[len(out)-1].Spread = true // many cycles' CPU over the interval
	} else if cur.expireCapReached > prev.expireCapReached {
		add(Expiry, 0)
	}
	if prev.defragRunning || cur.defragRunning || cur.defragHits > prev.defragHits {
		add(Defrag, 0)
	}
	return out
}

// serverMicros reads server_time_usec (Redis 5+), 0 when absent.
func serverMicros(info collector.Info) int64 {
	v, err := strconv.ParseInt(info["server_time_usec"], 10, 64)
	if err != nil || v <= 0 {
		return 0
	}
	return v
}
