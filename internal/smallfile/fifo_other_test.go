//go:build !unix

package smallfile

import (
	"runtime"
	"testing"
)

// mkfifo skips the test: it reads a named pipe and /dev/zero, which only
// Unix has.
func mkfifo(t *testing.T, _ string) {
	t.Helper()
	t.Skipf("smallfile: the test reads a named pipe and /dev/zero, which %s has not", runtime.GOOS)
}
