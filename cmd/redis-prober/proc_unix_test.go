//go:build unix

package main

import (
	"os/exec"
	"syscall"
	"testing"
)

// ownProcessGroup starts cmd in a process group of its own, so
// killProcessGroup takes its children with it.
func ownProcessGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// killProcessGroup SIGKILLs the group ownProcessGroup made.
func killProcessGroup(cmd *exec.Cmd) { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
}
