package collector

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/redis-prober/redis-prober/internal/host"
)

// The host reader parses meminfo, PSI, limits and the stat files with
// procfs, which reads files, not bytes: these helpers put a fixture where
// the reader looks (a temporary procfs root) and read it back.

func procWith(t *testing.T, files map[string]string) host.Reader {
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
	return host.New(dir, "")
}

func meminfoVia(t *testing.T, b []byte) (map[string]uint64, error) {
	mi, err := procWith(t, map[string]string{"meminfo": string(b)}).Meminfo()
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	for k, v := range map[string]*uint64{"MemTotal": mi.MemTotalBytes, "MemAvailable": mi.MemAvailableBytes,
		"SwapTotal": mi.SwapTotalBytes, "SwapFree": mi.SwapFreeBytes, "HugePages_Total": mi.HugePagesTotal} {
		if v != nil {
			out[k] = *v
		}
	}
	return out, nil
}

func pressureVia(t *testing.T, b []byte) (host.Pressure, error) {
	return procWith(t, map[string]string{"pressure/memory": string(b)}).MemoryPressure()
}

// limitsVia reads b as /proc/1/limits; procfs skips the first line, the
// header the kernel always writes, so a bare line gets one.
func limitsVia(t *testing.T, b []byte) (uint64, bool, error) {
	s := string(b)
	if !strings.HasPrefix(s, "Limit ") {
		s = "Limit                     Soft Limit           Hard Limit           Units     \n" + s
	}
	return procWith(t, map[string]string{"1/limits": s}).Process(1).OpenFilesLimit()
}

// startVia reads b as /proc/<pid>/stat after a boot at time 0: the start
// time in seconds after boot.
func startVia(t *testing.T, b []byte) (float64, error) {
	pid, _, _ := strings.Cut(string(b), " ")
	n, err := strconv.Atoi(pid)
	if err != nil {
		t.Fatalf("stat line without a pid: %q", b)
	}
	return procWith(t, map[string]string{pid + "/stat": string(b), "stat": "btime 0\n"}).Process(n).StartTime()
}

// bootVia reads b as /proc/stat: btime, through the start time of a
// process that started at boot.
func bootVia(t *testing.T, b []byte) (int64, error) {
	stat := "1 (init) S" + strings.Repeat(" 0", 49) + "\n"
	v, err := procWith(t, map[string]string{"stat": string(b), "1/stat": stat}).Process(1).StartTime()
	return int64(v), err
}
