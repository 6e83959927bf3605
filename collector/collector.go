// Package collector explains the latency tail: it reads what Redis (INFO,
// LATENCY, CONFIG), the host kernel (/proc, /sys) and the redis-server
// process say about the usual causes (fork, fragmentation, swap, transparent
// huge pages, memory pressure, kernel tuning) and exports it as Prometheus
// metrics and as tuning checks.
//
// Host collectors read their files at scrape time, as node_exporter does.
// Redis-side collectors work from a per-target cache that Target.Refresh
// fills on an interval, so a scrape never calls Redis and a slow Redis never
// blocks a scrape.
package collector

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis-prober/redis-prober/internal/host"
)

// ErrNoData means "not available here": no PSI in this kernel, no cpufreq in
// this VM, CONFIG refused by an ACL, a Redis process in another PID
// namespace. It is logged once at debug level and reported as
// redis_prober_collector_success 0, never as an alarm. It is the host
// reader's own value, so what the reader cannot read needs no translation.
var ErrNoData = host.ErrNoData

// Kind tells where a collector's data comes from.
type Kind int

const (
	// KindHost collectors read the host's /proc and /sys, once per process.
	KindHost Kind = iota
	// KindTarget collectors read one Redis target (and its process).
	KindTarget
)

// Definition is one entry of the collector list.
type Definition struct {
	Name string
	Help string
	Kind Kind
	// newHost builds a host collector; nil for target collectors.
	newHost func(host.Paths) source
	// part is a target collector's refresh and series; nil for host
	// collectors.
	part targetPart
	// uses names the earlier target collectors whose reads this one
	// needs: they run for it even when disabled (without series of their
	// own).
	uses []string
}

// needed tells whether target collector d runs in a refresh with on
// enabled: when it is enabled, or a later enabled one uses it.
func needed(d Definition, on Enabled) bool {
	if on[d.Name] {
		return true
	}
	for _, other := range definitions {
		if on[other.Name] && slices.Contains(other.uses, d.Name) {
			return true
		}
	}
	return false
}

// definitions is the one explicit list of collectors, read-only. Flags
// (--collector.<name>) and docs are generated from it; nothing registers
// itself.
var definitions = []Definition{
	{Name: "info", Kind: KindTarget, part: infoPart{}, Help: "Redis INFO: fork time and count, fragmentation, memory, persistence."},
	{Name: "latency", Kind: KindTarget, part: latencyPart{}, uses: []string{"info"}, Help: "Redis LATENCY LATEST events and the server-side LATENCY HISTOGRAM of the probed commands (Redis 7+)."},
	{Name: "commandlog", Kind: KindTarget, part: commandlogPart{}, uses: []string{"info"}, Help: "Valkey 8.1+ COMMANDLOG: the length of the slow, large-request and large-reply logs and the execution time of new slow entries (never their arguments); nothing on servers without it."},
	{Name: "process", Kind: KindTarget, part: processPart{}, uses: []string{"info"}, Help: "The redis-server process from /proc when visible: swap, RSS, huge pages, open-files limit, context switches, NUMA binding."},
	{Name: "checks", Kind: KindTarget, part: checksPart{}, uses: []string{"info", "process"}, Help: "Tuning checks: those of each Redis (redis_prober_check_passed) over Redis, process and host facts, and those of the prober's own host once (redis_prober_host_check_passed)."},
	{Name: "thp", Kind: KindHost, Help: "Transparent huge pages enabled and defrag modes from /sys.", newHost: newTHPCollector},
	{Name: "vmstat", Kind: KindHost, Help: "Swap-in/out, THP and compaction-stall counters from /proc/vmstat.", newHost: newVMStatCollector},
	{Name: "meminfo", Kind: KindHost, Help: "Host RAM and swap size from /proc/meminfo.", newHost: newMeminfoCollector},
	{Name: "pressure", Kind: KindHost, Help: "Memory pressure stall time (PSI) from /proc/pressure/memory.", newHost: newPressureCollector},
	{Name: "sysctl", Kind: KindHost, Help: "Kernel settings that matter to Redis (vm.swappiness, vm.overcommit_memory, net.core.somaxconn, ...).", newHost: newSysctlCollector},
	{Name: "cpu", Kind: KindHost, Help: "CPU frequency governors and NUMA node count from /sys.", newHost: newCPUCollector},
}

// All returns the list of collectors (a copy: callers may not change it).
func All() []Definition { return slices.Clone(definitions) }

// Enabled is the set of collector names that run.
type Enabled map[string]bool

// AllEnabled enables every collector of the list.
func AllEnabled() Enabled {
	e := Enabled{}
	for _, d := range All() {
		e[d.Name] = true
	}
	return e
}

// source is one collector's core: it describes its series once and emits
// them; the caller times it and reports success.
type source interface {
	describe(ch chan<- *prometheus.Desc)
	update(ch chan<- prometheus.Metric) error
}

// healthDescs are node_exporter's per-collector health series.
type healthDescs struct {
	success, duration targetDesc
}

// newHealthDescs declares the health series with the labels target and
// node: const labels cl for host collectors (both "", so both kinds share
// one label set; Prometheus stores an empty label as no label), variable
// labels vl ("target", "node") for the Redis-side ones, shared by every
// target.
func newHealthDescs(cl prometheus.Labels, vl ...string) healthDescs {
	labels := append(vl[:len(vl):len(vl)], "collector")
	d := func(name, help string) targetDesc {
		return describedTarget(prometheus.NewDesc(name, help, labels, cl), name, help, "collector")
	}
	return healthDescs{
		success: d("redis_prober_collector_success",
			"1 when the collector's last read succeeded (for Redis-side collectors: the last refresh), 0 when it failed or had no data here."),
		duration: d("redis_prober_collector_duration_seconds",
			"How long the collector's last read took (for Redis-side collectors: the last refresh)."),
	}
}

func (h healthDescs) describe(ch chan<- *prometheus.Desc) {
	ch <- h.success.Desc
	ch <- h.duration.Desc
}

// emit writes the health of collector name for the target of sl (nil for
// host collectors): its success, and its duration when withDuration.
func (h healthDescs) emit(out *sink, sl *seriesLabels, name string, err error, seconds float64, withDuration bool) {
	ok := 1.0
	if err != nil {
		ok = 0
	}
	out.series(h.success, prometheus.GaugeValue, ok, sl, name)
	if withDuration {
		out.series(h.duration, prometheus.GaugeValue, seconds, sl, name)
	}
}
