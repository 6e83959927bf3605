package e2e

import "syscall"

// sysProcAttr: Windows has no process groups of this kind and no parent
// death signal; the tests stop their prober themselves.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{}
}
