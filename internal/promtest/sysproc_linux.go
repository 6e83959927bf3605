package promtest

import "syscall"

// sysProcAttr puts the child in its own process group and has the kernel
// kill it when the test binary dies, so no server outlives a crashed test.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
