package collector

// SysctlNames are the kernel settings that decide how Redis behaves under
// memory pressure, at fork and under connection bursts.
func SysctlNames() []string {
	return []string{
		"vm.swappiness",
		"vm.overcommit_memory",
		"net.core.somaxconn",
		"net.ipv4.tcp_max_syn_backlog",
		"vm.dirty_ratio",
		"vm.dirty_background_ratio",
	}
}
