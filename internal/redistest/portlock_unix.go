//go:build unix

package redistest

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// lockPort reserves port for the rest of the test among every test process
// of the machine: a lock on a file named after it, in a directory all of
// them share, held until the test ends or its process dies. It returns false
// when another process holds it. The files stay: removing one while another
// process opens it would let two processes lock two files of one name.
func lockPort(t testing.TB, port int) bool {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "redistest-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatalf("redistest: port locks: %v", err)
	}
	// Whoever made it, every user's tests lock here (as in /tmp).
	_ = os.Chmod(dir, os.ModeSticky|0o777)
	// Read-only: a lock needs no more, so another user's file serves too.
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_RDONLY|os.O_CREATE, 0o666)
	if err != nil {
		return false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return false
	}
	t.Cleanup(func() { _ = f.Close() })
	return true
}
