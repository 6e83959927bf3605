package collector

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/redis-prober/redis-prober/internal/redisinfo"
)

// infoRange is the span of values an INFO field can really hold.
type infoRange struct{ min, max float64 }

// maxInfoBytesValue is the largest memory size believed: 1 PiB, far above
// any host's RAM.
const maxInfoBytesValue = 1 << 50

// infoRanges lists every numeric INFO field that feeds a counter, the fork
// histogram or a byte, ratio or state gauge, with what it can hold. A value
// outside (negative where it cannot be, not a finite number, absurdly
// large) is a broken or hostile server: the field is dropped from the
// snapshot, so its series is absent and no check or fork observation uses
// it, and a debug line names it.
var infoRanges = map[string]infoRange{
	// Redis is blocked for the whole fork; one of an hour is no fork.
	"latest_fork_usec":    {0, 3600e6},
	"total_forks":         {0, 1e15},
	"used_memory":         {0, maxInfoBytesValue},
	"used_memory_rss":     {0, maxInfoBytesValue},
	"maxmemory":           {0, maxInfoBytesValue},
	"total_system_memory": {0, maxInfoBytesValue},
	// RSS minus used: negative while part of Redis is swapped out or
	// just after start.
	"mem_fragmentation_bytes": {-maxInfoBytesValue, maxInfoBytesValue},
	"allocator_frag_bytes":    {-maxInfoBytesValue, maxInfoBytesValue},
	// An empty server with a large RSS reads in the thousands.
	"mem_fragmentation_ratio": {0, 1e6},
	"allocator_frag_ratio":    {0, 1e6},
	// 0/1 on older servers, the CPU percentage on newer ones.
	"active_defrag_running":           {0, 100},
	"rdb_bgsave_in_progress":          {0, 1},
	"aof_rewrite_in_progress":         {0, 1},
	"module_fork_in_progress":         {0, 1},
	"slot_migration_fork_in_progress": {0, 1},
	"loading":                         {0, 1},
	"aof_enabled":                     {0, 1},
}

// dropAbsurd removes from info every field of infoRanges whose value is
// not a finite number within its range, and returns them as field=value
// (cut short and made printable for a log line), sorted.
func dropAbsurd(info redisinfo.Info) []string {
	var bad []string
	for k, r := range infoRanges {
		raw, ok := info[k]
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(raw, 64)
		if err == nil && !math.IsNaN(v) && v >= r.min && v <= r.max {
			continue
		}
		delete(info, k)
		bad = append(bad, k+"="+LabelValue(redisinfo.Truncate(raw, 40)))
	}
	slices.Sort(bad)
	return bad
}

// forkTracker turns successive INFO snapshots into "forks that happened in
// between". It uses total_forks where the server has it; older servers
// only show latest_fork_usec, and a change of it counts as one fork.
type forkTracker struct {
	have   bool
	runID  string
	total  int64
	latest int64
}

// maxForksPerRefresh bounds the observations of one refresh, whatever the
// counters say.
const maxForksPerRefresh = 1000

// next returns how many forks happened since the previous snapshot. A
// restart (new run_id) or a counter that went back starts over without
// counting, since we did not see those forks happen.
func (f *forkTracker) next(info redisinfo.Info) int {
	latest, _ := info.Int("latest_fork_usec")
	total, hasTotal := info.Int("total_forks")
	runID := info["run_id"]
	prev := *f
	if runID != prev.runID {
		// Kept across refreshes: a substring would keep the whole INFO
		// reply alive.
		runID = strings.Clone(runID)
	}
	f.have, f.runID, f.total, f.latest = true, runID, total, latest
	if !prev.have || runID != prev.runID {
		return 0
	}
	if hasTotal {
		n := total - prev.total
		if n < 0 {
			return 0
		}
		return int(min(n, maxForksPerRefresh))
	}
	if latest > 0 && latest != prev.latest {
		return 1
	}
	return 0
}

// infoDescs are the series read from INFO.
type infoDescs struct {
	forkLast, forkPerGB, forks                   targetDesc
	fragRatio, fragBytes, allocRatio, allocBytes targetDesc
	defrag, used, rss, max                       targetDesc
	inProgress, lastOK                           targetDesc
}

func newInfoDescs() infoDescs {
	d := newTargetDesc
	return infoDescs{
		forkLast:   d("redis_prober_fork_last_seconds", "Duration of the latest fork (INFO latest_fork_usec); Redis is blocked for all of it."),
		forkPerGB:  d("redis_prober_fork_last_seconds_per_gigabyte", "Latest fork time per GB (1e9 bytes) of RSS: about 10 ms is bare metal, far more points at a VM without fast fork or THP."),
		forks:      d("redis_prober_forks_total", "Forks since the server started (INFO total_forks), where the server reports it."),
		fragRatio:  d("redis_prober_memory_fragmentation_ratio", "RSS over used memory (INFO mem_fragmentation_ratio)."),
		fragBytes:  d("redis_prober_memory_fragmentation_bytes", "RSS minus used memory (INFO mem_fragmentation_bytes, or used_memory_rss - used_memory)."),
		allocRatio: d("redis_prober_memory_allocator_fragmentation_ratio", "Allocator fragmentation (INFO allocator_frag_ratio): what active defrag can reclaim."),
		allocBytes: d("redis_prober_memory_allocator_fragmentation_bytes", "Allocator fragmentation in bytes (INFO allocator_frag_bytes)."),
		defrag:     d("redis_prober_memory_active_defrag_running", "Active defragmentation running (INFO active_defrag_running; newer servers report its CPU percentage)."),
		used:       d("redis_prober_memory_used_bytes", "Memory allocated by Redis (INFO used_memory)."),
		rss:        d("redis_prober_memory_rss_bytes", "Resident memory of Redis as the OS sees it (INFO used_memory_rss)."),
		max:        d("redis_prober_memory_max_bytes", "Configured maxmemory (INFO maxmemory; 0 means no limit)."),
		inProgress: d("redis_prober_persistence_in_progress", "1 while a persistence job runs, by kind: rdb (BGSAVE), aof_rewrite, module_fork, loading; and, on Valkey 9+, slot_migration_fork (the fork of an atomic slot migration).", "kind"),
		lastOK:     d("redis_prober_persistence_last_ok", "1 when the last persistence job of the kind succeeded: rdb (BGSAVE), aof_rewrite, aof_write.", "kind"),
	}
}

func (d infoDescs) describe(ch chan<- *prometheus.Desc) {
	for _, x := range []targetDesc{d.forkLast, d.forkPerGB, d.forks, d.fragRatio, d.fragBytes,
		d.allocRatio, d.allocBytes, d.defrag, d.used, d.rss, d.max, d.inProgress, d.lastOK} {
		ch <- x.Desc
	}
}

// emit writes what the snapshot's INFO has; a field the server lacks
// yields no series. The fork counter counts since stats (nil: unknown).
func (d infoDescs) emit(out *sink, sl *seriesLabels, info redisinfo.Info, stats *timestamppb.Timestamp) {
	if info == nil {
		return
	}
	gauge := func(desc targetDesc, v float64, labels ...string) {
		out.series(desc, prometheus.GaugeValue, v, sl, labels...)
	}
	// div converts to base units (µs to s divides by 1e6: exact where
	// multiplying by 1e-6 is not).
	field := func(desc targetDesc, key string, div float64) {
		if v, ok := info.Float(key); ok {
			gauge(desc, v/div)
		}
	}
	field(d.forkLast, "latest_fork_usec", 1e6)
	if perGB, ok := forkPerGB(info); ok {
		gauge(d.forkPerGB, perGB)
	}
	if v, ok := info.Float("total_forks"); ok {
		out.counter(d.forks, v, stats, sl)
	}
	field(d.fragRatio, "mem_fragmentation_ratio", 1)
	if v, ok := info.Float("mem_fragmentation_bytes"); ok {
		gauge(d.fragBytes, v)
	} else if rss, ok1 := info.Float("used_memory_rss"); ok1 {
		if used, ok2 := info.Float("used_memory"); ok2 {
			gauge(d.fragBytes, rss-used)
		}
	}
	field(d.allocRatio, "allocator_frag_ratio", 1)
	field(d.allocBytes, "allocator_frag_bytes", 1)
	field(d.defrag, "active_defrag_running", 1)
	field(d.used, "used_memory", 1)
	field(d.rss, "used_memory_rss", 1)
	field(d.max, "maxmemory", 1)
	for _, p := range []struct{ kind, key string }{
		{"rdb", "rdb_bgsave_in_progress"}, {"aof_rewrite", "aof_rewrite_in_progress"},
		{"module_fork", "module_fork_in_progress"}, {"loading", "loading"},
		{"slot_migration_fork", "slot_migration_fork_in_progress"},
	} {
		if v, ok := info.Float(p.key); ok {
			gauge(d.inProgress, v, p.kind)
		}
	}
	for _, p := range []struct{ kind, key string }{
		{"rdb", "rdb_last_bgsave_status"}, {"aof_rewrite", "aof_last_bgrewrite_status"}, {"aof_write", "aof_last_write_status"},
	} {
		if v, ok := info[p.key]; ok {
			gauge(d.lastOK, boolFloat(v == "ok"), p.kind)
		}
	}
}

// forkPerGB is the latest fork time per GB of RSS.
func forkPerGB(info redisinfo.Info) (float64, bool) {
	usec, ok1 := info.Float("latest_fork_usec")
	rss, ok2 := info.Float("used_memory_rss")
	if !ok1 || !ok2 || usec <= 0 || rss <= 0 {
		return 0, false
	}
	return usec / 1e6 / (rss / 1e9), true
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
