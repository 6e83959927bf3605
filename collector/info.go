package collector

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Info is one INFO reply: field name to raw value. Section headers are
// dropped; no field name repeats across the sections we read.
type Info map[string]string

// ParseInfo parses the text of an INFO reply ("# Section" headers and
// "field:value" lines, CRLF or LF). Fields are kept as text; servers that
// lack a field simply lack it.
func ParseInfo(s string) (Info, error) {
	info := Info{}
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.TrimRight(line, "\r")
		if line == "" || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || k == "" {
			return nil, fmt.Errorf("info: malformed line %q", truncate(line, 80))
		}
		info[k] = v
	}
	if len(info) == 0 {
		return nil, errors.New("info: no fields")
	}
	return info, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// Int returns an integer field.
func (i Info) Int(key string) (int64, bool) {
	v, err := strconv.ParseInt(i[key], 10, 64)
	return v, err == nil
}

// Float returns a numeric field.
func (i Info) Float(key string) (float64, bool) {
	v, err := strconv.ParseFloat(i[key], 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// Version returns the major and minor Redis protocol version
// (redis_version; Valkey reports the Redis version it is compatible with).
func (i Info) Version() (major, minor int, ok bool) {
	parts := strings.SplitN(i["redis_version"], ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	return ma, mi, err1 == nil && err2 == nil
}

// Server names the implementation and its own version, for reports.
func (i Info) Server() string {
	if v := i["valkey_version"]; v != "" {
		return "valkey " + v
	}
	if v := i["redis_version"]; v != "" {
		return "redis " + v
	}
	return "unknown"
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
func (f *forkTracker) next(info Info) int {
	latest, _ := info.Int("latest_fork_usec")
	total, hasTotal := info.Int("total_forks")
	runID := info["run_id"]
	prev := *f
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
	forkLast, forkPerGB, forks                   *prometheus.Desc
	fragRatio, fragBytes, allocRatio, allocBytes *prometheus.Desc
	defrag, used, rss, max                       *prometheus.Desc
	inProgress, lastOK                           *prometheus.Desc
}

func newInfoDescs(cl prometheus.Labels) infoDescs {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, cl)
	}
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
		inProgress: d("redis_prober_persistence_in_progress", "1 while a persistence job runs, by kind: rdb (BGSAVE), aof_rewrite, module_fork, loading.", "kind"),
		lastOK:     d("redis_prober_persistence_last_ok", "1 when the last persistence job of the kind succeeded: rdb (BGSAVE), aof_rewrite, aof_write.", "kind"),
	}
}

func (d infoDescs) describe(ch chan<- *prometheus.Desc) {
	for _, x := range []*prometheus.Desc{d.forkLast, d.forkPerGB, d.forks, d.fragRatio, d.fragBytes,
		d.allocRatio, d.allocBytes, d.defrag, d.used, d.rss, d.max, d.inProgress, d.lastOK} {
		ch <- x
	}
}

// emit writes what the snapshot's INFO has; a field the server lacks
// yields no series.
func (d infoDescs) emit(ch chan<- prometheus.Metric, info Info) {
	if info == nil {
		return
	}
	gauge := func(desc *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
	}
	// div converts to base units (µs to s divides by 1e6: exact where
	// multiplying by 1e-6 is not).
	field := func(desc *prometheus.Desc, key string, div float64) {
		if v, ok := info.Float(key); ok {
			gauge(desc, v/div)
		}
	}
	field(d.forkLast, "latest_fork_usec", 1e6)
	if perGB, ok := forkPerGB(info); ok {
		gauge(d.forkPerGB, perGB)
	}
	if v, ok := info.Float("total_forks"); ok {
		ch <- prometheus.MustNewConstMetric(d.forks, prometheus.CounterValue, v)
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
func forkPerGB(info Info) (float64, bool) {
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
