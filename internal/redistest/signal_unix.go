//go:build unix

package redistest

import (
	"os"
	"syscall"
)

func (s *Server) signal(sig syscall.Signal) {
	s.t.Helper()
	pid := s.PID()
	if pid == 0 {
		s.t.Fatalf("redistest: redis-server is not running")
	}
	if err := syscall.Kill(pid, sig); err != nil {
		s.t.Fatalf("redistest: signal %v: %v", sig, err)
	}
}

// Pause stops the server with SIGSTOP: connections stay open, nothing answers.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume continues a paused server.
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

// resume continues p if it was paused, so a kill takes it at once.
func resume(p *os.Process) { _ = syscall.Kill(p.Pid, syscall.SIGCONT) }

// running is true while the process p exists.
func (s *Server) running(p *os.Process) bool { return syscall.Kill(p.Pid, 0) == nil }
