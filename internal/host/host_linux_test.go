package host

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Missing files are ErrNoData, whichever parser (procfs or ours) reads them.
func TestMissingIsNoData(t *testing.T) {
	r := New(t.TempDir(), t.TempDir())
	_, e1 := r.THP("enabled")
	_, e2 := r.SysctlInt("vm.swappiness")
	_, e3 := r.Meminfo()
	_, e4 := r.MemoryPressure()
	_, e5 := r.VMStat()
	_, e6 := r.CPUGovernors()
	_, e7 := r.NUMANodes()
	_, e8 := r.Process(7).Status()
	_, e9 := r.KernelRelease()
	_, _, e10 := r.Process(7).OpenFilesLimit()
	_, e11 := r.Process(7).StartTime()
	_, e12 := r.Process(7).Cmdline()
	for i, err := range []error{e1, e2, e3, e4, e5, e6, e7, e8, e9, e10, e11, e12} {
		if !errors.Is(err, ErrNoData) {
			t.Errorf("%d: err %v, want ErrNoData", i+1, err)
		}
	}
	if New("", "").CPUModel() != "" {
		t.Error("CPU model from nowhere")
	}
	if _, err := (Reader{}).Meminfo(); !errors.Is(err, ErrNoData) {
		t.Errorf("zero reader: %v", err)
	}
}

// Garbage is an error naming what was read, never a panic, and never
// ErrNoData (it is a fault worth seeing).
func TestGarbageIsAnError(t *testing.T) {
	dir := tree(t, map[string]string{
		"proc/meminfo":           "MemTotal: lots kB\n",
		"proc/pressure/memory":   "some avg10=x\n",
		"proc/vmstat":            "pswpin 1 2\n",
		"proc/sys/vm/swappiness": "sixty\n",
		"proc/3/status":          "Name:\tredis-server\nVmSwap:\tmany kB\n",
		"proc/3/limits":          "Limit Soft Hard Units\nnonsense\n",
		"proc/3/stat":            "3 (redis-server) S 1 x\n",
		"sys/kernel/mm/transparent_hugepage/enabled": "always madvise\n",
	})
	r := New(filepath.Join(dir, "proc"), filepath.Join(dir, "sys"))
	_, e1 := r.Meminfo()
	_, e2 := r.MemoryPressure()
	_, e3 := r.VMStat()
	_, e4 := r.SysctlInt("vm.swappiness")
	_, e5 := r.Process(3).Status()
	_, _, e6 := r.Process(3).OpenFilesLimit()
	_, e7 := r.Process(3).StartTime()
	_, e8 := r.THP("enabled")
	for i, err := range []error{e1, e2, e3, e4, e5, e6, e7, e8} {
		if err == nil || errors.Is(err, ErrNoData) {
			t.Errorf("%d: err %v, want a parse error", i+1, err)
		}
	}
}

// A file over the bound is refused, not parsed in part; a kernel list is
// counted, never expanded.
func TestHugeInput(t *testing.T) {
	dir := tree(t, map[string]string{"vmstat": strings.Repeat("pswpin 1\n", maxFile/9+1)})
	if _, err := New(dir, "").VMStat(); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("huge vmstat: %v", err)
	}
	if n, err := ParseListCount("0-4294967295"); err != nil || n != 4294967296 {
		t.Errorf("huge list: %d %v", n, err)
	}
	if _, err := ParseListCount("0-9223372036854775807"); err == nil {
		t.Error("overflowing list: no error")
	}
}
