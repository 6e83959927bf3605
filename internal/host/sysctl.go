package host

import (
	"fmt"
	"strconv"
	"strings"
)

// Sysctl reads one sysctl by dotted name (vm.swappiness from
// <procfs>/sys/vm/swappiness) with procfs, which reads at most 128 bytes:
// its fields joined by one space.
func (r Reader) Sysctl(name string) (string, error) {
	fsys, err := r.procFS()
	if err != nil {
		return "", err
	}
	f, err := fsys.SysctlStrings(name)
	if err != nil {
		return "", classify(r.proc(append([]string{"sys"}, strings.Split(name, ".")...)...), err)
	}
	return strings.Join(f, " "), nil
}

// SysctlInt reads one integer sysctl.
func (r Reader) SysctlInt(name string) (int64, error) {
	s, err := r.Sysctl(name)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("sysctl %s: %q is not a number", name, s)
	}
	return v, nil
}

// KernelRelease is kernel.osrelease ("6.1.0-18-amd64").
func (r Reader) KernelRelease() (string, error) { return r.Sysctl("kernel.osrelease") }
