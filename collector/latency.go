package collector

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redis-prober/redis-prober/internal/redisinfo"
)

// LatencyEvent is one line of LATENCY LATEST: the latest and the all-time
// worst spike of an event class (command, fast-command, fork, aof-fsync-always,
// expire-cycle, eviction-cycle, ...), recorded only when it exceeded
// latency-monitor-threshold.
type LatencyEvent struct {
	Event        string
	Timestamp    int64 // unix seconds of the latest spike
	LatestMillis int64
	MaxMillis    int64
	// SumMillis and Count are the total of the spikes and how many there
	// were since the monitor was reset (Valkey 8.1+ adds them to each
	// entry); HasTotals says the server sent them.
	SumMillis, Count int64
	HasTotals        bool
}

// series is the number of series e gives.
func (e LatencyEvent) series() int {
	if e.HasTotals {
		return latencyEventSeries + latencyTotalSeries
	}
	return latencyEventSeries
}

// Per-target caps on the dynamic series of the latency collector. What is
// over a cap is dropped and counted (redis_prober_collector_dropped_series_total).
const (
	// maxLatencyEvents bounds the LATENCY LATEST event classes kept (three
	// series each). Redis 7 records about 20 classes (command,
	// fast-command, fork, aof-*, expire-cycle, eviction-*,
	// active-defrag-cycle, ...); modules may add a few.
	maxLatencyEvents = 64
	// maxHistogramCommands bounds the LATENCY HISTOGRAM commands kept (one
	// histogram series each). The prober asks only for its probed
	// commands; Redis 7 has about 250 commands in all.
	maxHistogramCommands = 256
	// maxHistogramBuckets bounds the buckets of one command: the server
	// has one per power of two microseconds, so 64 cover every int64.
	maxHistogramBuckets = 64
)

// latencyEventSeries is the number of series one LATENCY LATEST event
// gives; latencyTotalSeries the two more of an entry with totals (Valkey
// 8.1+).
const (
	latencyEventSeries = 3
	latencyTotalSeries = 2
)

// parseLatencyLatest parses the LATENCY LATEST reply as go-redis returns it
// (RESP2: an array of [event, timestamp, latest ms, max ms] entries, with
// [..., sum ms, count] on Valkey 8.1+). Event names go through LabelValue,
// whatever the server calls its classes (Redis 8 adds module-acquire-GIL);
// a name seen before (after that), an entry with a negative number, and
// entries over maxLatencyEvents are dropped, and dropped says how many
// series they would have been.
func parseLatencyLatest(reply any) (events []LatencyEvent, dropped int, err error) {
	rows, ok := reply.([]any)
	if !ok {
		return nil, 0, fmt.Errorf("latency latest: reply is %T, not an array", reply)
	}
	out := make([]LatencyEvent, 0, min(len(rows), maxLatencyEvents))
	seen := make(map[string]bool, min(len(rows), maxLatencyEvents))
	for _, r := range rows {
		f, ok := r.([]any)
		if !ok || len(f) < 4 {
			return nil, 0, fmt.Errorf("latency latest: malformed entry (%T of %d)", r, len(f))
		}
		name, ok := f[0].(string)
		if !ok || name == "" {
			return nil, 0, fmt.Errorf("latency latest: event name is %T", f[0])
		}
		// Four numbers, or six with Valkey 8.1's sum and count; what a
		// later server may add after them is not read.
		n := 3
		if len(f) >= 6 {
			n = 5
		}
		var nums [5]int64
		negative := false
		for i := range n {
			if nums[i], ok = f[i+1].(int64); !ok {
				return nil, 0, fmt.Errorf("latency latest: %s field %d is %T", LabelValue(name), i+1, f[i+1])
			}
			negative = negative || nums[i] < 0
		}
		e := LatencyEvent{Timestamp: nums[0], LatestMillis: nums[1], MaxMillis: nums[2],
			SumMillis: nums[3], Count: nums[4], HasTotals: n == 5}
		if len(out) >= maxLatencyEvents || negative {
			dropped += e.series()
			continue
		}
		if e.Event = LabelValue(name); seen[e.Event] {
			dropped += e.series()
			continue
		}
		seen[e.Event] = true
		out = append(out, e)
	}
	return out, dropped, nil
}

// CommandHistogram is the server-side latency of one command from LATENCY
// HISTOGRAM: cumulative counts at power-of-two microsecond bounds (the
// server prints each bound as its histogram's highest equivalent value,
// so 32 may read 33).
type CommandHistogram struct {
	Command string
	Calls   uint64
	Bounds  []uint64 // upper bounds in µs, ascending
	Cumul   []uint64 // cumulative counts at Bounds
	// SumSeconds is the exact total time from INFO commandstats when
	// known; otherwise the bucket midpoints estimate it.
	SumSeconds float64
	SumExact   bool
}

// parseLatencyHistogram parses the LATENCY HISTOGRAM reply (RESP2):
// [name, [calls, n, histogram_usec, [bound, cumulative, ...]], ...].
// Command names go through LabelValue; a name seen before and commands
// over maxHistogramCommands are dropped and counted in dropped.
func parseLatencyHistogram(reply any) (hists []CommandHistogram, dropped int, err error) {
	top, ok := reply.([]any)
	if !ok || len(top)%2 != 0 {
		return nil, 0, fmt.Errorf("latency histogram: reply is not a map")
	}
	var out []CommandHistogram
	seen := map[string]bool{}
	for i := 0; i < len(top); i += 2 {
		name, ok := top[i].(string)
		if !ok {
			return nil, 0, fmt.Errorf("latency histogram: command name is %T", top[i])
		}
		if len(out) >= maxHistogramCommands {
			dropped++
			continue
		}
		if name = LabelValue(name); seen[name] {
			dropped++
			continue
		}
		h, err := parseCommandHistogram(name, top[i+1])
		if err != nil {
			return nil, 0, err
		}
		seen[name] = true
		out = append(out, h)
	}
	return out, dropped, nil
}

// parseCommandHistogram parses the body of one command of LATENCY HISTOGRAM.
func parseCommandHistogram(name string, reply any) (CommandHistogram, error) {
	h := CommandHistogram{Command: name}
	body, ok := reply.([]any)
	if !ok || len(body)%2 != 0 {
		return h, fmt.Errorf("latency histogram: %s: body is not a map", name)
	}
	for j := 0; j < len(body); j += 2 {
		key, _ := body[j].(string)
		switch key {
		case "calls":
			n, ok := body[j+1].(int64)
			if !ok || n < 0 {
				return h, fmt.Errorf("latency histogram: %s calls is %T %v", name, body[j+1], n)
			}
			h.Calls = uint64(n)
		case "histogram_usec":
			pairs, ok := body[j+1].([]any)
			if !ok || len(pairs)%2 != 0 {
				return h, fmt.Errorf("latency histogram: %s buckets are not a map", name)
			}
			if len(pairs)/2 > maxHistogramBuckets {
				return h, fmt.Errorf("latency histogram: %s has %d buckets, more than the %d of any int64 (maxHistogramBuckets)", name, len(pairs)/2, maxHistogramBuckets)
			}
			for k := 0; k < len(pairs); k += 2 {
				b, ok1 := pairs[k].(int64)
				c, ok2 := pairs[k+1].(int64)
				if !ok1 || !ok2 || b <= 0 || c < 0 {
					return h, fmt.Errorf("latency histogram: %s bucket %T=%T (%d=%d)", name, pairs[k], pairs[k+1], b, c)
				}
				if n := len(h.Bounds); n > 0 && (uint64(b) <= h.Bounds[n-1] || uint64(c) < h.Cumul[n-1]) {
					return h, fmt.Errorf("latency histogram: %s buckets out of order", name)
				}
				h.Bounds = append(h.Bounds, uint64(b))
				h.Cumul = append(h.Cumul, uint64(c))
			}
		}
	}
	return h, nil
}

// commandStat is one cmdstat_<name> line of INFO commandstats.
type commandStat struct {
	calls, usec uint64
}

// parseCommandStats reads the calls and usec of each command from an INFO
// commandstats reply, keyed by lower-case command name.
func parseCommandStats(info redisinfo.Info) map[string]commandStat {
	out := map[string]commandStat{}
	for k, v := range info {
		name, ok := strings.CutPrefix(k, "cmdstat_")
		if !ok {
			continue
		}
		var st commandStat
		var okCalls, okUsec bool
		for kv := range strings.SplitSeq(v, ",") {
			f, val, _ := strings.Cut(kv, "=")
			n, err := strconv.ParseUint(val, 10, 64)
			if err != nil {
				continue
			}
			switch f {
			case "calls":
				st.calls, okCalls = n, true
			case "usec":
				st.usec, okUsec = n, true
			}
		}
		if okCalls && okUsec {
			out[strings.ToLower(name)] = st
		}
	}
	return out
}

// latencyDescs are the series of the latency collector.
type latencyDescs struct {
	last, max, ts, hist targetDesc
	spikeSum, spikes    targetDesc
}

func newLatencyDescs() latencyDescs {
	return latencyDescs{
		last: newTargetDesc("redis_prober_server_latency_event_seconds",
			"Latest latency spike the server recorded per event class (LATENCY LATEST; needs latency-monitor-threshold).",
			"event"),
		max: newTargetDesc("redis_prober_server_latency_event_max_seconds",
			"Worst latency spike the server recorded per event class since the monitor was reset (LATENCY LATEST).",
			"event"),
		ts: newTargetDesc("redis_prober_server_latency_event_timestamp_seconds",
			"Unix time of the latest latency spike per event class (LATENCY LATEST).",
			"event"),
		spikeSum: newTargetDesc("redis_prober_server_latency_event_spike_seconds_total",
			"Total of the latency spikes the server recorded per event class since the monitor was reset (LATENCY LATEST sum, Valkey 8.1+; absent on servers without it). Goes back to 0 on LATENCY RESET or a restart.",
			"event"),
		spikes: newTargetDesc("redis_prober_server_latency_event_spikes_total",
			"Latency spikes the server recorded per event class since the monitor was reset (LATENCY LATEST count, Valkey 8.1+; absent on servers without it). Goes back to 0 on LATENCY RESET or a restart.",
			"event"),
		hist: newTargetDesc("redis_prober_server_latency_seconds",
			"Time the server spent executing each probed command (LATENCY HISTOGRAM, Redis 7+): what Redis spent, beside what clients feel. Native schema 0; classic buckets at powers of two microseconds with --collector.server-latency.classic-buckets.",
			"command"),
	}
}

func (d latencyDescs) describe(ch chan<- *prometheus.Desc) {
	ch <- d.last.Desc
	ch <- d.max.Desc
	ch <- d.ts.Desc
	ch <- d.spikeSum.Desc
	ch <- d.spikes.Desc
	ch <- d.hist.Desc
}

// emit writes the events and histograms of the target of sl;
// classic adds classic buckets to hist, beside the native ones. The
// event totals count since the latency monitor's reset, the histograms
// since the statistics'.
func (d latencyDescs) emit(out *sink, sl *seriesLabels, events []LatencyEvent, hists []CommandHistogram, classic bool, since ServerSince) {
	for _, e := range events {
		out.series(d.last, prometheus.GaugeValue, float64(e.LatestMillis)/1e3, sl, e.Event)
		out.series(d.max, prometheus.GaugeValue, float64(e.MaxMillis)/1e3, sl, e.Event)
		out.series(d.ts, prometheus.GaugeValue, float64(e.Timestamp), sl, e.Event)
		if e.HasTotals {
			out.counter(d.spikeSum, float64(e.SumMillis)/1e3, since.latency, sl, e.Event)
			out.counter(d.spikes, float64(e.Count), since.latency, sl, e.Event)
		}
	}
	for _, h := range hists {
		out.metric(d.hist, newServerHistogram(d.hist.Desc, h, classic, since.stats, sl.values[0], sl.values[1], h.Command))
	}
}

// log2Round is the power of two nearest to a server bucket bound (33 -> 5).
func log2Round(v uint64) int {
	return int(math.Round(math.Log2(float64(v))))
}
