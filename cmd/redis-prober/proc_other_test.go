//go:build !unix

package main

import (
	"os/exec"
	"runtime"
	"testing"
)

// ownProcessGroup does nothing: this system has no process groups.
func ownProcessGroup(*exec.Cmd) {}

// killProcessGroup kills cmd alone; its children may outlive it.
func killProcessGroup(cmd *exec.Cmd) { _ = cmd.Process.Kill() }

// mkfifo skips the test: named pipes and /dev/zero are Unix's.
func mkfifo(t *testing.T, _ string) {
	t.Helper()
	t.Skipf("the test needs a named pipe and /dev/zero, which %s has not", runtime.GOOS)
}
