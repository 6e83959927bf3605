package collector

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/redis-prober/redis-prober/internal/redisinfo"
)

// tunedFacts is a host and Redis on which every check passes.
func tunedFacts() Facts {
	return Facts{
		Host: HostFacts{
			THPEnabled: "madvise", THPDefrag: "madvise",
			Sysctls: map[string]int64{
				"vm.swappiness": 1, "vm.overcommit_memory": 1,
				"net.core.somaxconn": 4096, "net.ipv4.tcp_max_syn_backlog": 4096,
			},
			MemTotalBytes: 16 << 30, SwapTotalBytes: 4 << 30, HasMeminfo: true,
			Governors: map[string]int{"performance": 4}, NUMANodes: 1,
		},
		Info: redisinfo.Info{"total_system_memory": "17179869184", "latest_fork_usec": "9000",
			"used_memory_rss": "1000000000", "aof_enabled": "1", "maxmemory": "8589934592"},
		Config: map[string]string{
			"maxmemory": "8589934592", "maxclients": "10000", "tcp-backlog": "511",
			"latency-monitor-threshold": "10", "appendonly": "yes", "appendfsync": "everysec",
			"no-appendfsync-on-rewrite": "yes",
		},
		Process:      &ProcessStats{OpenFilesLimit: 65536, HasOpenFilesLimit: true, NUMANodesAllowed: 1},
		Intrinsic:    200 * time.Microsecond,
		HasIntrinsic: true,
	}
}

// evaluateAll is every check over f: the host's, then the Redis ones.
func evaluateAll(f *Facts) []Result {
	return append(Evaluate(f, ScopeHost), Evaluate(f, ScopeRedis)...)
}

func resultOf(t *testing.T, f Facts, id string) Result {
	t.Helper()
	for _, r := range evaluateAll(&f) {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no check %q", id)
	return Result{}
}

func TestChecksAllPassWhenTuned(t *testing.T) {
	for _, r := range evaluateAll(new(tunedFacts())) {
		if r.Status != StatusPass {
			t.Errorf("%s: %v (%s)", r.ID, r.Status, r.Value)
		}
	}
}

func TestChecksUnknownWithoutInputs(t *testing.T) {
	// Nothing readable: every check is unknown, none failed.
	for _, r := range evaluateAll(&Facts{}) {
		if r.Status != StatusUnknown {
			t.Errorf("%s: %v (%s), want unknown", r.ID, r.Status, r.Value)
		}
	}
}

func TestChecksEachFailure(t *testing.T) {
	tests := []struct {
		id      string
		breakIt func(f *Facts)
		want    Status
		value   string
	}{
		{"thp_enabled", func(f *Facts) { f.Host.THPEnabled = "always" }, StatusFail, "enabled = always"},
		{"thp_enabled", func(f *Facts) { f.Host.THPEnabled = "never" }, StatusPass, "enabled = never"},
		{"thp_defrag", func(f *Facts) { f.Host.THPDefrag = "always" }, StatusFail, "defrag = always"},
		{"thp_defrag", func(f *Facts) { f.Host.THPDefrag = "defer+madvise" }, StatusPass, ""},
		{"vm_swappiness", func(f *Facts) { f.Host.Sysctls["vm.swappiness"] = 10 }, StatusWarn, "vm.swappiness = 10"},
		{"vm_swappiness", func(f *Facts) { f.Host.Sysctls["vm.swappiness"] = 60 }, StatusFail, "vm.swappiness = 60"},
		{"vm_swappiness", func(f *Facts) { f.Host.Sysctls["vm.swappiness"] = 60; f.Host.SwapTotalBytes = 0 }, StatusPass, "no swap"},
		{"vm_swappiness", func(f *Facts) { delete(f.Host.Sysctls, "vm.swappiness") }, StatusUnknown, ""},
		{"vm_overcommit_memory", func(f *Facts) { f.Host.Sysctls["vm.overcommit_memory"] = 0 }, StatusFail, "= 0"},
		{"somaxconn", func(f *Facts) { f.Host.Sysctls["net.core.somaxconn"] = 128 }, StatusFail, "128, tcp-backlog 511"},
		{"somaxconn", func(f *Facts) { f.Config = nil }, StatusUnknown, "CONFIG refused"},
		{"tcp_max_syn_backlog", func(f *Facts) { f.Host.Sysctls["net.ipv4.tcp_max_syn_backlog"] = 256 }, StatusFail, ""},
		{"open_files_limit", func(f *Facts) { f.Process.OpenFilesLimit = 10031 }, StatusFail, "want >= 10032"},
		{"open_files_limit", func(f *Facts) { f.Process.OpenFilesLimit = 10032 }, StatusPass, ""},
		{"open_files_limit", func(f *Facts) { f.Process.OpenFilesLimit = math.MaxUint64 }, StatusPass, "unlimited"},
		{"open_files_limit", func(f *Facts) { f.Process = nil }, StatusUnknown, "not visible"},
		{"open_files_limit", func(f *Facts) { f.Config = nil; f.Info["maxclients"] = "100" }, StatusPass, "maxclients 100"},
		{"maxmemory", func(f *Facts) { f.Config["maxmemory"] = "0" }, StatusFail, "set at most 11.2 GiB"},
		{"maxmemory", func(f *Facts) { f.Config["maxmemory"] = "14000000000" }, StatusFail, "81%"},
		{"maxmemory", func(f *Facts) { f.Config = nil }, StatusPass, "8.0 GiB of 16.0 GiB"},
		{"redis_swapped", func(f *Facts) { f.Process.SwapBytes = 4096 }, StatusFail, "4.0 KiB"},
		{"redis_swapped", func(f *Facts) { f.Process = nil }, StatusUnknown, ""},
		{"fork_time", func(f *Facts) { f.Info["latest_fork_usec"] = "45000"; f.Info["used_memory_rss"] = "2000000000" }, StatusFail, "22.5 ms per GB"},
		{"fork_time", func(f *Facts) { f.Info["latest_fork_usec"] = "900"; f.Info["used_memory_rss"] = "7000000" }, StatusPass, "0.9 ms per GB"},
		{"fork_time", func(f *Facts) { f.Info["latest_fork_usec"] = "0" }, StatusUnknown, "no fork"},
		{"intrinsic_latency", func(f *Facts) { f.Intrinsic = 3 * time.Millisecond }, StatusFail, "3ms"},
		{"intrinsic_latency", func(f *Facts) { f.Intrinsic = time.Millisecond }, StatusPass, ""},
		{"intrinsic_latency", func(f *Facts) { f.HasIntrinsic = false }, StatusUnknown, ""},
		{"latency_monitor", func(f *Facts) { f.Config["latency-monitor-threshold"] = "0" }, StatusFail, "off"},
		{"appendfsync", func(f *Facts) { f.Config["appendfsync"] = "always" }, StatusFail, "always"},
		{"appendfsync", func(f *Facts) { f.Config["appendfsync"] = "always"; f.Info["aof_enabled"] = "0" }, StatusPass, "AOF off"},
		{"aof_rewrite_fsync", func(f *Facts) { f.Config["no-appendfsync-on-rewrite"] = "no" }, StatusFail, ""},
		{"aof_rewrite_fsync", func(f *Facts) { f.Config = nil }, StatusUnknown, "CONFIG refused"},
		{"cpu_governor", func(f *Facts) { f.Host.Governors = map[string]int{"powersave": 2, "performance": 2} }, StatusFail, "performance on 2 CPUs, powersave on 2 CPUs"},
		{"cpu_governor", func(f *Facts) { f.Host.Governors = nil }, StatusUnknown, "no cpufreq"},
		{"numa_binding", func(f *Facts) { f.Host.NUMANodes = 2; f.Process.NUMANodesAllowed = 2 }, StatusFail, "2 of 2"},
		{"numa_binding", func(f *Facts) { f.Host.NUMANodes = 2 }, StatusPass, "bound to 1 of 2"},
		{"numa_binding", func(f *Facts) { f.Host.NUMANodes = 2; f.Process = nil }, StatusUnknown, ""},
	}
	for _, tt := range tests {
		t.Run(tt.id+"/"+tt.want.String(), func(t *testing.T) {
			f := tunedFacts()
			tt.breakIt(&f)
			r := resultOf(t, f, tt.id)
			if r.Status != tt.want || !strings.Contains(r.Value, tt.value) {
				t.Errorf("%s = %v %q, want %v containing %q", tt.id, r.Status, r.Value, tt.want, tt.value)
			}
		})
	}
}

func TestChecksHaveWhyAndFix(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range Checks() {
		if seen[c.ID] {
			t.Errorf("duplicate check %s", c.ID)
		}
		seen[c.ID] = true
		if c.Why == "" || c.Fix == "" || c.eval == nil {
			t.Errorf("%s: missing why, fix or eval", c.ID)
		}
		switch c.Severity {
		case SeverityCritical, SeverityWarning, SeverityInfo:
		default:
			t.Errorf("%s: severity %q", c.ID, c.Severity)
		}
	}
}

// Each scope's checks are evaluated and exported apart: the Redis ones
// per target (redis_prober_check_*{target, node}), the host's once
// (redis_prober_host_check_*, no target or node label), every check in
// exactly one of them.
func TestEvaluateByScope(t *testing.T) {
	f := tunedFacts()
	seen := map[string]Scope{}
	for _, scope := range []Scope{ScopeHost, ScopeRedis} {
		for _, r := range Evaluate(&f, scope) {
			if r.Scope != scope {
				t.Errorf("Evaluate(%s) ran %s, a %s check", scope, r.ID, r.Scope)
			}
			if prev, dup := seen[r.ID]; dup {
				t.Errorf("%s evaluated in %s and %s", r.ID, prev, scope)
			}
			seen[r.ID] = scope
		}
	}
	for _, c := range Checks() {
		if seen[c.ID] != c.Scope {
			t.Errorf("%s (%s scope) evaluated in %q", c.ID, c.Scope, seen[c.ID])
		}
	}
	for _, id := range []string{"thp_enabled", "thp_defrag", "vm_swappiness", "vm_overcommit_memory", "intrinsic_latency", "cpu_governor"} {
		if seen[id] != ScopeHost {
			t.Errorf("%s is not a host check", id)
		}
	}
}

func TestCheckSeries(t *testing.T) {
	f := tunedFacts()
	f.Host.Sysctls["vm.swappiness"] = 5 // warn level
	f.Host.Governors = nil              // cpu_governor unknown
	f.Config = nil                      // latency_monitor and friends unknown
	f.Info["maxmemory"] = "0"           // maxmemory fails
	d := newCheckDescs()
	target := collectFunc{describe: d.describe, collect: func(ch chan<- prometheus.Metric) {
		sl := newSeriesLabels("t", "")
		d.emit(&sink{ch: ch}, &sl, Evaluate(&f, ScopeRedis))
	}}
	host := NewHostChecks(HostChecksConfig{Intrinsic: func() (time.Duration, bool) { return f.Intrinsic, true }})
	host.results, host.ran = Evaluate(&f, ScopeHost), true
	tests := []struct {
		name      string
		c         prometheus.Collector
		families  []string
		want      []string
		wantNot   []string
		wantCount int
	}{
		{"target", target, []string{"redis_prober_check_passed", "redis_prober_check_unknown"},
			[]string{
				`redis_prober_check_passed{check="maxmemory",node="",severity="warning",target="t"} 0`,
				`redis_prober_check_passed{check="redis_swapped",node="",severity="critical",target="t"} 1`,
				`redis_prober_check_unknown{check="latency_monitor",node="",target="t"} 1`,
			},
			[]string{`check="latency_monitor",node="",severity`, `check="vm_swappiness"`, `check="thp_enabled"`, `check="intrinsic_latency"`},
			len(Evaluate(&f, ScopeRedis))},
		{"host", host, []string{"redis_prober_host_check_passed", "redis_prober_host_check_unknown"},
			[]string{
				`redis_prober_host_check_passed{check="vm_swappiness",severity="critical"} 1`,
				`redis_prober_host_check_passed{check="vm_swappiness",severity="warning"} 0`,
				`redis_prober_host_check_passed{check="thp_enabled",severity="critical"} 1`,
				`redis_prober_host_check_unknown{check="cpu_governor"} 1`,
			},
			[]string{`check="cpu_governor",severity`, `redis_prober_host_check_unknown{check="vm_swappiness"`, `target=`, `check="maxmemory"`},
			len(Evaluate(&f, ScopeHost)) + 1}, // vm_swappiness Warns: two series
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := testutil.CollectAndFormat(tt.c, expfmt.TypeTextPlain, tt.families...)
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range tt.want {
				if !strings.Contains(string(got), line) {
					t.Errorf("missing %q in\n%s", line, got)
				}
			}
			for _, bad := range tt.wantNot {
				if strings.Contains(string(got), bad) {
					t.Errorf("%q in\n%s", bad, got)
				}
			}
			if n := testutil.CollectAndCount(tt.c, tt.families...); n != tt.wantCount {
				t.Errorf("%d series, want %d:\n%s", n, tt.wantCount, got)
			}
		})
	}
}

// collectFunc adapts functions to prometheus.Collector for tests.
type collectFunc struct {
	describe func(chan<- *prometheus.Desc)
	collect  func(chan<- prometheus.Metric)
}

func (c collectFunc) Describe(ch chan<- *prometheus.Desc) { c.describe(ch) }
func (c collectFunc) Collect(ch chan<- prometheus.Metric) { c.collect(ch) }

// The check list is built once and shared by every evaluation: a caller
// that changes its copy from Checks changes no one else's.
func TestChecksIsACopy(t *testing.T) {
	a := Checks()
	id := a[0].ID
	a[0].ID = "changed"
	if b := Checks(); b[0].ID != id {
		t.Errorf("Checks()[0].ID = %q after a caller changed its copy, want %q", b[0].ID, id)
	}
	if r := Evaluate(&Facts{}, a[0].Scope); len(r) == 0 || r[0].ID != id {
		t.Errorf("Evaluate saw a caller's change to its copy of the list")
	}
}

// TestConfigParamsAreNotSecret: the collectors read no secret (checks.go:
// their values go to the status page).
func TestConfigParamsAreNotSecret(t *testing.T) {
	for _, p := range configParams() {
		if redisinfo.SecretParam(p) {
			t.Errorf("collector reads secret CONFIG parameter %s", p)
		}
	}
}
