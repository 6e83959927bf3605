package explain

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/redisinfo"
)

// readFixture is the text of testdata/name.
func readFixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func readInfo(t *testing.T, name string) redisinfo.Info {
	t.Helper()
	info, err := redisinfo.Parse(readFixture(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// TestInfoEvidenceBGSAVE: INFO of a Redis 7.0 before, during and after a
// BGSAVE of 500,000 keys. The fork is timed by latest_fork_usec between
// the reads that saw total_forks move; the child is a state of both
// intervals it ran in.
func TestInfoEvidenceBGSAVE(t *testing.T) {
	t.Parallel()
	before := snapOf(readInfo(t, "info-7.0-before-bgsave.txt"), 1000*ms)
	during := snapOf(readInfo(t, "info-7.0-during-bgsave.txt"), 2000*ms)
	after := snapOf(readInfo(t, "info-7.0-after-bgsave.txt"), 3000*ms)

	got := infoEvidence(before, during)
	want := []Evidence{
		{Cause: Fork, From: 1000 * ms, To: 2000 * ms, Dur: 5480 * time.Microsecond},
		{Cause: Fork, From: 1000 * ms, To: 2000 * ms},
	}
	if !sameEvidence(got, want) {
		t.Errorf("before → during: %+v, want %+v", got, want)
	}
	got = infoEvidence(during, after)
	want = []Evidence{{Cause: Fork, From: 2000 * ms, To: 3000 * ms}}
	if !sameEvidence(got, want) {
		t.Errorf("during → after: %+v, want %+v", got, want)
	}
	if got := infoEvidence(after, after); len(got) != 0 {
		t.Errorf("the same read twice: %+v, want nothing", got)
	}
	restarted := after
	restarted.runID, restarted.at = "another", 4000*ms
	restarted.totalForks = 7
	if got := infoEvidence(after, restarted); len(got) != 0 {
		t.Errorf("across a restart: %+v, want nothing", got)
	}
}

// TestInfoEvidenceCounters: the counters of eviction, expiry, the AOF and
// defrag, and a server without total_forks (before Redis 6.2...).
func TestInfoEvidenceCounters(t *testing.T) {
	t.Parallel()
	prev := infoSnap{at: 1000 * ms, runID: "r", latestForkUsec: 100, evicted: 5, expireCPUMillis: 10, aofDelayedFsync: 1, defragHits: 3}
	cur := prev
	cur.at = 2000 * ms
	if got := infoEvidence(prev, cur); len(got) != 0 {
		t.Errorf("nothing moved: %+v", got)
	}
	cur.latestForkUsec, cur.evicted, cur.expireCPUMillis, cur.aofDelayedFsync, cur.defragHits = 900, 6, 14, 2, 4
	got := infoEvidence(prev, cur)
	span := func(c Cause, d time.Duration) Evidence {
		return Evidence{Cause: c, From: 1000 * ms, To: 2000 * ms, Dur: d}
	}
	want := []Evidence{span(Fork, 900*time.Microsecond), span(Persistence, 0), span(Eviction, 0),
		{Cause: Expiry, From: 1000 * ms, To: 2000 * ms, Dur: 4 * time.Millisecond, Spread: true}, span(Defrag, 0)}
	if !sameEvidence(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func sameEvidence(a, b []Evidence) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestOffCPUEvidence: Valkey 9.1's main thread active but not on a CPU
// between two reads is a run delay over the interval (a remote server's
// redis_cpu); a server without the field, a restart or less than the
// floor gives none.
func TestOffCPUEvidence(t *testing.T) {
	t.Parallel()
	base := readInfo(t, "../../internal/redisinfo/testdata/info/valkey-9.1.txt")
	at := func(active, user, sys string) redisinfo.Info {
		info := redisinfo.Info{}
		for k, v := range base {
			info[k] = v
		}
		info["used_active_time_main_thread"], info["used_cpu_user_main_thread"], info["used_cpu_sys_main_thread"] = active, user, sys
		return info
	}
	prev := snapOf(at("10.000000", "6.000000", "2.000000"), 1000*ms)
	for _, tc := range []struct {
		name string
		cur  redisinfo.Info
		want []Evidence
	}{
		{"300 ms active, 100 ms on a CPU", at("10.300000", "6.080000", "2.020000"),
			[]Evidence{{Cause: RedisCPU, From: 1000 * ms, To: 2000 * ms, Dur: 200 * time.Millisecond, Spread: true}}},
		{"on a CPU all the time it was active", at("10.300000", "6.250000", "2.050000"), nil},
		{"under the floor", at("10.100000", "6.080000", "2.019900"), nil},
		{"a server without the field", readInfo(t, "info-7.0-before-bgsave.txt"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := offCPUEvidence(prev, snapOf(tc.cur, 2000*ms)); !sameEvidence(got, tc.want) {
				t.Errorf("%+v, want %+v", got, tc.want)
			}
		})
	}
	restarted := at("0.500000", "0.050000", "0.010000")
	restarted["run_id"] = "another"
	if got := offCPUEvidence(prev, snapOf(restarted, 2000*ms)); got != nil {
		t.Errorf("across a restart: %+v", got)
	}
}

func TestParseSlowlog(t *testing.T) {
	t.Parallel()
	reply := []any{
		[]any{int64(7), int64(1796313063), int64(16247), []any{"bgsave"}, "127.0.0.1:58424", ""},
		[]any{int64(6), int64(1796313060), int64(300123), []any{"debug", "sleep", "0.3"}},
	}
	got, err := parseSlowlog(reply)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != (slowEntry{7, 1796313063, 16247, true}) || got[1].micros != 300123 || got[1].forks {
		t.Fatalf("got %+v", got)
	}
	if ev := slowEvidence(got[0], 0); ev.Cause != Fork {
		t.Errorf("BGSAVE's entry is %v, want fork: its time is the fork's", ev.Cause)
	}
	ev := slowEvidence(got[1], int64(2*time.Second)) // the server's clock is 2 s ahead
	end := (1796313060 - 2) * int64(time.Second)
	if ev.Cause != SlowCommand || ev.Dur != 300123*time.Microsecond || ev.To != end+int64(time.Second) ||
		ev.From != end-int64(300123*time.Microsecond) {
		t.Errorf("evidence %+v", ev)
	}
	for _, bad := range []any{
		"x", []any{"x"}, []any{[]any{int64(1), int64(2)}}, []any{[]any{int64(1), "2", int64(3)}},
		[]any{[]any{int64(1), int64(2), int64(-3)}}, []any{[]any{int64(1), int64(2), int64(maxEntryMicros + 1)}},
	} {
		if _, err := parseSlowlog(bad); err == nil {
			t.Errorf("parseSlowlog(%v) took it", bad)
		}
	}
}

func TestParseLatency(t *testing.T) {
	t.Parallel()
	latest, err := parseLatencyLatest([]any{
		[]any{"fork", int64(100), int64(15), int64(40)},
		[]any{"command", int64(101), int64(300), int64(300), int64(900), int64(3)}, // Valkey 8.1's sum and count
	})
	if err != nil || len(latest) != 2 || latest[1] != (latencySpike{"command", 101, 300, 300}) {
		t.Fatalf("latest %+v, %v", latest, err)
	}
	hist, err := parseLatencyHistory("expire-cycle", []any{[]any{int64(98), int64(30)}, []any{int64(100), int64(26)}})
	if err != nil || len(hist) != 2 || hist[1] != (latencySpike{event: "expire-cycle", unix: 100, ms: 26}) {
		t.Fatalf("history %+v, %v", hist, err)
	}
	ev := spikeEvidence(hist[1], 0)
	if ev.Cause != Expiry || ev.Dur != 26*time.Millisecond || ev.To != 101*int64(time.Second) {
		t.Errorf("evidence %+v", ev)
	}
	for _, bad := range []any{"x", []any{[]any{"fork", int64(1), int64(2)}}, []any{[]any{int64(1), int64(1), int64(2), int64(3)}}} {
		if _, err := parseLatencyLatest(bad); err == nil {
			t.Errorf("parseLatencyLatest(%v) took it", bad)
		}
	}
	if _, err := parseLatencyHistory("x", []any{[]any{int64(1)}}); err == nil {
		t.Error("parseLatencyHistory took a short pair")
	}
}

// TestIOOffCPUEvidence: a Valkey 9.1 with io-threads 4 (three io threads,
// INFO captured under load): the io threads' active time less the CPU of
// the threads other than the main one, a thread's mean, is a run delay
// over the interval; their spinning CPU time hides it (a lower bound), and
// a server without io threads, with a different count or restarted gives
// none.
func TestIOOffCPUEvidence(t *testing.T) {
	t.Parallel()
	base := readInfo(t, "../../internal/redisinfo/testdata/info/valkey-9.1-io-threads-4.txt")
	if s := snapOf(base, 0); s.ioThreads != 3 || s.ioActiveNs != 317290000 || s.otherCPUNs != 1110538000 {
		t.Fatalf("fixture read as %d io threads, %d ns active, %d ns other CPU", s.ioThreads, s.ioActiveNs, s.otherCPUNs)
	}
	at := func(kv ...string) redisinfo.Info {
		info := redisinfo.Info{}
		for k, v := range base {
			info[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == "" {
				delete(info, kv[i])
			} else {
				info[kv[i]] = kv[i+1]
			}
		}
		return info
	}
	// 10 s of process CPU, 4 s of it the main thread's: 6 s for the others.
	prev := snapOf(at("used_cpu_user", "9.000000", "used_cpu_sys", "1.000000",
		"used_cpu_user_main_thread", "3.000000", "used_cpu_sys_main_thread", "1.000000",
		"used_active_time_io_thread_1", "2.000000", "used_active_time_io_thread_2", "2.000000",
		"used_active_time_io_thread_3", "2.000000"), 1000*ms)
	io := func(user, a1, a2, a3 string) redisinfo.Info {
		return at("used_cpu_user", user, "used_cpu_sys", "1.000000",
			"used_cpu_user_main_thread", "3.000000", "used_cpu_sys_main_thread", "1.000000",
			"used_active_time_io_thread_1", a1, "used_active_time_io_thread_2", a2, "used_active_time_io_thread_3", a3)
	}
	span := func(d time.Duration) []Evidence {
		return []Evidence{{Cause: RedisCPU, From: 1000 * ms, To: 2000 * ms, Dur: d, Spread: true}}
	}
	for _, tc := range []struct {
		name string
		cur  redisinfo.Info
		want []Evidence
	}{
		// 0.9 s active in all, 0.3 s of CPU: 0.6 s off a CPU, 0.2 s a thread.
		{"active off a CPU", io("9.300000", "2.300000", "2.300000", "2.300000"), span(200 * time.Millisecond)},
		{"one thread only", io("9.000000", "2.900000", "2.000000", "2.000000"), span(300 * time.Millisecond)},
		{"spinning: more CPU than active", io("10.000000", "2.300000", "2.300000", "2.300000"), nil},
		{"under the floor", io("9.299500", "2.100000", "2.100000", "2.100000"), nil},
		{"no more than the interval", io("9.000000", "5.500000", "5.500000", "5.500000"), span(1000 * time.Millisecond)},
		{"a thread fewer", at("used_active_time_io_thread_3", "", "used_active_time_io_thread_1", "9.000000"), nil},
		{"the main thread's fields only (io-threads 1)", readInfo(t, "../../internal/redisinfo/testdata/info/valkey-9.1.txt"), nil},
		{"Redis 7.0", readInfo(t, "info-7.0-before-bgsave.txt"), nil},
		{"garbage in a thread's field", io("9.300000", "2.300000", "x", "2.300000"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ioOffCPUEvidence(prev, snapOf(tc.cur, 2000*ms)); !sameEvidence(got, tc.want) {
				t.Errorf("%+v, want %+v", got, tc.want)
			}
		})
	}
	restarted := io("9.300000", "2.300000", "2.300000", "2.300000")
	restarted["run_id"] = "another"
	if got := ioOffCPUEvidence(prev, snapOf(restarted, 2000*ms)); got != nil {
		t.Errorf("across a restart: %+v", got)
	}
}

// TestInfoFieldsAreAllExplainReads: what Tick reads of a reply parsed with
// infoField alone is what it reads of the whole reply, on every server's
// fixture (a field missing from infoField would read as absent), and on
// each with every number made 1 (a flag or counter at 0 reads as absent
// would too).
func TestInfoFieldsAreAllExplainReads(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../internal/redisinfo/testdata/info/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob("testdata/info-*.txt")
	files = append(files, more...)
	if len(files) < 8 {
		t.Fatalf("%d INFO fixtures, want the servers' and explain's", len(files))
	}
	ones := regexp.MustCompile(`(?m)^([a-z0-9_]+):[0-9.]+(\r?)$`)
	var texts []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, string(b), ones.ReplaceAllString(string(b), "${1}:1${2}"))
	}
	for i, text := range texts {
		f := files[i/2]
		if i%2 == 1 {
			f += " (every number 1)"
		}
		whole, err := redisinfo.Parse(text)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		some, err := redisinfo.ParseKeys(text, infoField)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if len(some) >= len(whole) {
			t.Errorf("%s: kept %d of %d fields: the filter keeps everything", f, len(some), len(whole))
		}
		for name, read := range map[string]func(redisinfo.Info) any{
			"snapOf":              func(i redisinfo.Info) any { return snapOf(i, 1) },
			"serverMicros":        func(i redisinfo.Info) any { return serverMicros(i) },
			"CommandlogSupported": func(i redisinfo.Info) any { return redisinfo.CommandlogSupported(i) },
			"IdentityFromInfo":    func(i redisinfo.Info) any { return redisinfo.IdentityFromInfo(i) },
			"parseKeySizes":       func(i redisinfo.Info) any { return parseKeySizes(i) },
		} {
			if a, b := read(whole), read(some); !reflect.DeepEqual(a, b) {
				t.Errorf("%s: %s of the whole reply %+v, of the fields kept %+v", filepath.Base(f), name, a, b)
			}
		}
	}
}
