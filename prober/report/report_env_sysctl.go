package report

import "github.com/redis-prober/redis-prober/internal/host"

// envSysctls are the kernel settings a report records, the ones the
// collectors export as redis_prober_host_sysctl plus the scheduler and
// NUMA ones that move tail latency.
var envSysctls = []string{
	"vm.swappiness", "vm.overcommit_memory", "vm.dirty_ratio", "vm.dirty_background_ratio",
	"vm.zone_reclaim_mode", "net.core.somaxconn", "net.ipv4.tcp_max_syn_backlog",
	"kernel.numa_balancing", "kernel.sched_autogroup_enabled",
}

// readEnvSysctls reads what it can through the host reader; nil when
// nothing is there.
func readEnvSysctls(r host.Reader) map[string]string {
	var out map[string]string
	for _, name := range envSysctls {
		v, err := r.Sysctl(name)
		if err != nil || v == "" {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[name] = v
	}
	return out
}
