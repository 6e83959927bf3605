//go:build linux

package explain

import (
	"time"

	"github.com/prometheus/procfs"

	"github.com/redis-prober/redis-prober/collector"
)

// minRunDelay is the smallest run delay in one sample kept as evidence: a
// busy host's scheduler makes a few µs of it all the time.
const minRunDelay = 250 * time.Microsecond

// procSampler reads the run delay (/proc/<pid>/schedstat) and major faults
// (/proc/<pid>/stat) of the redis-server main thread, once it is known to
// be the server we probe (collector.ReadProcess's checks: its name, port
// and start time).
type procSampler struct {
	paths collector.Paths
	off   bool
	pid   int
	proc  *procfs.Proc

	have          bool
	at            int64
	wait, majflts uint64
}

// attach finds the process of info (again when its pid changed).
func (s *procSampler) attach(info collector.Info) {
	if s.off {
		return
	}
	id := collector.IdentityFromInfo(info)
	if id.PID == s.pid {
		return
	}
	s.pid, s.proc, s.have = id.PID, nil, false
	if _, err := collector.ReadProcess(s.paths, id); err != nil {
		return // remote, another namespace, not ours: no redis_cpu or swap
	}
	fs, err := procfs.NewFS(s.paths.ProcFS)
	if err != nil {
		return
	}
	p, err := fs.Proc(id.PID)
	if err != nil {
		return
	}
	s.proc = &p
}

// sample returns the run delay and major faults since the previous sample,
// as evidence over the interval between the two.
func (s *procSampler) sample(now int64) []Evidence {
	if s.proc == nil {
		return nil
	}
	ss, err1 := s.proc.Schedstat()
	st, err2 := s.proc.Stat()
	if err1 != nil || err2 != nil {
		s.proc, s.have = nil, false // gone; attach finds it again
		s.pid = 0
		return nil
	}
	prev, had := *s, s.have
	s.have, s.at, s.wait, s.majflts = true, now, ss.WaitingNanoseconds, uint64(st.MajFlt)
	if !had || now <= prev.at {
		return nil
	}
	var out []Evidence
	if d := time.Duration(ss.WaitingNanoseconds - prev.wait); ss.WaitingNanoseconds > prev.wait && d >= minRunDelay {
		out = append(out, Evidence{Cause: RedisCPU, From: prev.at, To: now, Dur: d})
	}
	if uint64(st.MajFlt) > prev.majflts {
		out = append(out, Evidence{Cause: Swap, From: prev.at, To: now})
	}
	return out
}
