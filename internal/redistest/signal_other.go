//go:build !unix

package redistest

import (
	"os"
	"runtime"
)

// Pause needs SIGSTOP, which this system has not: the test is skipped.
func (s *Server) Pause() {
	s.t.Helper()
	s.t.Skipf("redistest: Pause needs SIGSTOP, which %s has not", runtime.GOOS)
}

// Resume needs SIGCONT, which this system has not: the test is skipped.
func (s *Server) Resume() {
	s.t.Helper()
	s.t.Skipf("redistest: Resume needs SIGCONT, which %s has not", runtime.GOOS)
}

// resume does nothing: nothing here can pause a server.
func resume(*os.Process) {}

// running is true while the server still answers on its port (there is no
// signal 0 to ask whether a process exists).
func (s *Server) running(*os.Process) bool { return s.ping() == nil }
