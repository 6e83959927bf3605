package redistest

import "syscall"

// sysProcAttr is empty on Windows: it has no process groups to put the
// child in, nor a parent death signal, so a crashed test binary may leave
// its server running until the temp dir is cleaned up.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{}
}
