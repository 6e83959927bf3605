package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/redis-prober/redis-prober/internal/doctor"
	"github.com/redis-prober/redis-prober/internal/redistest"
	"github.com/redis-prober/redis-prober/wire"
)

// hostTree writes a /proc and /sys fixture: tuned (every host check
// passes) or untuned (the defaults of a stock distribution).
func hostTree(t *testing.T, tuned bool) (procfs, sysfs string) {
	t.Helper()
	root := t.TempDir()
	procfs, sysfs = filepath.Join(root, "proc"), filepath.Join(root, "sys")
	files := map[string]string{
		"proc/meminfo":                               "MemTotal:       16384000 kB\nSwapTotal:       4194304 kB\nSwapFree:        4194304 kB\n",
		"proc/vmstat":                                "pswpin 0\npswpout 0\ncompact_stall 0\nthp_fault_alloc 0\n",
		"proc/sys/vm/swappiness":                     "1\n",
		"proc/sys/vm/overcommit_memory":              "1\n",
		"proc/sys/net/core/somaxconn":                "4096\n",
		"proc/sys/net/ipv4/tcp_max_syn_backlog":      "4096\n",
		"sys/kernel/mm/transparent_hugepage/enabled": "always madvise [never]\n",
		"sys/kernel/mm/transparent_hugepage/defrag":  "always defer defer+madvise [madvise] never\n",
		"sys/devices/system/node/node0/cpulist":      "0-1\n",
	}
	if !tuned {
		files["proc/sys/vm/swappiness"] = "60\n"
		files["proc/sys/vm/overcommit_memory"] = "0\n"
		files["proc/sys/net/core/somaxconn"] = "128\n"
		files["sys/kernel/mm/transparent_hugepage/enabled"] = "[always] madvise never\n"
		files["sys/kernel/mm/transparent_hugepage/defrag"] = "[always] defer defer+madvise madvise never\n"
		files["sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"] = "powersave\n"
	}
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return procfs, sysfs
}

// redisOnThisHost puts srv's process into the procfs fixture, so the doctor
// sees Redis as running on the fixture's host.
func redisOnThisHost(t *testing.T, procfs string, srv *redistest.Server) {
	t.Helper()
	dir := filepath.Join(procfs, strconv.Itoa(srv.PID()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	status := "Name:\tredis-server\nVmRSS:\t    8192 kB\nVmSwap:\t       0 kB\nMems_allowed_list:\t0\n"
	if err := os.WriteFile(filepath.Join(dir, "status"), []byte(status), 0o644); err != nil {
		t.Fatal(err)
	}
}

func runDoctorCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = realMain(append([]string{"doctor"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestDoctorTunedHostExits0(t *testing.T) {
	srv := redistest.Start(t, "maxmemory 64mb", "latency-monitor-threshold 10")
	procfs, sysfs := hostTree(t, true)
	redisOnThisHost(t, procfs, srv)
	code, out, errOut := runDoctorCmd(t, "--redis.addr="+srv.URL(), "--path.procfs="+procfs, "--path.sysfs="+sysfs, "--measure.duration=500ms")
	if code != 0 {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{"thp_enabled", "vm_swappiness", "vm_overcommit_memory", "somaxconn", "maxmemory",
		"latency_monitor", "intrinsic_latency", "measured: PING p50", "measured: connect", "nothing critical"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("colour codes written to a non-terminal")
	}
}

func TestDoctorUntunedHostNamesEachProblemAndExits1(t *testing.T) {
	srv := redistest.Start(t)
	procfs, sysfs := hostTree(t, false)
	redisOnThisHost(t, procfs, srv)
	code, out, errOut := runDoctorCmd(t, "--redis.addr="+srv.URL(), "--path.procfs="+procfs, "--path.sysfs="+sysfs, "--measure.duration=0s")
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	// Each problem with its fix.
	for _, want := range []string{
		"FAIL    thp_enabled", "echo never > /sys/kernel/mm/transparent_hugepage/enabled", "disable-thp.service",
		"WARN    thp_defrag",
		"FAIL    vm_swappiness", "sysctl -w vm.swappiness=1",
		"FAIL    vm_overcommit_memory", "sysctl -w vm.overcommit_memory=1",
		"WARN    somaxconn", "net.core.somaxconn = 128, tcp-backlog 511", "sysctl -w net.core.somaxconn=4096",
		"WARN    maxmemory", "CONFIG SET maxmemory",
		"INFO    latency_monitor", "latency-monitor-threshold 10",
		"INFO    cpu_governor", "cpupower frequency-set -g performance",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if !strings.Contains(errOut, "host/thp_enabled") || !strings.Contains(errOut, "host/vm_overcommit_memory") {
		t.Errorf("stderr does not name the critical failures: %q", errOut)
	}
	if t.Failed() {
		t.Logf("report:\n%s", out)
	}
}

func TestDoctorJSON(t *testing.T) {
	srv := redistest.Start(t, "requirepass doctor-s3cret", "maxmemory 64mb")
	t.Setenv("REDIS_PASSWORD", "doctor-s3cret")
	procfs, sysfs := hostTree(t, true)
	redisOnThisHost(t, procfs, srv)
	code, out, errOut := runDoctorCmd(t, "--redis.addr="+srv.URL(), "--path.procfs="+procfs, "--path.sysfs="+sysfs,
		"--measure.duration=500ms", "--output=json")
	if code != 0 && code != 1 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var rep doctor.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(rep.Targets) != 1 || !rep.Targets[0].Reachable || rep.Targets[0].Server == "" {
		t.Fatalf("targets: %+v", rep.Targets)
	}
	tr := rep.Targets[0]
	if tr.Ping == nil || tr.Ping.Count == 0 || tr.Ping.P99Seconds < tr.Ping.P50Seconds || tr.Ping.MaxSeconds < tr.Ping.P99Seconds {
		t.Errorf("ping measurement: %+v", tr.Ping)
	}
	if tr.Connect == nil || tr.Connect.Count == 0 {
		t.Errorf("connect measurement: %+v", tr.Connect)
	}
	// Over TCP on Linux the PINGs are kernel-stamped, and every stamped
	// reply says how long it sat in this host's kernel.
	if tr.Clock != string(wire.ClockKernel) || tr.ClientDelay == nil || tr.ClientDelay.Count == 0 {
		t.Errorf("clock %q, client delay %+v; want kernel and a measured delay", tr.Clock, tr.ClientDelay)
	}
	if rep.Intrinsic == nil || rep.Intrinsic.Windows == 0 {
		t.Errorf("intrinsic: %+v", rep.Intrinsic)
	}
	ids := map[string]bool{}
	for _, c := range append(rep.Host, tr.Checks...) {
		ids[c.ID] = true
		if c.Why == "" || c.Fix == "" || c.Status == "" {
			t.Errorf("check %+v lacks why/fix/status", c)
		}
	}
	if len(ids) != 16 {
		t.Errorf("%d distinct checks in the report, want 16: %v", len(ids), ids)
	}
	if strings.Contains(out+errOut, "doctor-s3cret") {
		t.Error("the password leaked into the report")
	}
}

// TestDoctorRedisOnAnotherHost: a Redis the doctor reaches but whose
// process this host's /proc does not show (the fixture lacks its pid) runs
// elsewhere. somaxconn, tcp_max_syn_backlog and numa_binding were judged on
// the prober's own host ("WARN somaxconn: net.core.somaxconn = 128"); they
// are unknown, say so, and keep what Redis reports (tcp-backlog).
func TestDoctorRedisOnAnotherHost(t *testing.T) {
	srv := redistest.Start(t, "maxmemory 64mb")
	procfs, sysfs := hostTree(t, false) // somaxconn 128 here: a warning if read as Redis's
	args := []string{"--redis.addr=" + srv.URL(), "--path.procfs=" + procfs, "--path.sysfs=" + sysfs, "--measure.duration=0s"}
	_, out, errOut := runDoctorCmd(t, args...)
	for _, want := range []string{
		"note: the redis-server process is not visible here",
		"Redis runs on another host",
		"UNKNOWN somaxconn             tcp-backlog 511 (from Redis); the sysctls of Redis's host are not visible from here",
		"UNKNOWN tcp_max_syn_backlog   tcp-backlog 511 (from Redis)",
		"UNKNOWN numa_binding          Redis's host is not visible from here",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(out, "net.core.somaxconn = 128") || strings.Contains(out, "WARN    somaxconn") {
		t.Errorf("the prober's own somaxconn is reported as Redis's")
	}
	// This host's own checks are still there, under Host.
	if !strings.Contains(out, "FAIL    vm_swappiness") {
		t.Errorf("the host checks are gone")
	}
	if t.Failed() {
		t.Logf("report:\n%s\nstderr: %s", out, errOut)
	}

	_, js, _ := runDoctorCmd(t, append(args, "--output=json")...)
	var rep doctor.Report
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, js)
	}
	tr := rep.Targets[0]
	if tr.ProcessVisible || !strings.Contains(tr.ProcessError, strconv.Itoa(srv.PID())) {
		t.Errorf("process_visible %v, process_error %q: want false and the reason", tr.ProcessVisible, tr.ProcessError)
	}
	for _, c := range tr.Checks {
		if (c.ID == "somaxconn" || c.ID == "tcp_max_syn_backlog" || c.ID == "numa_binding") && c.Status != "unknown" {
			t.Errorf("%s: %s %q, want unknown", c.ID, c.Status, c.Value)
		}
	}
}

func TestDoctorUnreachableExits1(t *testing.T) {
	port := redistest.FreePort(t)
	procfs, sysfs := hostTree(t, true)
	code, out, errOut := runDoctorCmd(t, "--redis.addr=redis://127.0.0.1:"+strconv.Itoa(port), "--path.procfs="+procfs,
		"--path.sysfs="+sysfs, "--measure.duration=0s")
	if code != 1 || !strings.Contains(out, "NOT REACHABLE") || !strings.Contains(errOut, "unreachable") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

func TestDoctorContainerWithoutHostView(t *testing.T) {
	// Nothing of /proc or /sys visible: every host check is unknown and
	// nothing breaks.
	srv := redistest.Start(t, "maxmemory 64mb")
	empty := t.TempDir()
	code, out, errOut := runDoctorCmd(t, "--redis.addr="+srv.URL(), "--path.procfs="+empty, "--path.sysfs="+empty, "--measure.duration=0s")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, id := range []string{"thp_enabled", "vm_swappiness", "vm_overcommit_memory", "redis_swapped"} {
		if !strings.Contains(out, "UNKNOWN "+id) {
			t.Errorf("%s not unknown:\n%s", id, out)
		}
	}
}

func TestDoctorBadUsageExits2(t *testing.T) {
	for _, tc := range []struct{ arg, flag string }{
		{"--output=xml", "--output"},
		{"--measure.duration=soon", "--measure.duration"},
		{"--measure.duration=1h", "--measure.duration"},
		{"--redis.addr=http://x:1", "--redis.addr"},
	} {
		code, _, errOut := runDoctorCmd(t, tc.arg)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code != 2 || len(lines) != 1 || !strings.Contains(errOut, tc.flag) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and one line naming %s", tc.arg, code, errOut, tc.flag)
		}
	}
}
