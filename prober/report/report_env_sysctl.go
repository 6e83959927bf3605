package report

import (
	"path/filepath"
	"strings"
)

// envSysctls are the kernel settings a report records, the ones the
// collectors export as redis_prober_host_sysctl plus the scheduler and
// NUMA ones that move tail latency.
var envSysctls = []string{
	"vm.swappiness", "vm.overcommit_memory", "vm.dirty_ratio", "vm.dirty_background_ratio",
	"vm.zone_reclaim_mode", "net.core.somaxconn", "net.ipv4.tcp_max_syn_backlog",
	"kernel.numa_balancing", "kernel.sched_autogroup_enabled",
}

// readEnvSysctls reads what it can under procfs; nil when nothing is there.
func readEnvSysctls(procfs string) map[string]string {
	var out map[string]string
	for _, name := range envSysctls {
		v := readTrim(filepath.Join(append([]string{procfs, "sys"}, strings.Split(name, ".")...)...))
		if v == "" {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[name] = v
	}
	return out
}
