package collector

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// processStatus holds the fields of /proc/<pid>/status we use.
type processStatus struct {
	name                   string
	rss, swap              uint64
	voluntary, involuntary uint64
	cpusAllowed, memsAllow string
}

// parseProcessStatus parses /proc/<pid>/status.
func parseProcessStatus(b []byte) (processStatus, error) {
	var st processStatus
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		var err error
		switch k {
		case "Name":
			st.name = v
		case "VmRSS":
			st.rss, err = parseKB(v)
		case "VmSwap":
			st.swap, err = parseKB(v)
		case "voluntary_ctxt_switches":
			st.voluntary, err = strconv.ParseUint(v, 10, 64)
		case "nonvoluntary_ctxt_switches":
			st.involuntary, err = strconv.ParseUint(v, 10, 64)
		case "Cpus_allowed_list":
			st.cpusAllowed = v
		case "Mems_allowed_list":
			st.memsAllow = v
		}
		if err != nil {
			return processStatus{}, fmt.Errorf("status %s: %w", k, err)
		}
	}
	if err := sc.Err(); err != nil {
		return processStatus{}, fmt.Errorf("status: %w", err)
	}
	if st.name == "" {
		return processStatus{}, errors.New("status: no Name line")
	}
	return st, nil
}

// parseKB parses "1234 kB" into bytes.
func parseKB(v string) (uint64, error) {
	f := strings.Fields(v)
	if len(f) == 0 {
		return 0, errors.New("empty value")
	}
	n, err := strconv.ParseUint(f[0], 10, 64)
	if err != nil {
		return 0, err
	}
	if len(f) > 1 && f[1] == "kB" {
		n *= 1024
	}
	return n, nil
}

// parseSmapsRollup returns AnonHugePages of /proc/<pid>/smaps_rollup.
func parseSmapsRollup(b []byte) (anonHuge uint64, err error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && k == "AnonHugePages" {
			return parseKB(strings.TrimSpace(v))
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("smaps_rollup: %w", err)
	}
	return 0, errors.New("smaps_rollup: no AnonHugePages line")
}

// parseOpenFilesLimit returns the soft "Max open files" of /proc/<pid>/limits;
// ok is false when it is unlimited.
func parseOpenFilesLimit(b []byte) (limit uint64, ok bool, err error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		rest, found := strings.CutPrefix(line, "Max open files")
		if !found {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 2 {
			return 0, false, fmt.Errorf("limits: malformed line %q", line)
		}
		if f[0] == "unlimited" {
			return 0, false, nil
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return 0, false, fmt.Errorf("limits: max open files: %w", err)
		}
		return n, true, nil
	}
	if err := sc.Err(); err != nil {
		return 0, false, fmt.Errorf("limits: %w", err)
	}
	return 0, false, errors.New("limits: no Max open files line")
}

// parseListCount counts the members of a kernel list such as "0-3,8,10-11".
func parseListCount(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty list")
	}
	n := 0
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return 0, fmt.Errorf("bad list member %q", part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return 0, fmt.Errorf("bad list range %q", part)
			}
		}
		n += b - a + 1
	}
	return n, nil
}

// isRedisProcess tells the process names accepted as the Redis server.
func isRedisProcess(name string) bool { return name == "redis-server" || name == "valkey-server" }

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// parseStartTime returns the start time of a process, in seconds after boot,
// from /proc/<pid>/stat (field 22; the name in parentheses may hold spaces).
func parseStartTime(stat []byte) (float64, error) {
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("stat: no command name")
	}
	f := strings.Fields(s[i+1:])
	// After the name: state is field 3, starttime field 22.
	if len(f) < 20 {
		return 0, errors.New("stat: too few fields")
	}
	ticks, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stat: starttime: %w", err)
	}
	return float64(ticks) / clockTicks, nil
}

// parseBootTime returns btime of /proc/stat.
func parseBootTime(stat []byte) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(stat))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "btime "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, errors.New("stat: no btime")
}

// ReadProcess reads the Redis process from /proc, after checking that it is
// really the server we talk to: its name is redis-server (or
// valkey-server), when its title shows a listening port that port is the
// server's, and when the start times are readable it started when INFO
// says. A PID from another namespace, or a process we may not read, is
// ErrNoData.
func ReadProcess(paths Paths, id Identity) (*ProcessStats, error) {
	pid, tcpPort := id.PID, id.TCPPort
	if pid <= 0 {
		return nil, fmt.Errorf("no process_id in INFO: %w", ErrNoData)
	}
	dir := paths.proc(strconv.Itoa(pid))
	b, err := readFile(filepath.Join(dir, "status"))
	if err != nil {
		return nil, err
	}
	st, err := parseProcessStatus(b)
	if err != nil {
		return nil, err
	}
	if !isRedisProcess(st.name) {
		return nil, fmt.Errorf("pid %d is %q, not redis-server (Redis runs in another PID namespace): %w", pid, st.name, ErrNoData)
	}
	if cmd, err := readFile(filepath.Join(dir, "cmdline")); err == nil && tcpPort > 0 {
		if port, ok := titlePort(cmd); ok && port != tcpPort {
			return nil, fmt.Errorf("pid %d listens on port %d, not %d (another Redis): %w", pid, port, tcpPort, ErrNoData)
		}
	}
	if id.Started > 0 {
		if err := checkStarted(paths, dir, id.Started); err != nil {
			return nil, fmt.Errorf("pid %d: %w", pid, err)
		}
	}
	ps := &ProcessStats{
		PID:                 pid,
		RSSBytes:            st.rss,
		SwapBytes:           st.swap,
		VoluntarySwitches:   st.voluntary,
		InvoluntarySwitches: st.involuntary,
	}
	if n, err := parseListCount(st.cpusAllowed); err == nil {
		ps.CPUsAllowed = n
	}
	if n, err := parseListCount(st.memsAllow); err == nil {
		ps.NUMANodesAllowed = n
	}
	if b, err := readFile(filepath.Join(dir, "smaps_rollup")); err == nil {
		if v, err := parseSmapsRollup(b); err == nil {
			ps.AnonHugePagesBytes, ps.HasAnonHugePages = v, true
		}
	}
	if b, err := readFile(filepath.Join(dir, "limits")); err == nil {
		if v, ok, err := parseOpenFilesLimit(b); err == nil {
			ps.OpenFilesLimit, ps.HasOpenFilesLimit = v, ok
		}
	}
	return ps, nil
}

// checkStarted compares the process start time with the server's. Missing
// files skip the comparison; a mismatch is another process.
func checkStarted(paths Paths, dir string, started float64) error {
	st, err := readFile(filepath.Join(dir, "stat"))
	if err != nil {
		return nil
	}
	boot, err := readFile(paths.proc("stat"))
	if err != nil {
		return nil
	}
	after, err1 := parseStartTime(st)
	btime, err2 := parseBootTime(boot)
	if err1 != nil || err2 != nil {
		return nil
	}
	if d := float64(btime) + after - started; d > startSlack || d < -startSlack {
		return fmt.Errorf("started %.0fs apart from the server we talk to (another Redis): %w", d, ErrNoData)
	}
	return nil
}

// titlePort finds the port in a redis-server process title such as
// "redis-server 127.0.0.1:6379" or "redis-server *:6379 [cluster]".
func titlePort(cmdline []byte) (int, bool) {
	title := strings.ReplaceAll(string(cmdline), "\x00", " ")
	for _, w := range strings.Fields(title) {
		i := strings.LastIndexByte(w, ':')
		if i < 0 {
			continue
		}
		if p, err := strconv.Atoi(w[i+1:]); err == nil && p > 0 && p < 65536 {
			return p, true
		}
	}
	return 0, false
}
