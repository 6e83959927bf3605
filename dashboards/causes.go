package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
)

// Causes is "Redis tail-latency causes": the usual reasons a Redis p99
// drifts (fork, fragmentation, memory, swap, memory pressure, THP, untuned
// kernels), next to the latency they explain.
func Causes() (dashboard.Dashboard, error) {
	b := base("redis-prober-causes", "Redis tail-latency causes",
		"What explains a Redis latency tail: fork, fragmentation, memory, swap, memory pressure, transparent huge pages and tuning checks, read by redis-prober.")

	b = b.WithRow(dashboard.NewRowBuilder("Latency").Id(1)).
		WithPanel(dashedRed(graph(2, "Probe p99 against the objective",
			"p99 of the probes per target and node, with each target's objective dashed: the symptom the panels below explain.",
			"s", 8, 12, thresholds(green)).
			WithTarget(query("A", quantile("0.99", "redis_prober_latency_seconds", probe, "target, node"), "p99 {{target}} {{node}}")).
			WithTarget(query("B", objective, "objective {{target}}")), "^objective .*")).
		WithPanel(graph(3, "Server-side vs client-side p99",
			"p99 per command as Redis itself timed it (LATENCY HISTOGRAM, Redis 7+) and as the prober's clients felt it. A gap means time outside command execution: network, queueing behind other commands, the event loop blocked by fork or expiry.",
			"s", 8, 12, thresholds(green)).
			WithTarget(query("A", quantile("0.99", "redis_prober_server_latency_seconds", byCommand, "target, command"), "server {{target}} {{command}}")).
			WithTarget(query("B", quantile("0.99", "redis_prober_latency_seconds", probe, "target, command"), "client {{target}} {{command}}")))

	b = b.WithRow(dashboard.NewRowBuilder("Why: slow requests by cause").Id(24)).
		WithPanel(graph(25, "Slow requests by cause",
			"Probe requests at or above the slow threshold, each attributed to one cause (fork, persistence, slow_command, latency_event, eviction, expiry, defrag, redis_cpu, swap, network, host, unexplained) from the node's own timeline: INFO, SLOWLOG, LATENCY events, /proc of a local redis-server. See docs/explain.md.",
			"short", 8, 16, thresholds(green)).
			DrawStyle(common.GraphDrawStyleBars).
			FillOpacity(80).
			Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNormal)).
			AxisLabel("slow requests").
			WithTarget(query("A", `sum by (cause) (increase(redis_prober_slow_requests_total{target=~"$target"}[$__rate_interval]))`, "{{cause}}"))).
		WithPanel(graph(26, "Unexplained share and slow threshold",
			"Share of the last 5 minutes' slow requests that no source explains (left), and the threshold in force that makes a request slow (min(objective, max(4 × the node's own p99, 1 ms)); right, dashed).",
			"percentunit", 8, 8, thresholds(green)).
			Max(1).
			OverrideByRegexp("^threshold .*", []dashboard.DynamicConfigValue{
				{Id: "unit", Value: "s"},
				{Id: "custom.axisPlacement", Value: "right"},
				{Id: "custom.lineStyle", Value: map[string]any{"fill": "dash", "dash": []int{10, 10}}},
			}).
			WithTarget(query("A", `redis_prober_slow_unexplained_ratio{target=~"$target"}`, "unexplained {{target}} {{node}}")).
			WithTarget(query("B", `redis_prober_slow_threshold_seconds{target=~"$target"}`, "threshold {{target}} {{node}}")))

	b = b.WithRow(dashboard.NewRowBuilder("Fork and persistence").Id(4)).
		WithPanel(graph(5, "Last fork",
			"How long the last fork (BGSAVE, AOF rewrite, full sync) blocked Redis (INFO latest_fork_usec).",
			"s", 8, 6, thresholds(green, step{0.005, orange}, step{0.1, red})).
			WithTarget(query("A", `redis_prober_fork_last_seconds{target=~"$target"}`, "{{target}}"))).
		WithPanel(graph(6, "Fork time per GB of RSS",
			"Last fork time per GB (1e9 bytes) of RSS: about 10 ms/GB on bare metal and modern VMs, far more on old Xen or with THP. The RedisProberForkSlow alert fires above 20 ms/GB when the fork is longer than the objective.",
			"s", 8, 6, thresholds(green, step{0.02, orange}, step{0.05, red})).
			WithTarget(query("A", `redis_prober_fork_last_seconds_per_gigabyte{target=~"$target"}`, "{{target}}"))).
		WithPanel(heat(7, "Forks observed",
			"Every fork the prober saw happen, by duration (native histogram only: forks are a few an hour, too few for classic buckets; a Prometheus that stores no native histograms has Last fork).",
			8, 6).
			WithTarget(query("A", `sum(increase(redis_prober_fork_seconds{target=~"$target"}[$__rate_interval]))`, "{{le}}").
				Format(prometheus.PromQueryFormatHeatmap))).
		WithPanel(graph(8, "Persistence in progress",
			"1 while an RDB save or an AOF rewrite runs: a forked child is copying memory on write.",
			"none", 8, 6, thresholds(green)).
			Max(1).
			WithTarget(query("A", `redis_prober_persistence_in_progress{target=~"$target"}`, "{{target}} {{kind}}")))

	b = b.WithRow(dashboard.NewRowBuilder("Memory").Id(9)).
		WithPanel(graph(10, "Fragmentation ratio",
			"RSS over used memory (INFO mem_fragmentation_ratio). Above 1.5 with a lot of wasted bytes calls for activedefrag; below 1 means part of Redis is in swap.",
			"none", 8, 8, thresholds(green, step{1.5, red})).
			Decimals(2).
			WithTarget(query("A", `redis_prober_memory_fragmentation_ratio{target=~"$target"}`, "{{target}}"))).
		WithPanel(graph(11, "Fragmentation: wasted bytes",
			"RSS minus used memory (INFO mem_fragmentation_bytes). The ratio alone lies on small datasets; the alert needs 100 MiB wasted too (Redis's own active-defrag-ignore-bytes).",
			"bytes", 8, 8, thresholds(green, step{100 << 20, red})).
			WithTarget(query("A", `redis_prober_memory_fragmentation_bytes{target=~"$target"}`, "{{target}}"))).
		WithPanel(dashedRed(graph(12, "Memory: used, RSS, maxmemory",
			"Used memory, resident set size and maxmemory (dashed; 0 means no limit). Keep used memory well under maxmemory and RAM: a fork's copy-on-write needs headroom.",
			"bytes", 8, 8, thresholds(green)).
			WithTarget(query("A", `redis_prober_memory_used_bytes{target=~"$target"}`, "used {{target}}")).
			WithTarget(query("B", `redis_prober_memory_rss_bytes{target=~"$target"}`, "rss {{target}}")).
			WithTarget(query("C", `redis_prober_memory_max_bytes{target=~"$target"}`, "maxmemory {{target}}")), "^maxmemory .*"))

	b = b.WithRow(dashboard.NewRowBuilder("Host").Id(13)).
		WithPanel(graph(14, "Host swap in and out",
			"Pages per second the prober's host swaps in and out (/proc/vmstat pswpin, pswpout). Any swap-out while Redis has pages in swap fires RedisProberHostSwapping.",
			"short", 8, 6, thresholds(green)).
			AxisLabel("pages/s").
			WithTarget(query("A", `sum by (instance) (rate(redis_prober_host_swap_in_pages_total[$__rate_interval]))`, "in {{instance}}")).
			WithTarget(query("B", `sum by (instance) (rate(redis_prober_host_swap_out_pages_total[$__rate_interval]))`, "out {{instance}}"))).
		WithPanel(graph(15, "Redis pages in swap",
			"Bytes of the redis-server process in swap (VmSwap), when the prober can see its /proc. Anything above 0 is a disk read waiting to happen on the event loop.",
			"bytes", 8, 6, thresholds(green, step{1, red})).
			WithTarget(query("A", `redis_prober_process_swap_bytes{target=~"$target"}`, "{{target}}"))).
		WithPanel(graph(16, "Memory pressure (PSI)",
			"Share of time some (or all) tasks of the host stalled waiting for memory (/proc/pressure/memory). Sustained 'some' above a few percent means reclaim is slowing processes down.",
			"percentunit", 8, 6, thresholds(green, step{0.05, orange}, step{0.2, red})).
			WithTarget(query("A", `sum by (instance, kind) (rate(redis_prober_host_memory_pressure_seconds_total[$__rate_interval]))`, "{{kind}} {{instance}}"))).
		WithPanel(graph(17, "Redis memory in huge pages",
			"AnonHugePages of the redis-server process (smaps_rollup). With THP 'always' forks and copy-on-write move 2 MiB pages and stall Redis.",
			"bytes", 8, 6, thresholds(green, step{1, orange})).
			WithTarget(query("A", `redis_prober_process_anon_hugepages_bytes{target=~"$target"}`, "{{target}}")))

	b = b.WithRow(dashboard.NewRowBuilder("Tuning").Id(18)).
		WithPanel(bigValue(19, "Transparent huge pages",
			"The active mode of /sys/kernel/mm/transparent_hugepage/enabled and defrag on each prober host. Redis wants 'never' or 'madvise'; 'always' fires RedisProberTHPAlways.",
			"none", 6, 8, thresholds(green)).
			TextMode(common.BigValueTextModeName).
			GraphMode(common.BigValueGraphModeNone).
			OverrideByRegexp(".*: always$", []dashboard.DynamicConfigValue{
				{Id: "color", Value: map[string]any{"mode": "fixed", "fixedColor": red}},
			}).
			WithTarget(query("A", `max by (instance, mode) (redis_prober_host_thp_enabled) == 1`, "{{instance}} enabled: {{mode}}")).
			WithTarget(query("B", `max by (instance, mode) (redis_prober_host_thp_defrag) == 1`, "{{instance}} defrag: {{mode}}"))).
		WithPanel(grid(20, "Kernel settings",
			"The sysctls that matter for Redis latency on each prober host: vm.swappiness, vm.overcommit_memory, net.core.somaxconn, net.ipv4.tcp_max_syn_backlog, vm.dirty_ratio, vm.dirty_background_ratio.",
			6, 8).
			WithTarget(tableQuery("A", `max by (instance, name) (redis_prober_host_sysctl)`)).
			WithTransformation(hideColumns(map[string]string{"name": "sysctl", "Value": "value"}))).
		WithPanel(grid(21, "Collectors",
			"Whether each collector's last run worked (redis_prober_collector_success). A failing collector leaves its panels empty; the prober's log says why.",
			6, 8).
			Mappings(passFail("ok", "failing")).
			CellOptions(common.TableCellOptions{TableColorTextCellOptions: &common.TableColorTextCellOptions{Type: common.TableCellDisplayModeColorText}}).
			WithTarget(tableQuery("A", `min by (instance, collector) (redis_prober_collector_success)`)).
			WithTransformation(hideColumns(map[string]string{"Value": "state"}))).
		WithPanel(checksTable(23, "Host tuning checks",
			"The tuning checks of each prober's own host (THP, vm.swappiness, vm.overcommit_memory, intrinsic latency, CPU governor), once per prober, not per target: pass or fail, with its severity. They say nothing about a Redis on another host; run `redis-prober doctor` there. Failing warning and critical checks fire RedisProberTuningCheckFailed (without a target) after 30 minutes.",
			10, 8, `min by (instance, check, severity) (redis_prober_host_check_passed)`)).
		WithPanel(checksTable(22, "Redis tuning checks",
			"Every Redis tuning check per target: pass or fail, with its severity (somaxconn, tcp_max_syn_backlog and numa_binding read this host as Redis's, so they are known only where Redis runs beside the prober). `redis-prober doctor` prints why each matters and the exact fix; failing warning and critical checks fire RedisProberTuningCheckFailed after 30 minutes.",
			10, 16, `min by (target, check, severity) (redis_prober_check_passed{target=~"$target"})`))

	return b.Build()
}
