// Package host is the one reader of the host's kernel state under
// --path.procfs and --path.sysfs: transparent huge pages, sysctls, the
// kernel release, meminfo, vmstat, memory pressure, cpufreq governors,
// NUMA nodes, the CPU model and a process's /proc files. The collectors,
// the change watcher (engine) and the burst report's environment snapshot
// all read through it.
//
// It parses with github.com/prometheus/procfs where procfs has the parser
// (meminfo, PSI, sysctls, /proc/stat, /proc/<pid>/stat, limits, cmdline)
// and with its own small parsers where procfs has none, or none that suits
// (each says why): THP modes, vmstat, /proc/<pid>/status, smaps_rollup,
// cpufreq governors, NUMA nodes, the CPU model.
//
// Every read is bounded: procfs reads at most 1 MiB of a file (128 bytes
// of a sysctl), and the files read here are read through readFile, which
// stops at maxFile. A file that is absent or may not be read here is
// ErrNoData; a garbage line is an error naming the file, never a panic.
package host

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/prometheus/procfs"
)

// ErrNoData means "not available here": no PSI in this kernel, no cpufreq
// in this VM, a process in another PID namespace, no /proc on this OS.
var ErrNoData = errors.New("no data available here")

// maxFile bounds the files this package reads itself. The largest,
// /proc/cpuinfo of a big host, is a few hundred KiB.
const maxFile = 1 << 20

// Reader reads the host under a procfs and a sysfs root. The zero Reader
// reads nothing (every read is ErrNoData).
type Reader struct {
	procRoot, sysRoot string
}

// New returns a reader of the proc file system at procRoot (/proc) and the
// sys file system at sysRoot (/sys).
func New(procRoot, sysRoot string) Reader { return Reader{procRoot: procRoot, sysRoot: sysRoot} }

func (r Reader) proc(elem ...string) string {
	return filepath.Join(append([]string{r.procRoot}, elem...)...)
}

func (r Reader) sys(elem ...string) string {
	return filepath.Join(append([]string{r.sysRoot}, elem...)...)
}

// procFS opens the procfs root for the procfs parsers.
func (r Reader) procFS() (procfs.FS, error) {
	if err := supported(); err != nil {
		return procfs.FS{}, err
	}
	if r.procRoot == "" {
		return procfs.FS{}, fmt.Errorf("no procfs root: %w", ErrNoData)
	}
	fsys, err := procfs.NewFS(r.procRoot)
	if err != nil {
		return procfs.FS{}, classify(r.procRoot, err)
	}
	return fsys, nil
}

// classify turns a read error of path into ErrNoData when the file is
// absent or may not be read here (no PSI, no cpufreq, another user's
// process), and names the path otherwise.
func classify(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) ||
		errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("%s: %w (%v)", path, ErrNoData, unwrapPathErr(err))
	}
	if strings.Contains(err.Error(), path) {
		return err
	}
	return fmt.Errorf("read %s: %w", path, err)
}

func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// readFile reads a /proc or /sys file, at most maxFile bytes of it (files
// of /proc report size 0, so the bound is on what is read, not on the
// size). A longer file is an error, not a truncated parse.
func readFile(path string) ([]byte, error) {
	b, err := readHead(path, maxFile+1)
	if err != nil {
		return nil, err
	}
	if len(b) > maxFile {
		return nil, fmt.Errorf("read %s: more than %d bytes", path, maxFile)
	}
	return b, nil
}

// readHead reads at most the first n bytes of a file.
func readHead(path string, n int64) ([]byte, error) {
	if err := supported(); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, classify(path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, n))
	if err != nil {
		return nil, classify(path, err)
	}
	return b, nil
}

func readTrimmed(path string) (string, error) {
	b, err := readFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}
