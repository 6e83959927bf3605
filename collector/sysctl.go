package collector

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/redis-prober/redis-prober/internal/host"
)

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

// readSysctls reads what it can of SysctlNames; a missing one is left out.
func readSysctls(paths host.Paths) (map[string]int64, error) {
	out := map[string]int64{}
	var errs []error
	r := paths.Host()
	for _, name := range SysctlNames() {
		v, err := r.SysctlInt(name)
		if err != nil {
			if !errors.Is(err, ErrNoData) {
				errs = append(errs, err)
			}
			continue
		}
		out[name] = v
	}
	if len(out) == 0 && len(errs) == 0 {
		return out, fmt.Errorf("sysctl: none readable under %s: %w", filepath.Join(paths.ProcFS, "sys"), ErrNoData)
	}
	return out, errors.Join(errs...)
}
