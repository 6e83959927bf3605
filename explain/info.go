package explain

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis-prober/redis-prober/internal/redisinfo"
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
	// ioActiveNs is the io threads' time active, added up over the
	// ioThreads of them (used_active_time_io_thread_<n>, Valkey 9.1+ with
	// io-threads > 1); otherCPUNs is the CPU time of every thread but the
	// main one (the process's less the main thread's): INFO gives no io
	// thread's own.
	ioActiveNs, otherCPUNs int64
	ioThreads              int
}

func infoInt(info redisinfo.Info, key string) int64 {
	v, _ := info.Int(key)
	return v
}

// snapOf reads info, dated at (see Reader.dateInfo).
func snapOf(info redisinfo.Info, at int64) infoSnap {
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
		s.activeNs, s.cpuNs = nanos(active), nanos(user)+nanos(sys)
	}
	s.readIOThreads(info)
	return s
}

// nanos is INFO's seconds (µs digits) in ns, rounded: a difference of
// two readings is then exact to the µs.
func nanos(sec float64) int64 { return int64(math.Round(sec * 1e9)) }

// maxIOThreads bounds the io threads read: Valkey's own limit (io-threads
// at most 256, the main thread one of them).
const maxIOThreads = 256

// readIOThreads reads the io threads' active time, numbered from 1 with
// no gap, and the CPU time of the threads other than the main one; a
// server without them (io-threads 1, before Valkey 9.1, Redis) leaves
// ioThreads at 0.
func (s *infoSnap) readIOThreads(info redisinfo.Info) {
	if !s.hasActive {
		return
	}
	user, ok1 := info.Float("used_cpu_user")
	sys, ok2 := info.Float("used_cpu_sys")
	if !ok1 || !ok2 {
		return
	}
	var sum int64
	n := 0
	for n < maxIOThreads-1 {
		v, ok := info.Float("used_active_time_io_thread_" + strconv.Itoa(n+1))
		if !ok || v < 0 {
			break
		}
		sum += nanos(v)
		n++
	}
	if n == 0 {
		return
	}
	s.ioActiveNs, s.ioThreads = sum, n
	s.otherCPUNs = nanos(user) + nanos(sys) - s.cpuNs
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

// ioOffCPUEvidence is the time the io threads were active but not on a
// CPU between two INFO reads of a Valkey 9.1+ with io threads: a request's
// read or reply waited that long in an io thread that waited for a CPU,
// so it is redis_cpu as the main thread's off-CPU time is, and stands in
// for /proc in the same way.
//
// INFO gives the io threads' active time one by one but their CPU time
// only within the process's, so their CPU is taken as the process's less
// the main thread's: the other threads' (bio, the allocator's) too. And an
// io thread spins a while on its empty queue before it sleeps, CPU time
// that is not active: with io-threads 2 and 4 on a 2-CPU host, under
// load or starved beside busy loops, their CPU time always exceeded their
// active time (1.4 s to 1.2 s), and a starved server turned its io
// threads off (io_threads_active:0). So the difference is a lower bound:
// silent mostly, never more than the io threads really waited. A request
// goes through one io thread, so the wait charged is the mean of a
// thread, at most the interval.
func ioOffCPUEvidence(prev, cur infoSnap) []Evidence {
	if prev.ioThreads == 0 || cur.ioThreads != prev.ioThreads || prev.runID != cur.runID || cur.at <= prev.at {
		return nil
	}
	off := time.Duration((cur.ioActiveNs - prev.ioActiveNs) - (cur.otherCPUNs - prev.otherCPUNs))
	off /= time.Duration(cur.ioThreads)
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

// infoField says whether explain reads an INFO field: snapOf's,
// serverMicros', CommandlogSupported's, IdentityFromInfo's (the /proc
// sampler's attach), and parseKeySizes' by their prefix. Tick parses only
// these (redisinfo.ParseKeys); TestInfoFieldsAreAllExplainReads holds
// the list to what those functions read.
func infoField(k string) bool {
	switch k {
	case "run_id", "total_forks", "latest_fork_usec", "rdb_bgsave_in_progress", "aof_rewrite_in_progress",
		"module_fork_in_progress", "aof_delayed_fsync", "evicted_keys", "expire_cycle_cpu_milliseconds",
		"expired_time_cap_reached_count", "active_defrag_running", "active_defrag_hits",
		"used_active_time_main_thread", "used_cpu_user_main_thread", "used_cpu_sys_main_thread",
		"used_cpu_user", "used_cpu_sys", "server_time_usec", "valkey_version",
		"process_id", "tcp_port", "uptime_in_seconds":
		return true
	}
	return strings.HasPrefix(k, "used_active_time_io_thread_") ||
		strings.HasPrefix(k, "db") && strings.Contains(k, "_distrib_")
}

// infoStamp is serverMicros of an INFO text, found without parsing it
// (0 when absent or not a number).
func infoStamp(text string) int64 {
	const field = "\nserver_time_usec:"
	i := strings.Index(text, field)
	if i < 0 {
		return 0
	}
	v := text[i+len(field):]
	if j := strings.IndexAny(v, "\r\n"); j >= 0 {
		v = v[:j]
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

// serverMicros reads server_time_usec (Redis 5+), 0 when absent.
func serverMicros(info redisinfo.Info) int64 {
	v, err := strconv.ParseInt(info["server_time_usec"], 10, 64)
	if err != nil || v <= 0 {
		return 0
	}
	return v
}
