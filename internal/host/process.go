package host

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
)

// ProcStatus holds the fields of /proc/<pid>/status the prober uses.
//
// Hand-written rather than procfs's Proc.NewStatus, which reads a garbage
// number as 0 (a VmSwap it cannot parse would read as no swap), has no
// Mems_allowed_list, and expands Cpus_allowed_list into one slice entry
// per CPU with no bound (a range of 0-4294967295 would fill memory).
type ProcStatus struct {
	Name                   string
	RSS, Swap              uint64 // bytes
	Voluntary, Involuntary uint64 // context switches
	CPUsAllowed, MemsAllow string // kernel lists such as "0-3,8"
}

// ParseProcStatus parses /proc/<pid>/status.
func ParseProcStatus(b []byte) (ProcStatus, error) {
	var st ProcStatus
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
			st.Name = v
		case "VmRSS":
			st.RSS, err = parseKB(v)
		case "VmSwap":
			st.Swap, err = parseKB(v)
		case "voluntary_ctxt_switches":
			st.Voluntary, err = strconv.ParseUint(v, 10, 64)
		case "nonvoluntary_ctxt_switches":
			st.Involuntary, err = strconv.ParseUint(v, 10, 64)
		case "Cpus_allowed_list":
			st.CPUsAllowed = v
		case "Mems_allowed_list":
			st.MemsAllow = v
		}
		if err != nil {
			return ProcStatus{}, fmt.Errorf("status %s: %w", k, err)
		}
	}
	if err := sc.Err(); err != nil {
		return ProcStatus{}, fmt.Errorf("status: %w", err)
	}
	if st.Name == "" {
		return ProcStatus{}, errors.New("status: no Name line")
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

// ParseSmapsRollup returns AnonHugePages of /proc/<pid>/smaps_rollup, in
// bytes. Hand-written: procfs's ProcSMapsRollup has no AnonHugePages, and
// where smaps_rollup is missing it reads the whole of /proc/<pid>/smaps,
// which for a large Redis is megabytes.
func ParseSmapsRollup(b []byte) (anonHuge uint64, err error) {
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

// ParseListCount counts the members of a kernel list such as
// "0-3,8,10-11" without expanding it.
func ParseListCount(s string) (int, error) {
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
		if b-a >= math.MaxInt-n {
			return 0, fmt.Errorf("list %q too long", s)
		}
		n += b - a + 1
	}
	return n, nil
}

// Process reads one process's files under the procfs root.
type Process struct {
	r   Reader
	pid int
}

// Process is the process pid of the procfs root.
func (r Reader) Process(pid int) Process { return Process{r: r, pid: pid} }

func (p Process) path(file string) string { return p.r.proc(strconv.Itoa(p.pid), file) }

// Status reads /proc/<pid>/status.
func (p Process) Status() (ProcStatus, error) {
	b, err := readFile(p.path("status"))
	if err != nil {
		return ProcStatus{}, err
	}
	return ParseProcStatus(b)
}

// AnonHugePages reads AnonHugePages of /proc/<pid>/smaps_rollup (it needs
// ptrace-read access to the process).
func (p Process) AnonHugePages() (uint64, error) {
	b, err := readFile(p.path("smaps_rollup"))
	if err != nil {
		return 0, err
	}
	return ParseSmapsRollup(b)
}

// open is the process in procfs, for procfs's parsers.
func (p Process) open() (procfs.Proc, error) {
	fsys, err := p.r.procFS()
	if err != nil {
		return procfs.Proc{}, err
	}
	proc, err := fsys.Proc(p.pid)
	if err != nil {
		return procfs.Proc{}, classify(p.r.proc(strconv.Itoa(p.pid)), err)
	}
	return proc, nil
}

// Cmdline reads /proc/<pid>/cmdline with procfs: the arguments, or the
// process title that redis-server sets ("redis-server *:6379").
func (p Process) Cmdline() ([]string, error) {
	proc, err := p.open()
	if err != nil {
		return nil, err
	}
	args, err := proc.CmdLine()
	if err != nil {
		return nil, classify(p.path("cmdline"), err)
	}
	return args, nil
}

// OpenFilesLimit reads the soft "Max open files" of /proc/<pid>/limits with
// procfs; ok is false when it is unlimited or not in the file.
func (p Process) OpenFilesLimit() (limit uint64, ok bool, err error) {
	proc, err := p.open()
	if err != nil {
		return 0, false, err
	}
	l, err := proc.Limits()
	if err != nil {
		return 0, false, classify(p.path("limits"), err)
	}
	if l.OpenFiles == 0 || l.OpenFiles == math.MaxUint64 { // absent, unlimited
		return 0, false, nil
	}
	return l.OpenFiles, true, nil
}

// StartTime is the Unix time the process started: /proc/<pid>/stat
// starttime after /proc/stat btime, both with procfs.
func (p Process) StartTime() (float64, error) {
	proc, err := p.open()
	if err != nil {
		return 0, err
	}
	st, err := proc.Stat()
	if err != nil {
		return 0, classify(p.path("stat"), err)
	}
	t, err := st.StartTime()
	if err != nil {
		return 0, classify(p.r.proc("stat"), err)
	}
	return t, nil
}
