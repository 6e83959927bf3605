//go:build linux

package explain

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis-prober/redis-prober/internal/host"
	"github.com/redis-prober/redis-prober/internal/redisinfo"
)

// starvedShare: a main thread that waited for a CPU for at least
// 1/starvedShare of a sample's window was starved in it.
const starvedShare = 10

// maxChildren bounds the children read: Redis runs one fork child at a
// time (BGSAVE, AOF rewrite, a module's).
const maxChildren = 4

// userHZ is the clock tick of /proc/<pid>/stat's CPU times.
const userHZ = 100

// procSampler reads the run delay (/proc/<pid>/schedstat) and major faults
// (/proc/<pid>/stat) of the redis-server main thread, once it is known to
// be the server we probe (host.Reader.RedisProcess: its name, port
// and start time). The two files are read and parsed here rather than by
// procfs, whose Stat (fmt.Fscan) and Schedstat (a regexp) are dear at ten
// samples a second while slow requests come (docs/performance.md, "The hand-written parts").
type procSampler struct {
	paths host.Paths
	off   bool
	pid   int
	dir   string // /proc/<pid>, "" until attached

	have          bool
	at            int64
	wait, majflts uint64
	// children is the CPU time (clock ticks) of the server's fork
	// children at the last sample, by pid.
	children map[int]uint64
	buf      [1024]byte
}

// key names the process attached to, for a Share: its pid.
func (s *procSampler) key() (int, bool) { return s.pid, s.dir != "" }

// unsampled is a sampler attached where s is, with no sample yet.
func (s *procSampler) unsampled() procSampler {
	return procSampler{paths: s.paths, off: s.off, pid: s.pid, dir: s.dir}
}

// attach finds the process of info (again when its pid changed).
func (s *procSampler) attach(info redisinfo.Info) {
	if s.off {
		return
	}
	id := redisinfo.IdentityFromInfo(info)
	if id.PID == s.pid {
		return
	}
	s.pid, s.dir, s.have = id.PID, "", false
	if _, _, err := s.paths.Host().RedisProcess(id.PID, id.TCPPort, id.Started); err != nil {
		return // remote, another namespace, not ours: no redis_cpu or swap
	}
	s.dir = filepath.Join(s.paths.ProcFS, strconv.Itoa(id.PID))
}

// attached tells whether the server's /proc is being read.
func (s *procSampler) attached() bool { return s.dir != "" }

// read reads a small /proc file into the sampler's buffer.
func (s *procSampler) read(path string) ([]byte, bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	n, err := f.Read(s.buf[:])
	if err != nil || n == 0 || n == len(s.buf) {
		return nil, false
	}
	return s.buf[:n], true
}

// parseSchedstat reads the run delay (ns waiting on a run queue), the
// second of /proc/<pid>/schedstat's three numbers.
func parseSchedstat(b []byte) (uint64, bool) {
	f := bytes.Fields(b)
	if len(f) < 3 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(f[1]), 10, 64)
	return v, err == nil
}

// parseStat reads the major faults and CPU ticks (utime + stime) of
// /proc/<pid>/stat: fields 12, 14 and 15, counted after the command name,
// which may hold spaces and parentheses.
func parseStat(b []byte) (majflt, ticks uint64, ok bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, 0, false
	}
	var v [3]uint64
	for j, k := range []int{12 - 3, 14 - 3, 15 - 3} {
		n, err := strconv.ParseUint(string(f[k]), 10, 64)
		if err != nil {
			return 0, 0, false
		}
		v[j] = n
	}
	return v[0], v[1] + v[2], true
}

// sample returns the run delay and major faults since the previous sample,
// as evidence over the interval between the two.
func (s *procSampler) sample(now int64) []Evidence {
	if s.dir == "" {
		return nil
	}
	b, ok := s.read(s.dir + "/schedstat")
	var wait uint64
	if ok {
		wait, ok = parseSchedstat(b)
	}
	var majflt uint64
	if ok {
		b, ok = s.read(s.dir + "/stat")
	}
	if ok {
		majflt, _, ok = parseStat(b)
	}
	if !ok {
		s.dir, s.have, s.pid = "", false, 0 // gone; attach finds it again
		return nil
	}
	prev, had := *s, s.have
	s.have, s.at, s.wait, s.majflts = true, now, wait, majflt
	if !had || now <= prev.at {
		return nil
	}
	var out []Evidence
	if d := time.Duration(wait - prev.wait); wait > prev.wait && d >= minRunDelay {
		out = append(out, Evidence{Cause: RedisCPU, From: prev.at, To: now, Dur: d, Spread: true})
		if d >= time.Duration(now-prev.at)/starvedShare {
			// The run delay gathers where the server had work, which is
			// where the probe's requests were, not evenly over the
			// window: a server that waited this much was starved, a
			// state of the whole window.
			out = append(out, Evidence{Cause: RedisCPU, From: prev.at, To: now})
		}
		// The server's own fork child is a process like any other on the
		// host's CPUs: what it ran while the server waited (at most the
		// wait) is the fork's.
		if c := s.childCPU(time.Duration(now - prev.at)); c > 0 {
			out = append(out, Evidence{Cause: Fork, From: prev.at, To: now, Dur: min(c, d), Spread: true})
		}
	} else if len(s.children) > 0 {
		s.childCPU(0) // keeps the children's last CPU times
	}
	if majflt > prev.majflts {
		out = append(out, Evidence{Cause: Swap, From: prev.at, To: now})
	}
	return out
}

// childCPU is the CPU time the server's children ran since the previous
// call (a new child's whole time, at most span), from
// /proc/<pid>/task/<pid>/children and each child's stat. It is read only
// when the server waited for a CPU (or while a child is known): INFO says
// a child runs a second late, after the fork's first slow requests.
func (s *procSampler) childCPU(span time.Duration) time.Duration {
	pid := strconv.Itoa(s.pid)
	b, ok := s.read(filepath.Join(s.dir, "task", pid, "children"))
	if !ok {
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
		st, ok := s.read(filepath.Join(s.paths.ProcFS, f, "stat"))
		if !ok {
			continue
		}
		_, ticks, ok := parseStat(st)
		if !ok {
			continue
		}
		seen[cpid] = ticks
		prev, known := s.children[cpid]
		if !known || ticks >= prev {
			total += min(time.Duration(ticks-prev)*time.Second/userHZ, span)
		}
	}
	s.children = seen
	return total
}
