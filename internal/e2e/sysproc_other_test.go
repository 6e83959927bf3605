//go:build unix && !linux

package e2e

import "syscall"

// sysProcAttr puts the child in its own process group. There is no parent
// death signal outside Linux: a crashed test binary may leave its prober
// running until the temp dir is cleaned up.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
