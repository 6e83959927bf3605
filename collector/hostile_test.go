package collector

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/redis-prober/redis-prober/internal/redisinfo"
)

// Hostile or broken servers (issue 11): what a Redis-side collector turns
// into label values is sanitised, its dynamic series are capped per
// target, and absurd INFO numbers are ignored. These tests go through the
// public Target (NewTarget, Refresh, Collect) so they show the fault on the
// code before the fix: a panic in Collect, unbounded series, a negative
// fork _sum.

// gatherTarget registers tgt alone on a pedantic registry and gathers it;
// any error (an invalid label value, a duplicate series) fails the test.
func gatherTarget(t *testing.T, tgt *Target) []*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(tgt); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	return mfs
}

// seriesOf counts the series of the family name, and all of them.
func seriesOf(mfs []*dto.MetricFamily, name string) (n, all int) {
	for _, mf := range mfs {
		all += len(mf.GetMetric())
		if mf.GetName() == name {
			n += len(mf.GetMetric())
		}
	}
	return n, all
}

// droppedSeries reads redis_prober_collector_dropped_series_total{collector}.
func droppedSeries(t *testing.T, mfs []*dto.MetricFamily, collector string) float64 {
	t.Helper()
	for _, mf := range mfs {
		if mf.GetName() != "redis_prober_collector_dropped_series_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "collector" && l.GetValue() == collector {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no redis_prober_collector_dropped_series_total{collector=%q}", collector)
	return 0
}

// checkLabels fails on a label value that is not valid UTF-8, holds a
// control character or is longer than the bound.
func checkLabels(t *testing.T, mfs []*dto.MetricFamily) {
	t.Helper()
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				v := l.GetValue()
				if !utf8.ValidString(v) || len(v) > 128 || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
					t.Errorf("%s: label %s=%q is not sanitised", mf.GetName(), l.GetName(), v)
				}
			}
		}
	}
}

// events builds a LATENCY LATEST reply as go-redis decodes it.
func events(names ...string) []any {
	out := make([]any, 0, len(names))
	for i, n := range names {
		out = append(out, []any{n, int64(1795985000 + i), int64(5), int64(12)})
	}
	return out
}

// hostileHistogram is a LATENCY HISTOGRAM reply naming commands.
func hostileHistogram(names ...string) []any {
	var out []any
	for _, n := range names {
		out = append(out, n, []any{"calls", int64(10), "histogram_usec", []any{int64(1), int64(8), int64(2), int64(10)}})
	}
	return out
}

// TestGoldenHostileTarget: the /metrics of a target whose INFO, LATENCY
// LATEST and LATENCY HISTOGRAM carry invalid UTF-8, control characters,
// overlong and repeated names, and absurd numbers.
func TestGoldenHostileTarget(t *testing.T) {
	tests := []struct {
		name, info        string
		latest, histogram []any
		// dropped series by collector after one refresh
		droppedInfo, droppedLatency float64
	}{
		{
			name: "invalid-utf8", info: "info-invalid-utf8.txt",
			latest:    events("fo\xffrk", "command\xc3", "\xed\xa0\x80surrogate"),
			histogram: hostileHistogram("g\xffet", "ping"),
		},
		{
			name: "control-chars", info: "info-control-chars.txt",
			latest:    events("fork\x1b[31m", "a\nb\r\x00c", "\u202eevil", strings.Repeat("x", 1000)),
			histogram: hostileHistogram("get\x1b[2J", "ping\n"),
		},
		{
			// Repeated names, and two names that sanitise alike.
			name: "duplicates", info: "../info/redis-8.0.txt",
			latest:         events("fork", "fork", "x\xff", "x\xfe"),
			histogram:      hostileHistogram("get", "get", "ping"),
			droppedLatency: 2*latencyEventSeries + 1,
		},
		{
			name: "absurd-values", info: "info-absurd-values.txt",
			latest:      append(events("fork"), []any{"command", int64(-1), int64(-5), int64(-7)}),
			histogram:   hostileHistogram("get"),
			droppedInfo: 12, droppedLatency: latencyEventSeries,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info := infoFixture(t, "hostile", tt.info)
			if tt.name == "duplicates" { // a captured INFO: its process is the tuned host's
				info = onTunedHost(info)
			}
			d := replayDoer{info: info, config: defaultConfig(),
				latest: tt.latest, histogram: tt.histogram, commandstats: "# Commandstats\r\n"}
			tgt := NewTarget(TargetConfig{Name: "hostile-" + tt.name, Commands: []string{"get", "ping"}, Paths: hostPaths("tuned")}, &d)
			tgt.Refresh(t.Context())
			for _, c := range []string{"info", "latency"} {
				if err := tgt.Snapshot().Errors[c]; err != nil {
					t.Errorf("collector %s: %v", c, err)
				}
			}
			mfs := gatherTarget(t, tgt)
			checkLabels(t, mfs)
			if got := droppedSeries(t, mfs, "info"); got != tt.droppedInfo {
				t.Errorf("dropped info series = %v, want %v", got, tt.droppedInfo)
			}
			if got := droppedSeries(t, mfs, "latency"); got != tt.droppedLatency {
				t.Errorf("dropped latency series = %v, want %v", got, tt.droppedLatency)
			}
			checkGolden(t, tgt, "hostile-"+tt.name)
		})
	}
}

// TestHugeLatencyLatestIsCapped: 100,000 LATENCY LATEST events gave
// 300,000 series and a 32.8 MB /metrics; now the first 64 are kept and the
// rest counted, on every refresh.
func TestHugeLatencyLatestIsCapped(t *testing.T) {
	const n = 100_000
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("event-%06d", i)
	}
	d := replayDoer{info: infoFixture(t, "info", "redis-6.2.txt"), config: defaultConfig(), latest: events(names...)}
	tgt := NewTarget(TargetConfig{Name: "huge", Paths: hostPaths("tuned")}, &d)
	for refresh := 1; refresh <= 2; refresh++ {
		tgt.Refresh(t.Context())
		mfs := gatherTarget(t, tgt)
		if got, _ := seriesOf(mfs, "redis_prober_server_latency_event_seconds"); got != 64 {
			t.Errorf("refresh %d: %d event series, want the cap of 64", refresh, got)
		}
		if _, all := seriesOf(mfs, ""); all > 500 {
			t.Errorf("refresh %d: %d series in all", refresh, all)
		}
		if got, want := droppedSeries(t, mfs, "latency"), float64(refresh*(n-64)*3); got != want {
			t.Errorf("refresh %d: dropped %v, want %v", refresh, got, want)
		}
	}
	if got := testutil.CollectAndCount(tgt); got > 500 {
		t.Errorf("%d series", got)
	}
}

// TestHugeLatencyHistogramIsCapped: a server that answers LATENCY
// HISTOGRAM with 10,000 commands gets 256 series.
func TestHugeLatencyHistogramIsCapped(t *testing.T) {
	names := make([]string, 10_000)
	for i := range names {
		names[i] = fmt.Sprintf("cmd%05d", i)
	}
	d := replayDoer{info: infoFixture(t, "info", "redis-8.0.txt"), config: defaultConfig(), latest: []any{},
		histogram: hostileHistogram(names...), commandstats: "# Commandstats\r\n"}
	tgt := NewTarget(TargetConfig{Name: "huge", Commands: []string{"get"}, Paths: hostPaths("tuned")}, &d)
	tgt.Refresh(t.Context())
	mfs := gatherTarget(t, tgt)
	if got, _ := seriesOf(mfs, "redis_prober_server_latency_seconds"); got != 256 {
		t.Errorf("%d histogram series, want the cap of 256", got)
	}
	if got := droppedSeries(t, mfs, "latency"); got != 10_000-256 {
		t.Errorf("dropped %v", got)
	}
}

// TestAbsurdInfoValues: each numeric INFO field that feeds a series is
// ignored (its series absent) when the value is impossible, and counted.
func TestAbsurdInfoValues(t *testing.T) {
	tests := []struct {
		field, value, series string
		want                 int // series left in the family
	}{
		{"latest_fork_usec", "-1", "redis_prober_fork_last_seconds", 0},
		{"latest_fork_usec", "7200000000", "redis_prober_fork_last_seconds", 0}, // a two-hour fork
		{"latest_fork_usec", "NaN", "redis_prober_fork_last_seconds", 0},
		{"total_forks", "-3", "redis_prober_forks_total", 0},
		{"total_forks", "Inf", "redis_prober_forks_total", 0},
		{"used_memory", "-1", "redis_prober_memory_used_bytes", 0},
		{"used_memory_rss", "1e300", "redis_prober_memory_rss_bytes", 0},
		{"maxmemory", "-12884901888", "redis_prober_memory_max_bytes", 0},
		{"mem_fragmentation_ratio", "-0.5", "redis_prober_memory_fragmentation_ratio", 0},
		{"mem_fragmentation_ratio", "+Inf", "redis_prober_memory_fragmentation_ratio", 0},
		{"mem_fragmentation_bytes", "1e200", "redis_prober_memory_fragmentation_bytes", 1}, // from used_memory_rss - used_memory
		{"allocator_frag_ratio", "-1", "redis_prober_memory_allocator_fragmentation_ratio", 0},
		{"allocator_frag_bytes", "-Inf", "redis_prober_memory_allocator_fragmentation_bytes", 0},
		{"active_defrag_running", "-1", "redis_prober_memory_active_defrag_running", 0},
		{"rdb_bgsave_in_progress", "5", "redis_prober_persistence_in_progress", 3}, // the other kinds stay
	}
	base := infoFixture(t, "info", "redis-8.0.txt")
	for _, tt := range tests {
		t.Run(tt.field+"="+tt.value, func(t *testing.T) {
			info := setInfoField(t, base, tt.field, tt.value)
			tgt := NewTarget(TargetConfig{Name: "t", Paths: hostPaths("tuned")}, &replayDoer{info: info, config: defaultConfig(), latest: []any{}})
			tgt.Refresh(t.Context())
			mfs := gatherTarget(t, tgt)
			if got, _ := seriesOf(mfs, tt.series); got != tt.want {
				t.Errorf("%s: %d series, want %d", tt.series, got, tt.want)
			}
			if got := droppedSeries(t, mfs, "info"); got != 1 {
				t.Errorf("dropped info series = %v, want 1", got)
			}
		})
	}
}

// TestNegativeForkIsNotObserved: latest_fork_usec:-1 with total_forks
// going up recorded a negative duration into the fork histogram.
func TestNegativeForkIsNotObserved(t *testing.T) {
	base := infoFixture(t, "info", "redis-8.0.txt")
	d := &replayDoer{info: setInfoField(t, base, "latest_fork_usec", "-1"), config: defaultConfig(), latest: []any{}}
	tgt := NewTarget(TargetConfig{Name: "t", Paths: hostPaths("tuned")}, d)
	tgt.Refresh(t.Context())
	d.info = setInfoField(t, d.info, "total_forks", "50") // 8 forks since
	tgt.Refresh(t.Context())
	var m dto.Metric
	if err := tgt.fork.Write(&m); err != nil {
		t.Fatal(err)
	}
	if h := m.GetHistogram(); h.GetSampleSum() < 0 || h.GetSampleCount() != 0 {
		t.Errorf("fork histogram count %d sum %v, want nothing observed", h.GetSampleCount(), h.GetSampleSum())
	}
}

// setInfoField replaces the value of field (which must be there) in INFO text.
func setInfoField(t *testing.T, info, field, value string) string {
	t.Helper()
	lines := strings.Split(info, "\r\n")
	n := 0
	for i, l := range lines {
		if strings.HasPrefix(l, field+":") {
			lines[i] = field + ":" + value
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%s appears %d times", field, n)
	}
	return strings.Join(lines, "\r\n")
}

func TestLabelValue(t *testing.T) {
	long := strings.Repeat("é", 100) // 200 bytes
	tests := []struct{ in, want string }{
		{"fork", "fork"},
		{"", ""},
		{"config|get", "config|get"},
		{"module-acquire-GIL", "module-acquire-GIL"},
		{"7.2.5\xff\xfe", "7.2.5\uFFFD\uFFFD"},
		{"mas\xc3ter", "mas\uFFFDter"},
		{"\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD"}, // a UTF-16 surrogate is not UTF-8
		{"fork\x1b[31m", "fork\uFFFD[31m"},
		{"a\nb\r\x00c\x7f", "a\uFFFDb\uFFFD\uFFFDc\uFFFD"},
		{"\u202eevil", "\uFFFDevil"}, // a bidi override
		{"tab\there", "tab\uFFFDhere"},
		{"schön", "schön"},
		{strings.Repeat("x", 1000), strings.Repeat("x", MaxLabelValueLen)},
		{long, strings.Repeat("é", MaxLabelValueLen/2)},
		{"x" + long, "x" + strings.Repeat("é", MaxLabelValueLen/2-1)}, // cut on a rune boundary
	}
	for _, tt := range tests {
		got := LabelValue(tt.in)
		if got != tt.want {
			t.Errorf("LabelValue(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if LabelValue(got) != got {
			t.Errorf("LabelValue(%q) is not stable", got)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = LabelValue("expire-cycle") }); n != 0 {
		t.Errorf("a clean value allocates %v times", n)
	}
}

func FuzzLabelValue(f *testing.F) {
	for _, s := range []string{"fork", "7.2.5\xff\xfe", "a\nb\x00", "\u202e", strings.Repeat("é", 100), "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v := LabelValue(s)
		if !utf8.ValidString(v) || len(v) > MaxLabelValueLen {
			t.Fatalf("LabelValue(%q) = %q", s, v)
		}
		for _, r := range v {
			if !unicode.IsPrint(r) {
				t.Fatalf("LabelValue(%q) = %q holds %U", s, v, r)
			}
		}
		if LabelValue(v) != v {
			t.Fatalf("LabelValue not stable on %q", v)
		}
		clean := len(s) <= MaxLabelValueLen && utf8.ValidString(s)
		for _, r := range s {
			clean = clean && r != utf8.RuneError && unicode.IsPrint(r)
		}
		if clean && v != s {
			t.Fatalf("clean %q changed to %q", s, v)
		}
	})
}

// TestParseHostileInfo: the hostile INFO fixtures parse, and the fields
// that become labels or numbers come out safe.
func TestParseHostileInfo(t *testing.T) {
	tests := []struct {
		file          string
		version, role string // after LabelValue
		major, minor  int
		absurd        int // fields dropAbsurd removes
	}{
		{"info-invalid-utf8.txt", "7.2.5\uFFFD\uFFFD", "mas\uFFFDter", 7, 2, 0},
		{"info-control-chars.txt", "7.2.5\uFFFD[2J\uFFFD[31m", "master\uFFFD\uFFFD\uFFFD", 7, 2, 0},
		{"info-absurd-values.txt", "7.2.5", "master", 7, 2, 12},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			info, err := redisinfo.Parse(infoFixture(t, "hostile", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if v, r := LabelValue(info["redis_version"]), LabelValue(info["role"]); v != tt.version || r != tt.role {
				t.Errorf("version %q role %q, want %q %q", v, r, tt.version, tt.role)
			}
			if ma, mi, ok := info.Version(); !ok || ma != tt.major || mi != tt.minor {
				t.Errorf("Version() = %d.%d %v", ma, mi, ok)
			}
			n := len(info)
			bad := dropAbsurd(info)
			if len(bad) != tt.absurd || n-len(info) != tt.absurd {
				t.Errorf("dropAbsurd removed %d fields (%v), want %d", n-len(info), bad, tt.absurd)
			}
			for _, b := range bad {
				if LabelValue(b) != b {
					t.Errorf("log text %q is not printable", b)
				}
			}
		})
	}
}

// nested is a value n arrays deep.
func nested(n int) any {
	var v any = "x"
	for range n {
		v = []any{v}
	}
	return v
}

// TestHostileCommandlog: COMMANDLOG replies of the wrong type, with huge or
// negative numbers, more entries than asked, or deep nesting fail that
// refresh of the commandlog collector (success 0, no commandlog series
// but its health), never the scrape or the other collectors; arguments
// nested a million deep are never walked.
func TestHostileCommandlog(t *testing.T) {
	entry := func(id, micros any, args any) []any {
		return []any{id, int64(1796135633), micros, args, "127.0.0.1:1", ""}
	}
	many := make([]any, commandlogGetCount+1)
	for i := range many {
		many[i] = entry(int64(i), int64(10), []any{"get"})
	}
	ok := []any{entry(int64(1), int64(10), []any{"get"})}
	tests := []struct {
		name   string
		lens   [3]any
		get    any
		wantOK bool
	}{
		{name: "length not an integer", lens: [3]any{"12", int64(0), int64(0)}, get: ok},
		{name: "length an array", lens: [3]any{int64(0), nested(100), int64(0)}, get: ok},
		{name: "huge length", lens: [3]any{int64(0), int64(0), int64(1) << 62}, get: ok},
		{name: "negative length", lens: [3]any{int64(-1), int64(0), int64(0)}, get: ok},
		{name: "entries not an array", lens: [3]any{int64(0), int64(0), int64(0)}, get: "OK"},
		{name: "more entries than asked", lens: [3]any{int64(0), int64(0), int64(0)}, get: many},
		{name: "entry not an array", lens: [3]any{int64(0), int64(0), int64(0)}, get: []any{int64(5)}},
		{name: "short entry", lens: [3]any{int64(0), int64(0), int64(0)}, get: []any{[]any{int64(1), int64(2)}}},
		{name: "id nested", lens: [3]any{int64(0), int64(0), int64(0)}, get: []any{entry(nested(1000), int64(10), nil)}},
		{name: "time a string", lens: [3]any{int64(0), int64(0), int64(0)}, get: []any{entry(int64(1), "10", nil)}},
		{name: "negative id", lens: [3]any{int64(0), int64(0), int64(0)}, get: []any{entry(int64(-1), int64(10), nil)}},
		{name: "negative time", lens: [3]any{int64(0), int64(0), int64(0)}, get: []any{entry(int64(1), int64(-10), nil)}},
		{name: "a week long", lens: [3]any{int64(0), int64(0), int64(0)}, get: []any{entry(int64(1), int64(7*24*3600*1e6), nil)}},
		{name: "arguments a million deep", lens: [3]any{int64(0), int64(0), int64(0)}, get: []any{entry(int64(1), int64(10), nested(1_000_000))}, wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tgt := NewTarget(TargetConfig{Name: "hostile", Paths: hostPaths("tuned")}, commandlogDoer(t, tt.lens, tt.get))
			tgt.Refresh(t.Context())
			errs := tgt.Snapshot().Errors
			if err := errs["commandlog"]; (err == nil) != tt.wantOK || errors.Is(err, ErrNoData) {
				t.Errorf("commandlog error %v, want ok=%v", err, tt.wantOK)
			}
			for _, c := range []string{"info", "latency"} {
				if err := errs[c]; err != nil {
					t.Errorf("%s: %v", c, err)
				}
			}
			mfs := gatherTarget(t, tgt)
			checkLabels(t, mfs)
			n, _ := seriesOf(mfs, "redis_prober_server_commandlog_length")
			if want := map[bool]int{true: 3, false: 0}[tt.wantOK]; n != want {
				t.Errorf("%d commandlog_length series, want %d", n, want)
			}
		})
	}
}
