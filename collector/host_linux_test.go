package collector

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis-prober/redis-prober/internal/host"
	"github.com/redis-prober/redis-prober/internal/redisinfo"
)

func TestParseTHPModes(t *testing.T) {
	files, err := filepath.Glob("testdata/thp/*")
	if err != nil || len(files) != 8 {
		t.Fatalf("want 8 THP fixtures, got %d (%v)", len(files), err)
	}
	for _, f := range files {
		kind, mode, _ := strings.Cut(filepath.Base(f), "-")
		m, err := host.ParseTHPMode(readFixture(t, "thp", filepath.Base(f)))
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if m.Active != mode {
			t.Errorf("%s: active %q, want %q", f, m.Active, mode)
		}
		want := 3
		if kind == "defrag" {
			want = 5
		}
		if len(m.Modes) != want {
			t.Errorf("%s: modes %v", f, m.Modes)
		}
	}
	for _, bad := range []string{"", "always madvise never", "[always] [never]", "al[ways] never", "[]"} {
		if _, err := host.ParseTHPMode(bad); err == nil {
			t.Errorf("parseTHPMode(%q): no error", bad)
		}
	}
}

func TestParseVMStat(t *testing.T) {
	for _, f := range []string{"captured/vmstat", "hosts/untuned/proc/vmstat"} {
		vm, err := host.ParseVMStat([]byte(readFixture(t, f)))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, k := range []string{"pswpin", "pswpout"} {
			if _, ok := vm[k]; !ok {
				t.Errorf("%s: no %s", f, k)
			}
		}
	}
	vm, _ := host.ParseVMStat([]byte(readFixture(t, "hosts/untuned/proc/vmstat")))
	if vm["pswpin"] != 48211 || vm["compact_stall"] != 4412 || vm["thp_fault_alloc"] != 20931 {
		t.Errorf("values: %v", vm)
	}
	for _, bad := range []string{"pswpin\n", "pswpin x\n", "a 1 2\n"} {
		if _, err := host.ParseVMStat([]byte(bad)); err == nil {
			t.Errorf("parseVMStat(%q): no error", bad)
		}
	}
}

func TestParseMeminfo(t *testing.T) {
	mi, err := meminfoVia(t, []byte(readFixture(t, "hosts/untuned/proc/meminfo")))
	if err != nil {
		t.Fatal(err)
	}
	if mi["MemTotal"] != 16384000*1024 || mi["SwapTotal"] != 4194304*1024 || mi["HugePages_Total"] != 0 {
		t.Errorf("values: MemTotal %d SwapTotal %d", mi["MemTotal"], mi["SwapTotal"])
	}
	if _, err := meminfoVia(t, []byte(readFixture(t, "captured/meminfo"))); err != nil {
		t.Errorf("captured: %v", err)
	}
}

func TestParsePressure(t *testing.T) {
	tests := []struct {
		in         string
		some, full uint64
		hasFull    bool
		bad        bool
	}{
		{in: readFixture(t, "hosts/untuned/proc/pressure/memory"), some: 123456789, full: 2345678, hasFull: true},
		{in: readFixture(t, "captured/pressure-memory"), hasFull: true},
		{in: "some avg10=0.00 avg60=0.00 avg300=0.00 total=42\n", some: 42},
		{in: "full avg10=0.00 total=1\n", bad: true},
		{in: "some avg10=0.00\n", bad: true},
		{in: "some total=x\n", bad: true},
	}
	for i, tt := range tests {
		p, err := pressureVia(t, []byte(tt.in))
		if (err != nil) != tt.bad {
			t.Errorf("%d: err %v, want bad=%v", i, err, tt.bad)
			continue
		}
		if tt.bad {
			continue
		}
		if tt.some != 0 && (p.SomeMicros != tt.some || p.FullMicros != tt.full) || p.HasFull != tt.hasFull {
			t.Errorf("%d: got %+v", i, p)
		}
	}
}

func TestParseProcessFiles(t *testing.T) {
	st, err := host.ParseProcStatus([]byte(readFixture(t, "hosts/untuned/proc/1021/status")))
	if err != nil {
		t.Fatal(err)
	}
	if st.Name != "redis-server" || st.Swap != 10240*1024 || st.RSS != 1258291*1024 ||
		st.Voluntary != 981234 || st.Involuntary != 4411 || st.CPUsAllowed != "0-3" || st.MemsAllow != "0-1" {
		t.Errorf("status: %+v", st)
	}
	if _, err := host.ParseProcStatus([]byte(readFixture(t, "captured/redis-status"))); err != nil {
		t.Errorf("captured status: %v", err)
	}
	ahp, err := host.ParseSmapsRollup([]byte(readFixture(t, "hosts/untuned/proc/1021/smaps_rollup")))
	if err != nil || ahp != 514048*1024 {
		t.Errorf("smaps_rollup: %d %v", ahp, err)
	}
	if _, err := host.ParseSmapsRollup([]byte(readFixture(t, "captured/redis-smaps_rollup"))); err != nil {
		t.Errorf("captured smaps_rollup: %v", err)
	}
	lim, ok, err := limitsVia(t, []byte(readFixture(t, "hosts/untuned/proc/1021/limits")))
	if err != nil || !ok || lim != 1024 {
		t.Errorf("limits: %d %v %v", lim, ok, err)
	}
	if _, _, err := limitsVia(t, []byte(readFixture(t, "captured/redis-limits"))); err != nil {
		t.Errorf("captured limits: %v", err)
	}
	if _, ok, err := limitsVia(t, []byte("Max open files            unlimited            unlimited            files\n")); ok || err != nil {
		t.Errorf("unlimited: ok=%v err=%v", ok, err)
	}
}

func TestParseListCount(t *testing.T) {
	for in, want := range map[string]int{"0": 1, "0-3": 4, "0-3,8,10-11": 7, "0-1\n": 2} {
		if got, err := host.ParseListCount(in); err != nil || got != want {
			t.Errorf("parseListCount(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "a", "3-1", "-1", "1-"} {
		if _, err := host.ParseListCount(bad); err == nil {
			t.Errorf("parseListCount(%q): no error", bad)
		}
	}
}

func TestReadProcessChecksIdentity(t *testing.T) {
	paths := host.Paths{ProcFS: "testdata/hosts/untuned/proc", SysFS: "testdata/hosts/untuned/sys"}
	ps, err := ReadProcess(paths, redisinfo.Identity{PID: 1021, TCPPort: 6379})
	if err != nil {
		t.Fatal(err)
	}
	if ps.SwapBytes != 10240*1024 || !ps.HasAnonHugePages || ps.OpenFilesLimit != 1024 || ps.NUMANodesAllowed != 2 || ps.CPUsAllowed != 4 {
		t.Errorf("stats: %+v", ps)
	}
	// The same PID listening on another port is another Redis.
	if _, err := ReadProcess(paths, redisinfo.Identity{PID: 1021, TCPPort: 6380}); !isNoData(err) {
		t.Errorf("wrong port: err %v, want ErrNoData", err)
	}
	// A PID that is not there (another PID namespace).
	if _, err := ReadProcess(paths, redisinfo.Identity{PID: 99999, TCPPort: 6379}); !isNoData(err) {
		t.Errorf("absent pid: err %v, want ErrNoData", err)
	}
	// A PID that is some other program.
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "5"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "5", "status"), []byte("Name:\tbash\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadProcess(host.Paths{ProcFS: dir}, redisinfo.Identity{PID: 5, TCPPort: 6379}); !isNoData(err) {
		t.Errorf("not redis: err %v, want ErrNoData", err)
	}
}

func TestReadHostFacts(t *testing.T) {
	hf, err := ReadHostFacts(host.Paths{ProcFS: "testdata/hosts/untuned/proc", SysFS: "testdata/hosts/untuned/sys"})
	if err != nil {
		t.Fatal(err)
	}
	if hf.THPEnabled != "always" || hf.THPDefrag != "always" || hf.Sysctls["vm.swappiness"] != 60 ||
		hf.Governors["powersave"] != 4 || hf.NUMANodes != 2 || hf.SwapTotalBytes == 0 {
		t.Errorf("facts: %+v", hf)
	}
	// A container that sees nothing of the host: no error, just unknowns.
	hf, err = ReadHostFacts(host.Paths{ProcFS: "testdata/hosts/container/proc", SysFS: "testdata/hosts/container/sys"})
	if err != nil {
		t.Fatalf("container: %v", err)
	}
	if hf.THPEnabled != "" || len(hf.Sysctls) != 0 || hf.Governors != nil || hf.NUMANodes != 0 || !hf.HasMeminfo {
		t.Errorf("container facts: %+v", hf)
	}
}

func TestHumanBytes(t *testing.T) {
	for in, want := range map[uint64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 10485760: "10.0 MiB", 3 << 30: "3.0 GiB", 1 << 50: "1.0 PiB"} {
		if got := humanBytes(in); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestParseStartAndBootTime(t *testing.T) {
	start, err := startVia(t, []byte(readFixture(t, "captured/redis-stat")))
	if err != nil || start <= 0 {
		t.Errorf("captured stat: %v %v", start, err)
	}
	// A name with spaces and parentheses does not shift the fields.
	// The line is whole, as every kernel since 2.6.24 writes it: procfs
	// reads the fields up to cguest_time.
	line := "42 (redis (srv) x) S 1 42 42 0 -1 4194560 1 0 0 0 3 4 0 0 20 0 5 0 12345 1000 200 18446744073709551615" + strings.Repeat(" 0", 29) + "\n"
	if got, err := startVia(t, []byte(line)); err != nil || got != 123.45 {
		t.Errorf("parseStartTime = %v, %v; want 123.45", got, err)
	}
	if _, err := startVia(t, []byte("42 (x) S 1")); err == nil {
		t.Error("short stat: no error")
	}
	if bt, err := bootVia(t, []byte(readFixture(t, "captured/stat"))); err != nil || bt < 1e9 {
		t.Errorf("btime %d %v", bt, err)
	}
}

func TestReadProcessChecksStartTime(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("stat", "cpu  1 2 3\nbtime 1700000000\n")
	write("9/status", "Name:\tredis-server\nVmRSS:\t100 kB\nVmSwap:\t0 kB\n")
	// Started 1000 s after boot.
	write("9/stat", "9 (redis-server) S 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100000 1000 200"+strings.Repeat(" 0", 29)+"\n")
	paths := host.Paths{ProcFS: dir}
	if _, err := ReadProcess(paths, redisinfo.Identity{PID: 9, Started: 1700001000 + 2}); err != nil {
		t.Errorf("same start: %v", err)
	}
	if _, err := ReadProcess(paths, redisinfo.Identity{PID: 9, Started: 1700005000}); !isNoData(err) {
		t.Errorf("other start: err %v, want ErrNoData", err)
	}
	if _, err := ReadProcess(paths, redisinfo.Identity{PID: 9}); err != nil {
		t.Errorf("start unknown: %v", err)
	}
}
