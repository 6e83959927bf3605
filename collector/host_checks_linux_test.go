package collector

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/redis-prober/redis-prober/internal/host"
	"github.com/redis-prober/redis-prober/internal/redistest"
)

// hostCheckIDs are the checks of ScopeHost, in list order.
func hostCheckIDs() []string {
	var ids []string
	for _, c := range Checks() {
		if c.Scope == ScopeHost {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

// countingIntrinsic is an intrinsic reader that counts its calls.
func countingIntrinsic(d time.Duration, calls *atomic.Int32) func() (time.Duration, bool) {
	return func() (time.Duration, bool) {
		calls.Add(1)
		return d, true
	}
}

func TestGoldenHostChecks(t *testing.T) {
	for _, host := range []string{"untuned", "tuned", "container"} {
		t.Run(host, func(t *testing.T) {
			h := NewHostChecks(HostChecksConfig{Paths: hostPaths(host),
				Intrinsic: func() (time.Duration, bool) { return 250 * time.Microsecond, true }})
			if n := testutil.CollectAndCount(h); n != 0 {
				t.Errorf("%d series before the first refresh, want none", n)
			}
			h.Refresh(time.Now())
			checkGolden(t, h, "hostchecks-"+host)
		})
	}
}

// The host checks are evaluated once a host read, whichever target's
// refresh asks and however many do, and again once the read expires.
func TestHostChecksOncePerHostRead(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/hosts/tuned")); err != nil {
		t.Fatal(err)
	}
	paths := host.Paths{ProcFS: filepath.Join(dir, "proc"), SysFS: filepath.Join(dir, "sys")}
	thp := filepath.Join(dir, "sys/kernel/mm/transparent_hugepage/enabled")
	tests := []struct {
		name  string
		facts *HostFactsCache
		// calls are the evaluations (intrinsic reads) so far after the
		// refreshes at 0 and 100 ms (three targets each) and at 1.5 s.
		calls []int32
	}{
		{"shared host read", NewHostFactsCache(time.Second), []int32{1, 1, 2}},
		{"no cache: every refresh", nil, []int32{3, 6, 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(thp, []byte("always [madvise] never\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			var calls atomic.Int32
			h := NewHostChecks(HostChecksConfig{Paths: paths, Facts: tt.facts, Intrinsic: countingIntrinsic(200*time.Microsecond, &calls)})
			t0 := time.Now()
			for range 3 {
				h.Refresh(t0)
			}
			if got := calls.Load(); got != tt.calls[0] {
				t.Errorf("after the first refreshes: %d evaluations, want %d", got, tt.calls[0])
			}
			if failing, ok := h.Failing(); !ok || len(failing) != 0 {
				t.Errorf("tuned host: failing %v (evaluated %v), want none", failing, ok)
			}
			if err := os.WriteFile(thp, []byte("[always] madvise never\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			for range 3 {
				h.Refresh(t0.Add(100 * time.Millisecond))
			}
			if got := calls.Load(); got != tt.calls[1] {
				t.Errorf("within the host read: %d evaluations, want %d", got, tt.calls[1])
			}
			h.Refresh(t0.Add(1500 * time.Millisecond))
			if got := calls.Load(); got != tt.calls[2] {
				t.Errorf("after the host read expired: %d evaluations, want %d", got, tt.calls[2])
			}
			failing, _ := h.Failing()
			want := []FailedCheck{{ID: "thp_enabled", Severity: SeverityCritical, Value: "enabled = always"}}
			if !slices.Equal(failing, want) {
				t.Errorf("failing %v, want %v", failing, want)
			}
		})
	}
	var none *HostChecks
	none.Refresh(time.Now()) // a nil HostChecks (checks off) does nothing
	if _, ok := none.Failing(); ok {
		t.Error("a nil HostChecks says it was evaluated")
	}
}

// Two targets of one process on a real server: each exports its Redis
// checks under its target label and none of the host's; the host checks
// are one set, without target or node, evaluated once for both.
func TestHostChecksOnceForTargets(t *testing.T) {
	srv := redistest.Start(t)
	var calls atomic.Int32
	facts := NewHostFactsCache(time.Minute)
	h := NewHostChecks(HostChecksConfig{Paths: hostPaths("untuned"), Facts: facts, Intrinsic: countingIntrinsic(3*time.Millisecond, &calls)})
	set := NewTargets()
	for _, name := range []string{"a", "b"} {
		tgt := set.NewTarget(TargetConfig{Name: name, Paths: hostPaths("untuned"), Commands: []string{"ping"}, Enabled: AllEnabled(),
			HostFacts: facts, HostChecks: h}, srv.Client())
		tgt.Refresh(t.Context())
		if _, err := set.Add(tgt); err != nil {
			t.Fatal(err)
		}
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("host checks evaluated %d times for two targets, want 1", got)
	}
	targets, err := testutil.CollectAndFormat(set, expfmt.TypeTextPlain, "redis_prober_check_passed", "redis_prober_check_unknown")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range hostCheckIDs() {
		if bytes.Contains(targets, []byte(`check="`+id+`"`)) {
			t.Errorf("host check %s is exported per target:\n%s", id, targets)
		}
	}
	redisChecks := len(Checks()) - len(hostCheckIDs())
	if n := bytes.Count(targets, []byte(`target="a"`)); n < redisChecks {
		t.Errorf("target a has %d check series, want at least one for each of the %d Redis checks:\n%s", n, redisChecks, targets)
	}
	host, err := testutil.CollectAndFormat(h, expfmt.TypeTextPlain, "redis_prober_host_check_passed", "redis_prober_host_check_unknown")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range hostCheckIDs() {
		if !bytes.Contains(host, []byte(`{check="`+id+`"`)) {
			t.Errorf("host check %s missing:\n%s", id, host)
		}
	}
	for _, want := range []string{
		// The untuned fixture: THP always, overcommit 0, powersave; the
		// 3 ms gap fails intrinsic_latency.
		`redis_prober_host_check_passed{check="thp_enabled",severity="critical"} 0`,
		`redis_prober_host_check_passed{check="intrinsic_latency",severity="warning"} 0`,
	} {
		if !bytes.Contains(host, []byte(want)) {
			t.Errorf("missing %s in\n%s", want, host)
		}
	}
	if bytes.Contains(host, []byte("target=")) || bytes.Contains(host, []byte("node=")) {
		t.Errorf("host checks with a target or node label:\n%s", host)
	}
}
