package collector

// The tuning checks themselves: why each matters and its fix. The
// evaluators they share are in checks_eval.go.

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
)

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

// Checks is the list of checks, in report order (a copy of it).
func Checks() []Check { return slices.Clone(checkList()) }

// checkList is the list, built once: every refresh of every target
// evaluates it, and building its closures anew each time showed in what
// the prober allocated at 1,000 targets (docs/lab/2026-12-performance-notes.md,
// "Fifth session").
var checkList = sync.OnceValue(func() []Check {
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
})
