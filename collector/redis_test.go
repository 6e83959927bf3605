package collector

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/internal/host"
	"github.com/redis-prober/redis-prober/internal/redisinfo"
	"github.com/redis-prober/redis-prober/internal/redistest"
)

func forkCount(t *testing.T, tgt *Target) uint64 {
	t.Helper()
	return forkHistogram(t, tgt).GetSampleCount()
}

func forkHistogram(t *testing.T, tgt *Target) *dto.Histogram {
	t.Helper()
	var m dto.Metric
	if err := tgt.fork.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram()
}

// waitInfo polls INFO until cond holds, bounded in time.
func waitInfo(t *testing.T, c *redis.Client, cond func(redisinfo.Info) bool) redisinfo.Info {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		s, err := c.Info(t.Context()).Result()
		if err != nil {
			t.Fatal(err)
		}
		info, err := redisinfo.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		if cond(info) {
			return info
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("INFO condition not met within 15s")
	return nil
}

func TestBGSAVEIncrementsForkHistogramByOne(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	tgt := NewTarget(TargetConfig{Name: "t", Paths: host.DefaultPaths(), Commands: []string{"ping"}}, c)
	tgt.Refresh(t.Context())
	if err := tgt.Snapshot().Errors["info"]; err != nil {
		t.Fatal(err)
	}
	before := forkCount(t, tgt)
	if err := c.Set(t.Context(), "redis-prober:test:k", "v", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.BgSave(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	info := waitInfo(t, c, func(i redisinfo.Info) bool {
		n, _ := i.Int("total_forks")
		return i["rdb_bgsave_in_progress"] == "0" && n >= 1
	})
	tgt.Refresh(t.Context())
	if got := forkCount(t, tgt) - before; got != 1 {
		t.Errorf("fork histogram grew by %d, want 1", got)
	}
	// Native only: the fork is in a native bucket, and there is no
	// classic bucket (each was a series a target).
	h := forkHistogram(t, tgt)
	if len(h.GetBucket()) != 0 {
		t.Errorf("redis_prober_fork_seconds has %d classic buckets, want none (native only)", len(h.GetBucket()))
	}
	var native int64
	for _, d := range h.GetPositiveDelta() {
		native += d // the deltas add up to the last bucket's count
	}
	if len(h.GetPositiveSpan()) == 0 || native+int64(h.GetZeroCount()) < 1 {
		t.Errorf("redis_prober_fork_seconds has no native bucket for the fork: spans %v deltas %v", h.GetPositiveSpan(), h.GetPositiveDelta())
	}
	usec, _ := info.Float("latest_fork_usec")
	gauge := testutil.ToFloat64(gaugeOnly{tgt, "redis_prober_fork_last_seconds"})
	if gauge != usec/1e6 || usec <= 0 {
		t.Errorf("redis_prober_fork_last_seconds = %v, INFO latest_fork_usec = %v", gauge, usec)
	}
	// Another refresh without a fork adds nothing.
	tgt.Refresh(t.Context())
	if got := forkCount(t, tgt) - before; got != 1 {
		t.Errorf("after a quiet refresh the fork histogram grew by %d, want 1", got)
	}
	var m dto.Metric
	_ = tgt.fork.Write(&m)
	if m.GetHistogram().GetSampleSum() != usec/1e6 {
		t.Errorf("fork histogram sum %v, want %v", m.GetHistogram().GetSampleSum(), usec/1e6)
	}
}

// gaugeOnly narrows a collector to one metric family for ToFloat64.
type gaugeOnly struct {
	c    prometheus.Collector
	name string
}

func (g gaugeOnly) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(g, ch) }
func (g gaugeOnly) Collect(ch chan<- prometheus.Metric) {
	all := make(chan prometheus.Metric)
	go func() {
		g.c.Collect(all)
		close(all)
	}()
	for m := range all {
		if strings.Contains(m.Desc().String(), `fqName: "`+g.name+`"`) {
			ch <- m
		}
	}
}

func TestACLWithoutConfigGivesUnknownChecks(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client()
	if err := admin.Do(t.Context(), "acl", "setuser", "probe", "on", ">probe-secret", "~*", "&*", "+@all", "-config").Err(); err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "probe", Password: "probe-secret", Protocol: 2, DisableIdentity: true})
	defer c.Close()
	if err := c.ConfigGet(t.Context(), "maxmemory").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Fatalf("CONFIG GET as probe: %v, want NOPERM", err)
	}
	tgt := NewTarget(TargetConfig{Name: "acl", Paths: host.DefaultPaths(), Commands: []string{"ping"}}, c)
	tgt.Refresh(t.Context())
	s := tgt.Snapshot()
	if err := s.Errors["checks"]; !errors.Is(err, ErrNoData) {
		t.Errorf("checks error %v, want ErrNoData", err)
	}
	if err := s.Errors["info"]; err != nil {
		t.Errorf("info: %v", err)
	}
	// (appendfsync and aof_rewrite_fsync pass on INFO alone: AOF is off.)
	needsConfig := map[string]bool{"somaxconn": true, "tcp_max_syn_backlog": true, "latency_monitor": true}
	for _, r := range s.Checks {
		if needsConfig[r.ID] && r.Status != StatusUnknown {
			t.Errorf("%s: %v (%s), want unknown", r.ID, r.Status, r.Value)
		}
	}
	out, err := testutil.CollectAndFormat(tgt, expfmt.TypeTextPlain, "redis_prober_check_passed", "redis_prober_check_unknown")
	if err != nil {
		t.Fatal(err)
	}
	for id := range needsConfig {
		if !bytes.Contains(out, []byte(`redis_prober_check_unknown{check="`+id+`",node="",target="acl"} 1`)) {
			t.Errorf("%s not reported unknown:\n%s", id, out)
		}
		if bytes.Contains(out, []byte(`check_passed{check="`+id+`"`)) {
			t.Errorf("%s reported as passed/failed without its input", id)
		}
	}
	if bytes.Contains(out, []byte("probe-secret")) {
		t.Error("the password leaked into the metrics")
	}
}

func TestRealRedisSeries(t *testing.T) {
	srv := redistest.Start(t, "latency-monitor-threshold 1")
	c := srv.Client()
	for range 50 {
		if err := c.Ping(t.Context()).Err(); err != nil {
			t.Fatal(err)
		}
	}
	hostChecks := NewHostChecks(HostChecksConfig{Paths: host.DefaultPaths(),
		Intrinsic: func() (time.Duration, bool) { return 100 * time.Microsecond, true }})
	tgt := NewTarget(TargetConfig{Name: srv.Addr(), Paths: host.DefaultPaths(), Commands: []string{"ping", "get"},
		HostChecks: hostChecks}, c)
	tgt.Refresh(t.Context())
	// The target's refresh evaluated the host checks too.
	if _, ok := hostChecks.Results(); !ok {
		t.Error("the target's refresh did not refresh the host checks")
	}
	s := tgt.Snapshot()
	for name, err := range s.Errors {
		if err != nil && name != "checks" { // checks may lack host files in a sandbox
			t.Errorf("%s: %v", name, err)
		}
	}
	// The server runs here, so its process must be found and be it.
	if s.Process == nil || s.Process.PID != srv.PID() {
		t.Errorf("process: %+v, want pid %d", s.Process, srv.PID())
	}
	major, _, _ := s.Info.Version()
	if major >= 7 {
		var ping *CommandHistogram
		for i := range s.Histograms {
			if s.Histograms[i].Command == "ping" {
				ping = &s.Histograms[i]
			}
		}
		if ping == nil || ping.Calls < 50 || !ping.SumExact {
			t.Errorf("LATENCY HISTOGRAM ping: %+v", ping)
		}
	}
	// Valkey 9 forks for an atomic slot migration, and says when it does:
	// a kind of its own, absent on servers that do not.
	v := redistest.BinaryVersion(t)
	out, err := testutil.CollectAndFormat(tgt, expfmt.TypeTextPlain, "redis_prober_persistence_in_progress")
	if err != nil {
		t.Fatal(err)
	}
	slotFork := bytes.Contains(out, []byte(`kind="slot_migration_fork"`))
	if want := v.Flavor == "valkey" && v.AtLeast(9, 0); slotFork != want {
		t.Errorf("%s: a slot_migration_fork series %v, want %v:\n%s", v, slotFork, want, out)
	}
	// The gauges equal INFO of the same refresh.
	used, _ := s.Info.Float("used_memory")
	if got := testutil.ToFloat64(gaugeOnly{tgt, "redis_prober_memory_used_bytes"}); got != used {
		t.Errorf("used bytes %v, INFO %v", got, used)
	}
	lintProblems(t, tgt)
	promtoolCheck(t, tgt, NewHost(host.DefaultPaths(), AllEnabled(), nil), NewHost(hostPaths("untuned"), AllEnabled(), nil), hostChecks)
}

// promtoolCheck pipes the text exposition through `promtool check metrics`.
// promtool is required under CI=true and optional elsewhere.
func promtoolCheck(t *testing.T, cs ...prometheus.Collector) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool not on PATH; CI must install it")
		}
		t.Log("SKIPPING promtool check: promtool not on PATH")
		return
	}
	var text bytes.Buffer
	for i, c := range cs {
		reg := prometheus.NewPedanticRegistry()
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatalf("collector %d: %v", i, err)
		}
		var one bytes.Buffer
		enc := expfmt.NewEncoder(&one, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, mf := range mfs {
			if err := enc.Encode(mf); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		cmd := exec.CommandContext(ctx, bin, "check", "metrics")
		cmd.Stdin = &one
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil || len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("promtool check metrics (collector %d): %v\n%s", i, err, out)
		}
		text.Write(one.Bytes())
	}
}

func TestRefreshWhenRedisIsDown(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	tgt := NewTarget(TargetConfig{Name: "down", Paths: hostPaths("tuned"), Commands: []string{"ping"}}, c)
	tgt.Refresh(t.Context())
	srv.Kill()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	tgt.Refresh(ctx)
	s := tgt.Snapshot()
	for _, name := range []string{"info", "latency", "process", "checks"} {
		if s.Errors[name] == nil {
			t.Errorf("%s: no error with Redis down", name)
		}
	}
	if s.Info != nil {
		t.Error("stale INFO kept after a failed refresh")
	}
	// Host checks still work; Redis ones are unknown, not failed (on a
	// single-node host NUMA binding passes whatever Redis does).
	for _, r := range s.Checks {
		if r.Scope == ScopeRedis && r.Status != StatusUnknown && r.ID != "numa_binding" {
			t.Errorf("%s: %v with Redis down, want unknown", r.ID, r.Status)
		}
	}
	out, err := testutil.CollectAndFormat(tgt, expfmt.TypeTextPlain, "redis_prober_collector_success", "redis_prober_memory_used_bytes")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte(`redis_prober_collector_success{collector="info",node="",target="down"} 0`)) || bytes.Contains(out, []byte("memory_used_bytes{")) {
		t.Errorf("series with Redis down:\n%s", out)
	}
}

// errorStats is INFO errorstats of c: the error replies the server sent.
func errorStats(t *testing.T, c *redis.Client) string {
	t.Helper()
	s, err := c.Info(t.Context(), "errorstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRealCommandlogAndLatencyTotals runs on whatever server the harness
// starts (REDIS_SERVER_BIN: Redis 7.0, 8.0, Valkey 8.0, 8.1, 9.1 in the
// matrix). On Valkey 8.1+ the slow log's new entries are observed once
// each, the lengths equal COMMANDLOG LEN, and LATENCY LATEST carries
// totals; elsewhere COMMANDLOG is never sent (the server's errorstats do
// not move) and no commandlog or total series exist.
func TestRealCommandlogAndLatencyTotals(t *testing.T) {
	v := redistest.BinaryVersion(t)
	valkey81 := v.Flavor == "valkey" && v.AtLeast(8, 1)
	srv := redistest.Start(t, "latency-monitor-threshold 1", "enable-debug-command yes")
	c := srv.Client()
	if valkey81 {
		if err := c.ConfigSet(t.Context(), "commandlog-execution-slower-than", "5000").Err(); err != nil {
			t.Fatal(err)
		}
	}
	before := errorStats(t, c)
	tgt := NewTarget(TargetConfig{Name: "live", Paths: host.DefaultPaths(), Commands: []string{"ping"}}, c)
	tgt.Refresh(t.Context())
	for _, d := range []string{"0.01", "0.02"} {
		if err := c.Do(t.Context(), "debug", "sleep", d).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// A slow command whose arguments hold a "secret": never exported.
	if err := c.Do(t.Context(), "eval", "local n = 0 for i = 1, 2000000 do n = n + i end return 's3cret'", 0).Err(); err != nil {
		t.Fatal(err)
	}
	tgt.Refresh(t.Context())
	s := tgt.Snapshot()
	for name, err := range s.Errors {
		if err != nil && name != "checks" && name != "process" {
			t.Errorf("%s: %v", name, err)
		}
	}
	names := goldenNames(t, tgt)
	out, err := testutil.CollectAndFormat(tgt, expfmt.TypeTextPlain, names...)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte("s3cret")) || bytes.Contains(out, []byte("redis.call")) {
		t.Errorf("command arguments exported:\n%s", out)
	}
	var command *LatencyEvent
	for i := range s.Events {
		if s.Events[i].Event == "command" {
			command = &s.Events[i]
		}
	}
	if command == nil {
		t.Fatalf("no LATENCY LATEST command event after DEBUG SLEEP: %+v", s.Events)
	}
	_, ran := s.Errors["commandlog"]
	if !valkey81 {
		if ran || s.Commandlog != nil || command.HasTotals || bytes.Contains(out, []byte("commandlog")) || bytes.Contains(out, []byte("spikes_total")) {
			t.Errorf("%s: commandlog ran %v, totals %v:\n%s", v, ran, command.HasTotals, out)
		}
		if after := errorStats(t, c); after != before {
			t.Errorf("%s: the collectors made the server count errors:\n%s\nthen\n%s", v, before, after)
		}
		return
	}
	if !ran || s.Commandlog == nil || !command.HasTotals || command.Count < 2 || command.SumMillis < 30 {
		t.Fatalf("%s: commandlog ran %v (%v), command event %+v", v, ran, s.Commandlog, command)
	}
	n, err := c.Do(t.Context(), "commandlog", "len", "slow").Int64()
	if err != nil {
		t.Fatal(err)
	}
	if s.Commandlog[0] != n {
		t.Errorf("slow length %d, COMMANDLOG LEN %d", s.Commandlog[0], n)
	}
	var m dto.Metric
	if err := tgt.slow.Write(&m); err != nil {
		t.Fatal(err)
	}
	// The two DEBUG SLEEPs since the baseline, and the EVAL when its loop
	// took over 5 ms here.
	h := m.GetHistogram()
	if h.GetSampleCount() < 2 || h.GetSampleCount() > 3 || h.GetSampleSum() < 0.03 {
		t.Errorf("slow histogram count %d sum %v, want 2 or 3 entries of at least 30 ms in all", h.GetSampleCount(), h.GetSampleSum())
	}
	seen := h.GetSampleCount()
	tgt.Refresh(t.Context())
	_ = tgt.slow.Write(&m)
	if got := m.GetHistogram().GetSampleCount(); got != seen {
		t.Errorf("after a quiet refresh the slow histogram has %d entries, want %d", got, seen)
	}
	lintProblems(t, tgt)
	promtoolCheck(t, tgt)
}
