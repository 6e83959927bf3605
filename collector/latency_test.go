package collector

import (
	"math"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/redis-prober/redis-prober/internal/redisinfo"
)

// capturedHistogram is LATENCY HISTOGRAM ping set from redis-server 7.0.15,
// as go-redis returns it over RESP2.
func capturedHistogram() []any {
	return []any{
		"ping", []any{"calls", int64(79109), "histogram_usec", []any{
			int64(1), int64(74737), int64(2), int64(78854), int64(4), int64(79049), int64(8), int64(79071),
			int64(16), int64(79104), int64(33), int64(79108), int64(66), int64(79109)}},
		"set", []any{"calls", int64(22), "histogram_usec", []any{
			int64(1), int64(5), int64(2), int64(14), int64(8), int64(15), int64(16), int64(22)}},
	}
}

func TestParseLatencyHistogram(t *testing.T) {
	hs, _, err := parseLatencyHistogram(capturedHistogram())
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 2 || hs[0].Command != "ping" || hs[0].Calls != 79109 || len(hs[0].Bounds) != 7 || hs[1].Cumul[3] != 22 {
		t.Fatalf("parsed %+v", hs)
	}
	for _, bad := range []any{
		"x", []any{"ping"}, []any{int64(1), []any{}},
		[]any{"ping", []any{"histogram_usec", []any{int64(2), int64(5), int64(1), int64(6)}}}, // bounds out of order
		[]any{"ping", []any{"histogram_usec", []any{int64(1), int64(5), int64(2), int64(4)}}}, // counts go down
		[]any{"ping", []any{"calls", "x"}},
	} {
		if _, _, err := parseLatencyHistogram(bad); err == nil {
			t.Errorf("parseLatencyHistogram(%v): no error", bad)
		}
	}
	// An empty reply (no probed command ran yet) is fine.
	if hs, _, err := parseLatencyHistogram([]any{}); err != nil || len(hs) != 0 {
		t.Errorf("empty: %v %v", hs, err)
	}
}

func TestServerHistogramBuckets(t *testing.T) {
	hs, _, _ := parseLatencyHistogram(capturedHistogram())
	h := hs[0]
	h.SumSeconds, h.SumExact = 0.123, true
	desc := prometheus.NewDesc("x_seconds", "x", []string{"command"}, nil)
	var m dto.Metric
	if err := newServerHistogram(desc, h, true, nil, "ping").Write(&m); err != nil {
		t.Fatal(err)
	}
	hist := m.GetHistogram()
	if hist.GetSampleCount() != 79109 || hist.GetSampleSum() != 0.123 {
		t.Errorf("count %d sum %v", hist.GetSampleCount(), hist.GetSampleSum())
	}
	// Classic: one bucket per power of two from 1 µs to 2^20 µs, the
	// same for every series (the server's 33 and 66 are its 32 and 64).
	wantCum := []uint64{74737, 78854, 79049, 79071, 79104, 79108, 79109}
	if len(hist.Bucket) != classicMaxK+1 {
		t.Fatalf("%d classic buckets, want %d", len(hist.Bucket), classicMaxK+1)
	}
	for i, b := range hist.Bucket {
		want := wantCum[min(i, len(wantCum)-1)]
		if le := math.Ldexp(1, i) * 1e-6; b.GetUpperBound() != le || b.GetCumulativeCount() != want {
			t.Errorf("bucket %d: le=%g cum=%d, want le=%g cum=%d", i, b.GetUpperBound(), b.GetCumulativeCount(), le, want)
		}
	}
	// Native schema 0: one span from index -20, counts decoded from deltas.
	if hist.GetSchema() != 0 || len(hist.PositiveSpan) != 1 || hist.PositiveSpan[0].GetOffset() != -20 || hist.PositiveSpan[0].GetLength() != 7 {
		t.Fatalf("native spans %v schema %d", hist.PositiveSpan, hist.GetSchema())
	}
	var count, total int64
	for i, d := range hist.PositiveDelta {
		count += d
		var prev uint64
		if i > 0 {
			prev = wantCum[i-1]
		}
		if uint64(count) != wantCum[i]-prev {
			t.Errorf("native bucket %d: %d, want %d", i, count, wantCum[i]-prev)
		}
		total += count
	}
	if uint64(total) != hist.GetSampleCount() {
		t.Errorf("native buckets add up to %d, count %d", total, hist.GetSampleCount())
	}
	// Without commandstats the sum is estimated from bucket midpoints.
	h.SumExact = false
	m.Reset()
	_ = newServerHistogram(desc, h, true, nil, "ping").Write(&m)
	if s := m.GetHistogram().GetSampleSum(); s <= 0 || s > 79109*64e-6 {
		t.Errorf("estimated sum %v", s)
	}
}

// At default flags the server histogram is native only: the same native
// buckets, no classic ones (22 series a command saved).
func TestServerHistogramNativeOnly(t *testing.T) {
	hs, _, _ := parseLatencyHistogram(capturedHistogram())
	desc := prometheus.NewDesc("x_seconds", "x", []string{"command"}, nil)
	var classic, native dto.Metric
	if err := newServerHistogram(desc, hs[0], true, nil, "ping").Write(&classic); err != nil {
		t.Fatal(err)
	}
	if err := newServerHistogram(desc, hs[0], false, nil, "ping").Write(&native); err != nil {
		t.Fatal(err)
	}
	if n := len(native.GetHistogram().GetBucket()); n != 0 {
		t.Errorf("%d classic buckets without the flag", n)
	}
	c, n := classic.GetHistogram(), native.GetHistogram()
	if !slices.Equal(c.GetPositiveDelta(), n.GetPositiveDelta()) || c.GetSampleCount() != n.GetSampleCount() || len(n.GetPositiveSpan()) != 1 {
		t.Errorf("native part differs: %v vs %v", n, c)
	}
}

func TestParseLatencyLatest(t *testing.T) {
	// LATENCY LATEST from redis-server 7.0.15 after DEBUG SLEEP 0.01.
	reply := []any{[]any{"command", int64(1795985850), int64(10), int64(10)}}
	ev, _, err := parseLatencyLatest(reply)
	if err != nil || len(ev) != 1 || ev[0] != (LatencyEvent{Event: "command", Timestamp: 1795985850, LatestMillis: 10, MaxMillis: 10}) {
		t.Fatalf("got %+v %v", ev, err)
	}
	// Valkey 8.1.1 adds sum and count, after two DEBUG SLEEPs of 10 and 20 ms;
	// Redis 8.0's module-acquire-GIL is one more event class.
	reply = []any{
		[]any{"command", int64(1796135488), int64(20), int64(20), int64(30), int64(2)},
		[]any{"module-acquire-GIL", int64(1796135489), int64(3), int64(7)},
	}
	ev, dropped, err := parseLatencyLatest(reply)
	want := []LatencyEvent{
		{Event: "command", Timestamp: 1796135488, LatestMillis: 20, MaxMillis: 20, SumMillis: 30, Count: 2, HasTotals: true},
		{Event: "module-acquire-GIL", Timestamp: 1796135489, LatestMillis: 3, MaxMillis: 7},
	}
	if err != nil || dropped != 0 || !slices.Equal(ev, want) {
		t.Fatalf("got %+v %d %v, want %+v", ev, dropped, err, want)
	}
	// A negative total drops the event and its five series.
	if ev, dropped, err := parseLatencyLatest([]any{[]any{"command", int64(1), int64(2), int64(3), int64(-4), int64(1)}}); err != nil || len(ev) != 0 || dropped != 5 {
		t.Errorf("negative sum: %+v %d %v", ev, dropped, err)
	}
	for _, bad := range []any{"x", []any{[]any{"command", int64(1)}}, []any{[]any{int64(1), int64(1), int64(1), int64(1)}},
		[]any{[]any{"command", int64(1), int64(2), int64(3), "30", int64(2)}}, []any{[]any{"command", int64(1), int64(2), int64(3), int64(30), []any{}}}} {
		if _, _, err := parseLatencyLatest(bad); err == nil {
			t.Errorf("parseLatencyLatest(%v): no error", bad)
		}
	}
}

func TestParseCommandStats(t *testing.T) {
	info, err := redisinfo.Parse("# Commandstats\r\ncmdstat_ping:calls=79109,usec=51234,usec_per_call=0.65,rejected_calls=0,failed_calls=0\r\ncmdstat_config|get:calls=1,usec=12,usec_per_call=12.00\r\ncmdstat_GET:calls=x\r\n")
	if err != nil {
		t.Fatal(err)
	}
	cs := parseCommandStats(info)
	if cs["ping"] != (commandStat{79109, 51234}) || cs["config|get"].usec != 12 {
		t.Errorf("got %+v", cs)
	}
	if _, ok := cs["get"]; ok {
		t.Errorf("malformed line parsed: %+v", cs)
	}
}
