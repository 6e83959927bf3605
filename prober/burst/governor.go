package burst

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis-prober/redis-prober/internal/bytesize"
	"github.com/redis-prober/redis-prober/internal/redisinfo"
	"github.com/redis/go-redis/v9"
)

// Outcome is how a burst ended, the outcome label of
// redis_prober_burst_runs_total.
type Outcome string

const (
	OutcomeCompleted Outcome = "completed"
	OutcomeAborted   Outcome = "aborted"
	OutcomeSkipped   Outcome = "skipped"
	OutcomeFailed    Outcome = "failed" // the burst could not start: INFO unreadable, no connection
)

// Reasons a burst was skipped, aborted or ended. A bounded set: they are a
// label of redis_prober_burst_decisions_total.
const (
	ReasonNone      = "none"
	ReasonReplica   = "replica"   // the target is a replica (or became one)
	ReasonLoading   = "loading"   // the target is loading its dataset
	ReasonFork      = "fork"      // an RDB or AOF rewrite child is running
	ReasonMemory    = "memory"    // the burst could push used_memory past the headroom
	ReasonBusy      = "busy"      // instantaneous_ops_per_sec above the limit
	ReasonP99       = "p99"       // sliding-window p99 above the abort threshold
	ReasonErrors    = "errors"    // errors and timeouts beyond the budget
	ReasonCancelled = "cancelled" // the prober is stopping (SIGTERM) or the target was removed
	ReasonInfo      = "info"      // INFO could not be read
	ReasonConnect   = "connect"   // no burst connection could be opened
)

// Guards are the safety governor's settings, applied before a burst
// (skip) and while it runs (abort).
type Guards struct {
	// AllowReplica lets a read-only burst run on a replica. A plan that
	// writes is skipped on a replica either way.
	AllowReplica bool
	// MemoryHeadroom is the fraction of the memory limit (maxmemory, or the
	// system's memory when maxmemory is 0) that must stay free: a burst is
	// skipped when used_memory plus what it may write would eat into it, and
	// aborted when used_memory does.
	MemoryHeadroom float64
	// MaxServerOps skips a burst when the server already serves more
	// commands per second (instantaneous_ops_per_sec); 0 disables.
	MaxServerOps float64
	// AbortP99 aborts when the p99 over the last Window exceeds it; 0
	// disables.
	AbortP99 time.Duration
	Window   time.Duration
	// ErrorBudget aborts when errors and timeouts exceed this fraction of
	// the requests (and number at least minBudgetErrors).
	ErrorBudget float64
	// CheckInterval is how often INFO is read during a burst.
	CheckInterval time.Duration
}

// Validate checks the ranges.
func (g Guards) Validate() error {
	switch {
	case g.MemoryHeadroom < 0 || g.MemoryHeadroom >= 1:
		return fieldErr("memory-headroom", "%v must be from 0 to below 1", g.MemoryHeadroom)
	case g.MaxServerOps < 0:
		return fieldErr("max-server-ops", "%v must not be negative", g.MaxServerOps)
	case g.AbortP99 < 0:
		return fieldErr("abort-p99", "must not be negative")
	case g.Window < 100*time.Millisecond:
		return fieldErr("window", "%v must be at least 100ms", g.Window)
	case g.ErrorBudget < 0 || g.ErrorBudget > 1:
		return fieldErr("max-errors", "%v must be from 0 to 1", g.ErrorBudget)
	case g.CheckInterval < 100*time.Millisecond:
		return fieldErr("check-interval", "%v must be at least 100ms", g.CheckInterval)
	}
	return nil
}

// minBudgetErrors keeps one stray error at the start of a burst from
// blowing the budget.
const minBudgetErrors = 5

// Decision is what the governor decided, with its reason for the log and
// the metrics.
type Decision struct {
	Outcome Outcome
	Reason  string
	Detail  string
}

// OK reports whether the burst may go on.
func (d Decision) OK() bool { return d.Outcome == "" }

// ServerState is what the governor reads from INFO.
type ServerState struct {
	Role         string
	Loading      bool
	Fork         string // "rdb", "aof", "module", "slot migration" or ""
	UsedMemory   int64
	MaxMemory    int64
	SystemMemory int64
	Policy       string
	OpsPerSec    float64
	Version      string
}

// parseServerState picks the governor's fields out of INFO.
func parseServerState(info map[string]string) ServerState {
	num := func(k string) int64 {
		n, _ := strconv.ParseInt(info[k], 10, 64)
		return n
	}
	s := ServerState{
		Role:         info["role"],
		Loading:      info["loading"] == "1" || info["async_loading"] == "1",
		UsedMemory:   num("used_memory"),
		MaxMemory:    num("maxmemory"),
		SystemMemory: num("total_system_memory"),
		Policy:       info["maxmemory_policy"],
		Version:      info["redis_version"],
	}
	s.OpsPerSec, _ = strconv.ParseFloat(info["instantaneous_ops_per_sec"], 64)
	switch {
	case info["rdb_bgsave_in_progress"] == "1":
		s.Fork = "rdb"
	case info["aof_rewrite_in_progress"] == "1":
		s.Fork = "aof"
	case info["module_fork_in_progress"] == "1":
		s.Fork = "module"
	case info["slot_migration_fork_in_progress"] == "1": // Valkey 9's atomic slot migration
		s.Fork = "slot migration"
	}
	return s
}

// ReadServerState runs INFO on c.
func ReadServerState(ctx context.Context, c redis.Cmdable) (ServerState, error) {
	// The exporter's INFO reader: bounded, and a reply that is not INFO is
	// an error, not a server with no fields.
	info, err := redisinfo.Read(ctx, c) // its errors name INFO
	if err != nil {
		return ServerState{}, err
	}
	return parseServerState(info), nil
}

// memoryLimit is what the headroom is a fraction of.
func (s ServerState) memoryLimit() (int64, string) {
	if s.MaxMemory > 0 {
		return s.MaxMemory, "maxmemory"
	}
	return s.SystemMemory, "total_system_memory"
}

// Admit decides whether a burst of plan may start on a server in state s.
func (g Guards) Admit(s ServerState, plan Plan) Decision {
	skip := func(reason, format string, args ...any) Decision {
		return Decision{Outcome: OutcomeSkipped, Reason: reason, Detail: fmt.Sprintf(format, args...)}
	}
	if s.Role == "slave" || s.Role == "replica" {
		if !g.AllowReplica {
			return skip(ReasonReplica, "the target is a replica and replicas are not allowed")
		}
		if plan.Writes() {
			return skip(ReasonReplica, "the target is a replica and the plan writes")
		}
	}
	if s.Loading {
		return skip(ReasonLoading, "the target is loading its dataset")
	}
	if s.Fork != "" {
		return skip(ReasonFork, "a %s child process is running (copy-on-write would amplify our writes)", s.Fork)
	}
	if limit, of := s.memoryLimit(); limit > 0 {
		planned := plan.PlannedBytes()
		allowed := int64(float64(limit) * (1 - g.MemoryHeadroom))
		if s.UsedMemory+planned > allowed {
			return skip(ReasonMemory, "used_memory %s + planned %s exceeds %.0f%% of %s %s",
				bytesize.IEC(s.UsedMemory), bytesize.IEC(planned), 100*(1-g.MemoryHeadroom), of, bytesize.IEC(limit))
		}
	}
	if g.MaxServerOps > 0 && s.OpsPerSec > g.MaxServerOps {
		return skip(ReasonBusy, "instantaneous_ops_per_sec %.0f is above the limit %.0f", s.OpsPerSec, g.MaxServerOps)
	}
	return Decision{}
}

// Watch decides whether a running burst may go on, from INFO read during it.
func (g Guards) Watch(s ServerState, plan Plan) Decision {
	abort := func(reason, format string, args ...any) Decision {
		return Decision{Outcome: OutcomeAborted, Reason: reason, Detail: fmt.Sprintf(format, args...)}
	}
	if (s.Role == "slave" || s.Role == "replica") && (!g.AllowReplica || plan.Writes()) {
		return abort(ReasonReplica, "the target became a replica")
	}
	if s.Loading {
		return abort(ReasonLoading, "the target started loading its dataset")
	}
	if s.Fork != "" && plan.Writes() {
		return abort(ReasonFork, "a %s child process started", s.Fork)
	}
	if limit, of := s.memoryLimit(); limit > 0 {
		allowed := int64(float64(limit) * (1 - g.MemoryHeadroom))
		if s.UsedMemory > allowed {
			return abort(ReasonMemory, "used_memory %s exceeds %.0f%% of %s %s", bytesize.IEC(s.UsedMemory), 100*(1-g.MemoryHeadroom), of, bytesize.IEC(limit))
		}
	}
	return Decision{}
}

// minP99Samples is the fewest requests a window must hold before its p99
// may abort a burst. The 99th percentile of n samples is the value of rank
// ceil(0.99·n), which is the largest sample for every n below 100: over 7
// requests the "p99" is the slowest one, and a single hiccup (a page
// fault, a scheduler delay, one slow fsync) would abort the burst. With 100
// or more at least two requests must be slow. A window with fewer (a low
// rate, a short window) aborts only when most of it is slow (its median is
// above the threshold): a stall, which the requests in flight and the
// overdue slots show at their age, not a hiccup.
const minP99Samples = 100

// windowVerdict decides on the latency and error figures of a running
// burst: p50 and p99 of the window's windowCount requests, and the
// burst's total and failed requests so far.
func (g Guards) windowVerdict(p50, p99 time.Duration, windowCount, total, failed int64) Decision {
	if g.AbortP99 > 0 && windowCount >= minP99Samples && p99 > g.AbortP99 {
		return Decision{Outcome: OutcomeAborted, Reason: ReasonP99,
			Detail: fmt.Sprintf("p99 over the last %v is %v, above %v (%d requests)", g.Window, p99, g.AbortP99, windowCount)}
	}
	if g.AbortP99 > 0 && windowCount > 0 && windowCount < minP99Samples && p50 > g.AbortP99 {
		return Decision{Outcome: OutcomeAborted, Reason: ReasonP99,
			Detail: fmt.Sprintf("the median over the last %v is %v, above %v (%d requests, too few for a p99: most are slow)",
				g.Window, p50, g.AbortP99, windowCount)}
	}
	if failed >= minBudgetErrors && float64(failed) > g.ErrorBudget*float64(total) {
		return Decision{Outcome: OutcomeAborted, Reason: ReasonErrors,
			Detail: fmt.Sprintf("%d of %d requests failed, beyond the %.2f%% budget", failed, total, 100*g.ErrorBudget)}
	}
	return Decision{}
}
