package collector

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redis-prober/redis-prober/internal/safetext"
)

// Severity is how bad a failed check is.
type Severity string

const (
	SeverityCritical Severity = "critical"
	SeverityWarning  Severity = "warning"
	SeverityInfo     Severity = "info"
)

// Status is the outcome of one check.
type Status int

const (
	// StatusUnknown: an input could not be read (no permission, not
	// visible from here). Never counted as a failure.
	StatusUnknown Status = iota
	StatusPass
	// StatusWarn: passes its severity but fails its warning level.
	StatusWarn
	StatusFail
)

func (s Status) String() string {
	switch s {
	case StatusPass:
		return "pass"
	case StatusWarn:
		return "warn"
	case StatusFail:
		return "fail"
	}
	return "unknown"
}

// Scope says whether a check is about the host the prober reads or about
// one Redis server.
type Scope string

const (
	ScopeHost  Scope = "host"
	ScopeRedis Scope = "redis"
)

// Check is one tuning check: why it matters for latency and the exact fix.
type Check struct {
	ID       string
	Severity Severity // of a failure
	Scope    Scope
	// Warns: the check also has a warning level below its failure
	// threshold, exported as a second series with severity="warning".
	Warns bool
	// RedisHost: the check reads this host's /proc or /sys as the host
	// Redis runs on (a Redis-scope check with a host input). It is only
	// meaningful when Redis runs here: its process is visible.
	RedisHost bool
	Why       string
	Fix       string
	eval      func(f *Facts) (Status, string)
}

// Result is a check's outcome and the value it saw (or why it is unknown).
type Result struct {
	Check
	Status Status
	Value  string
}

// Failed reports a failure at the check's own severity.
func (r Result) Failed() bool { return r.Status == StatusFail }

// Evaluate runs every check over f.
func Evaluate(f *Facts) []Result {
	checks := Checks()
	out := make([]Result, len(checks))
	for i, c := range checks {
		st, v := c.eval(f)
		out[i] = Result{Check: c, Status: st, Value: v}
	}
	return out
}

const thpUnit = `# THP off at boot, before Redis starts:
cat >/etc/systemd/system/disable-thp.service <<'UNIT'
[Unit]
Description=Disable transparent huge pages (Redis latency)
DefaultDependencies=no
After=sysinit.target local-fs.target
Before=redis-server.service redis.service valkey-server.service

[Service]
Type=oneshot
ExecStart=/bin/sh -c 'echo never > /sys/kernel/mm/transparent_hugepage/enabled; echo never > /sys/kernel/mm/transparent_hugepage/defrag'

[Install]
WantedBy=basic.target
UNIT
systemctl daemon-reload && systemctl enable --now disable-thp.service`

// Checks is the list of checks, in report order.
func Checks() []Check {
	return []Check{
		{
			ID: "thp_enabled", Severity: SeverityCritical, Scope: ScopeHost,
			Why: "With THP 'always' a fork makes every copy-on-write fault copy 2 MB instead of 4 KB: latency spikes and memory blow-up during BGSAVE and AOF rewrite.",
			Fix: "echo never > /sys/kernel/mm/transparent_hugepage/enabled   # now (madvise is fine too)\n" + thpUnit,
			eval: func(f *Facts) (Status, string) {
				return thpCheck(f.Host.THPEnabled, "enabled")
			},
		},
		{
			ID: "thp_defrag", Severity: SeverityWarning, Scope: ScopeHost,
			Why: "With THP defrag 'always' an allocation may stall for direct compaction: multi-millisecond pauses inside Redis.",
			Fix: "echo never > /sys/kernel/mm/transparent_hugepage/defrag   # now (madvise or defer is fine too)\n" + thpUnit,
			eval: func(f *Facts) (Status, string) {
				return thpCheck(f.Host.THPDefrag, "defrag")
			},
		},
		{
			ID: "vm_swappiness", Severity: SeverityCritical, Scope: ScopeHost, Warns: true,
			Why: "A high swappiness lets the kernel page Redis memory out while there is still RAM; touching a swapped page stalls Redis for a disk read.",
			Fix: "sysctl -w vm.swappiness=1\necho 'vm.swappiness = 1' >> /etc/sysctl.d/60-redis.conf",
			eval: func(f *Facts) (Status, string) {
				v, ok := f.Host.Sysctls["vm.swappiness"]
				if !ok {
					return StatusUnknown, "vm.swappiness not readable"
				}
				val := fmt.Sprintf("vm.swappiness = %d", v)
				if f.Host.HasMeminfo && f.Host.SwapTotalBytes == 0 {
					return StatusPass, val + " (no swap configured)"
				}
				switch {
				case v <= 1:
					return StatusPass, val
				case v <= 10:
					return StatusWarn, val + " (want <= 1)"
				}
				return StatusFail, val + " (want <= 1, at most 10)"
			},
		},
		{
			ID: "vm_overcommit_memory", Severity: SeverityCritical, Scope: ScopeHost,
			Why: "Without overcommit a BGSAVE or AOF rewrite fork can fail under memory pressure, and persistence (and replication) stops.",
			Fix: "sysctl -w vm.overcommit_memory=1\necho 'vm.overcommit_memory = 1' >> /etc/sysctl.d/60-redis.conf",
			eval: func(f *Facts) (Status, string) {
				v, ok := f.Host.Sysctls["vm.overcommit_memory"]
				if !ok {
					return StatusUnknown, "vm.overcommit_memory not readable"
				}
				if v == 1 {
					return StatusPass, "vm.overcommit_memory = 1"
				}
				return StatusFail, fmt.Sprintf("vm.overcommit_memory = %d (want 1)", v)
			},
		},
		{
			ID: "somaxconn", Severity: SeverityWarning, Scope: ScopeRedis, RedisHost: true,
			Why: "The kernel silently caps Redis' listen backlog (tcp-backlog) at net.core.somaxconn; a burst of new connections then waits in SYN retries (1 s, 3 s).",
			Fix: "sysctl -w net.core.somaxconn=4096\necho 'net.core.somaxconn = 4096' >> /etc/sysctl.d/60-redis.conf   # at least tcp-backlog, then restart Redis",
			eval: func(f *Facts) (Status, string) {
				return backlogCheck(f, "net.core.somaxconn")
			},
		},
		{
			ID: "tcp_max_syn_backlog", Severity: SeverityWarning, Scope: ScopeRedis, RedisHost: true,
			Why: "Half-open connections beyond net.ipv4.tcp_max_syn_backlog are dropped: connection storms (failover, deploys) turn into second-long connect latency.",
			Fix: "sysctl -w net.ipv4.tcp_max_syn_backlog=4096\necho 'net.ipv4.tcp_max_syn_backlog = 4096' >> /etc/sysctl.d/60-redis.conf",
			eval: func(f *Facts) (Status, string) {
				return backlogCheck(f, "net.ipv4.tcp_max_syn_backlog")
			},
		},
		{
			ID: "open_files_limit", Severity: SeverityWarning, Scope: ScopeRedis,
			Why: "Redis needs maxclients + 32 file descriptors; below that, new clients are refused with 'max number of clients reached'.",
			Fix: "systemctl edit redis-server   # add: [Service] LimitNOFILE=65536, then restart Redis\n# or lower maxclients in redis.conf",
			eval: func(f *Facts) (Status, string) {
				if f.Process == nil || !f.Process.HasOpenFilesLimit {
					return StatusUnknown, "redis-server process not visible from here"
				}
				maxClients, ok := configInt(f, "maxclients", "maxclients")
				if !ok {
					return StatusUnknown, "maxclients not readable (CONFIG refused, server older than 7.0)"
				}
				limit := f.Process.OpenFilesLimit
				if limit == math.MaxUint64 {
					return StatusPass, "open files unlimited"
				}
				val := fmt.Sprintf("open files limit %d, maxclients %d", limit, maxClients)
				if maxClients >= 0 && limit >= uint64(maxClients)+32 {
					return StatusPass, val
				}
				return StatusFail, val + fmt.Sprintf(" (want >= %d)", maxClients+32)
			},
		},
		{
			ID: "maxmemory", Severity: SeverityWarning, Scope: ScopeRedis,
			Why:  "Without maxmemory (or with more than 70% of RAM) a fork's copy-on-write and the allocator's slack push the host into swap or the OOM killer.",
			Fix:  "redis-cli CONFIG SET maxmemory <70% of RAM>   # and in redis.conf: maxmemory <bytes>, maxmemory-policy allkeys-lru (or noeviction)",
			eval: maxmemoryCheck,
		},
		{
			ID: "redis_swapped", Severity: SeverityCritical, Scope: ScopeRedis,
			Why: "Pages of Redis in swap are read back from disk while Redis waits: milliseconds to seconds for the command that touches them.",
			Fix: "Give Redis headroom (maxmemory <= 70% of RAM, fewer co-located processes), set vm.swappiness=1, then move the pages back: swapoff -a && swapon -a",
			eval: func(f *Facts) (Status, string) {
				if f.Process == nil {
					return StatusUnknown, "redis-server process not visible from here"
				}
				if f.Process.SwapBytes == 0 {
					return StatusPass, "0 bytes in swap"
				}
				return StatusFail, humanBytes(f.Process.SwapBytes) + " of Redis memory in swap"
			},
		},
		{
			ID: "fork_time", Severity: SeverityWarning, Scope: ScopeRedis,
			Why:  "Redis is frozen for the whole fork of BGSAVE and AOF rewrite; more than 20 ms per GB of RSS means a slow hypervisor or huge page tables.",
			Fix:  "Run Redis on bare metal or an HVM instance with fast fork, keep THP off, keep each instance's dataset small (shard), or persist from a replica (save \"\" and appendonly no on the primary).",
			eval: forkCheck,
		},
		{
			ID: "intrinsic_latency", Severity: SeverityWarning, Scope: ScopeHost,
			Why: "The host's own scheduling jitter is a floor under every Redis reply; above 1 ms points at CPU steal, noisy neighbours or power saving.",
			Fix: "Dedicated or pinned CPUs (no overcommitted vCPUs), the performance CPU governor; compare with: redis-cli --intrinsic-latency 100",
			eval: func(f *Facts) (Status, string) {
				if !f.HasIntrinsic {
					return StatusUnknown, "no intrinsic latency samples"
				}
				val := "worst scheduling gap " + f.Intrinsic.String()
				if f.Intrinsic.Seconds() <= 0.001 {
					return StatusPass, val
				}
				return StatusFail, val + " (want <= 1ms)"
			},
		},
		{
			ID: "latency_monitor", Severity: SeverityInfo, Scope: ScopeRedis,
			Why: "With latency-monitor-threshold 0 Redis records no latency spikes, so LATENCY LATEST and LATENCY DOCTOR cannot say what stalled.",
			Fix: "redis-cli CONFIG SET latency-monitor-threshold 10   # and in redis.conf: latency-monitor-threshold 10",
			eval: func(f *Facts) (Status, string) {
				v, ok := configInt(f, "latency-monitor-threshold", "")
				if !ok {
					return StatusUnknown, "latency-monitor-threshold not readable (CONFIG refused)"
				}
				if v > 0 {
					return StatusPass, fmt.Sprintf("latency-monitor-threshold %d ms", v)
				}
				return StatusFail, "latency-monitor-threshold 0 (off)"
			},
		},
		{
			ID: "appendfsync", Severity: SeverityWarning, Scope: ScopeRedis,
			Why: "appendfsync always waits for the disk on every write: every write's latency includes an fsync.",
			Fix: "redis-cli CONFIG SET appendfsync everysec   # and in redis.conf: appendfsync everysec",
			eval: func(f *Facts) (Status, string) {
				if on, ok := aofEnabled(f); ok && !on {
					return StatusPass, "AOF off"
				}
				v, ok := f.Config["appendfsync"]
				if !ok {
					return StatusUnknown, "appendfsync not readable (CONFIG refused)"
				}
				if v == "always" {
					return StatusFail, "appendfsync always"
				}
				return StatusPass, "appendfsync " + v
			},
		},
		{
			ID: "aof_rewrite_fsync", Severity: SeverityWarning, Scope: ScopeRedis,
			Why: "While an AOF rewrite or BGSAVE saturates the disk, the main thread's fsync blocks; no-appendfsync-on-rewrite yes skips it meanwhile.",
			Fix: "redis-cli CONFIG SET no-appendfsync-on-rewrite yes   # and in redis.conf: no-appendfsync-on-rewrite yes",
			eval: func(f *Facts) (Status, string) {
				on, ok := aofEnabled(f)
				if !ok {
					return StatusUnknown, "AOF state not readable"
				}
				if !on {
					return StatusPass, "AOF off"
				}
				v, ok := f.Config["no-appendfsync-on-rewrite"]
				if !ok {
					return StatusUnknown, "no-appendfsync-on-rewrite not readable (CONFIG refused)"
				}
				if v == "yes" {
					return StatusPass, "no-appendfsync-on-rewrite yes"
				}
				return StatusFail, "no-appendfsync-on-rewrite " + v
			},
		},
		{
			ID: "cpu_governor", Severity: SeverityInfo, Scope: ScopeHost,
			Why: "Power-saving CPU governors clock an idle core down; the first request after a quiet spell pays the wake-up and ramp-up.",
			Fix: "cpupower frequency-set -g performance   # or: tuned-adm profile latency-performance",
			eval: func(f *Facts) (Status, string) {
				if f.Host.Governors == nil {
					return StatusUnknown, "no cpufreq here (common in VMs)"
				}
				names := make([]string, 0, len(f.Host.Governors))
				for g := range f.Host.Governors {
					names = append(names, g)
				}
				sort.Strings(names)
				parts := make([]string, len(names))
				for i, g := range names {
					parts[i] = fmt.Sprintf("%s on %d CPUs", g, f.Host.Governors[g])
				}
				val := strings.Join(parts, ", ")
				if len(names) == 1 && names[0] == "performance" {
					return StatusPass, val
				}
				return StatusFail, val
			},
		},
		{
			ID: "numa_binding", Severity: SeverityInfo, Scope: ScopeRedis, RedisHost: true,
			Why: "On a multi-node host, Redis memory spread over NUMA nodes is reached over the interconnect: slower and less predictable.",
			Fix: "numactl --cpunodebind=0 --membind=0 redis-server ...   # or in the systemd unit: CPUAffinity= and NUMAPolicy=bind, NUMAMask=0",
			eval: func(f *Facts) (Status, string) {
				switch {
				case f.Host.NUMANodes == 0:
					return StatusUnknown, "NUMA topology not readable"
				case f.Host.NUMANodes == 1:
					return StatusPass, "single NUMA node"
				case f.Process == nil || f.Process.NUMANodesAllowed == 0:
					return StatusUnknown, "redis-server process not visible from here"
				case f.Process.NUMANodesAllowed == 1:
					return StatusPass, fmt.Sprintf("bound to 1 of %d NUMA nodes", f.Host.NUMANodes)
				}
				return StatusFail, fmt.Sprintf("may use %d of %d NUMA nodes", f.Process.NUMANodesAllowed, f.Host.NUMANodes)
			},
		},
	}
}

func thpCheck(active, file string) (Status, string) {
	switch active {
	case "":
		return StatusUnknown, "/sys/kernel/mm/transparent_hugepage/" + file + " not readable"
	case "always":
		return StatusFail, file + " = always"
	}
	return StatusPass, file + " = " + active
}

func backlogCheck(f *Facts, sysctl string) (Status, string) {
	v, ok := f.Host.Sysctls[sysctl]
	if !ok {
		return StatusUnknown, sysctl + " not readable"
	}
	backlog, ok := configInt(f, "tcp-backlog", "")
	if !ok {
		return StatusUnknown, "tcp-backlog not readable (CONFIG refused)"
	}
	val := fmt.Sprintf("%s = %d, tcp-backlog %d", sysctl, v, backlog)
	if v >= backlog {
		return StatusPass, val
	}
	return StatusFail, val
}

func maxmemoryCheck(f *Facts) (Status, string) {
	maxmem, ok := configInt(f, "maxmemory", "maxmemory")
	if !ok {
		return StatusUnknown, "maxmemory not readable"
	}
	ram, hasRAM := int64(0), false
	if v, ok := f.Info.Int("total_system_memory"); ok && v > 0 {
		ram, hasRAM = v, true
	} else if f.Process != nil && f.Host.HasMeminfo {
		ram, hasRAM = int64(f.Host.MemTotalBytes), true
	}
	if maxmem == 0 {
		val := "maxmemory 0 (no limit)"
		if hasRAM {
			val += fmt.Sprintf(", RAM %s: set at most %s", humanBytes(uint64(ram)), humanBytes(uint64(ram)*7/10))
		}
		return StatusFail, val
	}
	if !hasRAM {
		return StatusUnknown, fmt.Sprintf("maxmemory %s, host RAM unknown", humanBytes(uint64(maxmem)))
	}
	val := fmt.Sprintf("maxmemory %s of %s RAM (%.0f%%)", humanBytes(uint64(maxmem)), humanBytes(uint64(ram)), 100*float64(maxmem)/float64(ram))
	if float64(maxmem) <= 0.7*float64(ram) {
		return StatusPass, val
	}
	return StatusFail, val + fmt.Sprintf(": set at most %s", humanBytes(uint64(ram)*7/10))
}

// forkPerGBLimit is the fork time per GB above which forks are slow.
const forkPerGBLimit = 0.020

func forkCheck(f *Facts) (Status, string) {
	usec, ok := f.Info.Int("latest_fork_usec")
	if !ok {
		return StatusUnknown, "latest_fork_usec not in INFO"
	}
	if usec <= 0 {
		return StatusUnknown, "no fork since the server started"
	}
	rss, _ := f.Info.Int("used_memory_rss")
	// A fork has a fixed cost; on a small instance judge the fork as if
	// it were 1 GB rather than extrapolate a microsecond to a gigabyte.
	gb := max(float64(rss), 1e9) / 1e9
	perGB := float64(usec) / 1e6 / gb
	val := fmt.Sprintf("latest fork %.2f ms for %s RSS: %.1f ms per GB", float64(usec)/1e3, humanBytes(uint64(max(rss, 0))), perGB*1e3)
	if perGB < forkPerGBLimit {
		return StatusPass, val
	}
	return StatusFail, val + " (want < 20 ms per GB)"
}

// configInt reads an integer setting from CONFIG, or from INFO when the
// server also reports it there (infoKey "" when it does not).
func configInt(f *Facts, key, infoKey string) (int64, bool) {
	if v, ok := f.Config[key]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		return n, err == nil
	}
	if infoKey != "" {
		return f.Info.Int(infoKey)
	}
	return 0, false
}

func aofEnabled(f *Facts) (on, ok bool) {
	if v, ok := f.Info.Int("aof_enabled"); ok {
		return v == 1, true
	}
	if v, ok := f.Config["appendonly"]; ok {
		return v == "yes", true
	}
	return false, false
}

func humanBytes(b uint64) string {
	const unit = 1024
	if b < unit {
		return fmt.Sprintf("%d B", b)
	}
	div, exp := uint64(unit), 0
	for n := b / unit; n >= unit && exp < 4; n /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(b)/float64(div), "KMGTP"[exp])
}

// checkDescs are the series of the checks collector.
type checkDescs struct {
	passed, unknown targetDesc
}

func newCheckDescs() checkDescs {
	return checkDescs{
		passed: newTargetDesc("redis_prober_check_passed",
			"1 when a tuning check passes at the given severity, 0 when it fails; absent while its input cannot be read (see redis_prober_check_unknown).",
			"check", "severity"),
		unknown: newTargetDesc("redis_prober_check_unknown",
			"1 when a tuning check cannot be evaluated because an input is not readable here (ACL, PID namespace, no /sys); never a failure. Absent for checks that were evaluated (see redis_prober_check_passed).",
			"check"),
	}
}

func (d checkDescs) describe(ch chan<- *prometheus.Desc) {
	ch <- d.passed.Desc
	ch <- d.unknown.Desc
}

func (d checkDescs) emit(ch chan<- prometheus.Metric, sl *seriesLabels, results []Result) {
	for _, r := range results {
		// Each check has one series: passed (by severity) when it was
		// evaluated, unknown when it could not be (not a 0 beside every
		// evaluated one: series per target are the budget).
		if r.Status == StatusUnknown {
			targetMetric(ch, d.unknown, prometheus.GaugeValue, 1, sl, r.ID)
			continue
		}
		targetMetric(ch, d.passed, prometheus.GaugeValue, boolFloat(r.Status != StatusFail), sl, r.ID, string(r.Severity))
		if r.Warns {
			targetMetric(ch, d.passed, prometheus.GaugeValue, boolFloat(r.Status == StatusPass), sl, r.ID, string(SeverityWarning))
		}
	}
}

// FailedCheck is a check that failed at its last evaluation, as the status
// page lists it: a 0 of redis_prober_check_passed.
type FailedCheck struct {
	ID string
	// Severity is the check's own for a failure, warning for a check
	// that passes its severity but not its warning level.
	Severity Severity
	// Value is what the check saw ("appendfsync always"), printable and
	// at most maxFailedValue bytes. Checks read numbers and settings that
	// hold no secrets (never requirepass or masterauth).
	Value string
}

const maxFailedValue = 200

// Failing lists the results that fail, at their severity or their warning
// level, in check order. Its length is bounded by the fixed check list.
func Failing(results []Result) []FailedCheck {
	var out []FailedCheck
	for _, r := range results {
		sev := r.Severity
		switch r.Status {
		case StatusFail:
		case StatusWarn:
			sev = SeverityWarning
		default:
			continue
		}
		out = append(out, FailedCheck{ID: r.ID, Severity: sev, Value: safetext.Label(r.Value, maxFailedValue)})
	}
	return out
}

// FailingChecks is Failing over the last refresh; ok is false when the
// checks collector is off or has not run yet.
func (t *Target) FailingChecks() (failing []FailedCheck, ok bool) {
	s := t.Snapshot()
	if _, ran := s.Errors["checks"]; !ran {
		return nil, false
	}
	return Failing(s.Checks), true
}
