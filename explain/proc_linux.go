//go:build linux

package explain

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

	fs            procfs.FS
	have          bool
	at            int64
	wait, majflts uint64
	// children is the CPU time (clock ticks) of the server's fork
	// children at the last sample, by pid.
	children map[int]uint64
}

// starvedShare: a main thread that waited for a CPU for at least
// 1/starvedShare of a sample's window was starved in it.
const starvedShare = 10

// maxChildren bounds the children read: Redis runs one fork child at a
// time (BGSAVE, AOF rewrite, a module's).
const maxChildren = 4

// userHZ is the clock tick of /proc/<pid>/stat's CPU times.
const userHZ = 100

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
	s.fs, s.proc = fs, &p
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
		out = append(out, Evidence{Cause: RedisCPU, From: prev.at, To: now, Dur: d, Spread: true})
		if d >= time.Duration(now-prev.at)/starvedShare {
			// The run delay gathers where the server had work, which is
			// where the probe's requests were, not evenly over the
			// window: a server that waited this much was starved, a
			// state of the whole window.
			out = append(out, Evidence{Cause: RedisCPU, From: prev.at, To: now})
		}
	}
	if d := time.Duration(ss.WaitingNanoseconds - prev.wait); ss.WaitingNanoseconds > prev.wait && d >= minRunDelay {
		// The server's own fork child is a process like any other on the
		// host's CPUs: what it ran while the server waited (at most the
		// wait) is the fork's.
		if c := s.childCPU(time.Duration(now - prev.at)); c > 0 {
			out = append(out, Evidence{Cause: Fork, From: prev.at, To: now, Dur: min(c, d), Spread: true})
		}
	} else {
		s.childCPU(0)
	}
	if uint64(st.MajFlt) > prev.majflts {
		out = append(out, Evidence{Cause: Swap, From: prev.at, To: now})
	}
	return out
}

// childCPU is the CPU time the server's children ran since the previous
// call (a new child's whole time, at most span), from
// /proc/<pid>/task/<pid>/children and each child's stat.
func (s *procSampler) childCPU(span time.Duration) time.Duration {
	pid := strconv.Itoa(s.pid)
	b, err := os.ReadFile(filepath.Join(s.paths.ProcFS, pid, "task", pid, "children"))
	if err != nil || len(b) == 0 {
		s.children = nil
		return 0
	}
	seen := make(map[int]uint64, 1)
	var total time.Duration
	for i, f := range strings.Fields(string(b)) {
		if i >= maxChildren {
			break
		}
		cpid, err := strconv.Atoi(f)
		if err != nil {
			continue
		}
		p, err := s.fs.Proc(cpid)
		if err != nil {
			continue
		}
		st, err := p.Stat()
		if err != nil {
			continue
		}
		ticks := uint64(st.UTime + st.STime)
		seen[cpid] = ticks
		d := time.Duration(ticks-s.children[cpid]) * time.Second / userHZ
		if prev, ok := s.children[cpid]; ok && ticks >= prev || !ok {
			total += min(d, span)
		}
	}
	s.children = seen
	return total
}
