package collector

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redis-prober/redis-prober/internal/redisinfo"
)

// COMMANDLOG (Valkey 8.1+) keeps three logs: commands slower than
// commandlog-execution-slower-than (the slow log of before), requests and
// replies larger than commandlog-request-larger-than and
// commandlog-reply-larger-than. The commandlog collector exports the length
// of each and the execution time of the slow log's entries as a histogram,
// read by entry id so that each entry is observed once. An entry's
// arguments, client address and client name (which may hold keys, values
// and passwords: CONFIG SET requirepass, AUTH of a module) are never read
// into a label, a log line or the snapshot.
//
// A server without COMMANDLOG (Redis, Valkey before 8.1) is never sent the
// command (it would count an error in its own errorstats on every refresh),
// and its targets have no commandlog series, not even the collector's
// health.

// commandlogTypes are the logs of COMMANDLOG, in the order of
// CommandlogLengths.
var commandlogTypes = [...]string{"slow", "large-request", "large-reply"}

const (
	// commandlogGetCount bounds the entries of one COMMANDLOG GET: the
	// default length of each log (commandlog-*-max-len), so a refresh
	// reads the whole log at defaults and never more than 128 entries.
	commandlogGetCount = 128
	// maxCommandlogLen is the largest COMMANDLOG LEN taken as true: every
	// entry is a few hundred bytes in the server's memory, so 2^40 would
	// be hundreds of TiB.
	maxCommandlogLen = 1 << 40
	// maxSlowEntryMicros is the longest execution time of a slow entry
	// taken as true: a day.
	maxSlowEntryMicros = 24 * 3600 * 1e6
	// commandlogRetry is how long a refused COMMANDLOG (ACL, renamed
	// away) is not asked again: asking on every refresh would fill the
	// server's ACL LOG and errorstats.
	commandlogRetry = 10 * time.Minute
)

// CommandlogLengths are COMMANDLOG LEN of slow, large-request and
// large-reply.
type CommandlogLengths [len(commandlogTypes)]int64

// commandlogEntry is what the collector reads of one COMMANDLOG GET entry:
// its id and execution time (for the slow log, in µs). Nothing else.
type commandlogEntry struct {
	id, micros int64
}

// parseCommandlogLen reads the integer reply of COMMANDLOG LEN.
func parseCommandlogLen(typ string, reply any) (int64, error) {
	n, ok := reply.(int64)
	if !ok {
		return 0, fmt.Errorf("commandlog len %s: reply is %T, not an integer", typ, reply)
	}
	if n < 0 || n > maxCommandlogLen {
		return 0, fmt.Errorf("commandlog len %s: %d is out of range", typ, n)
	}
	return n, nil
}

// parseCommandlogGet reads the ids and execution times of a COMMANDLOG GET
// <limit> slow reply: an array of at most limit entries [id, timestamp,
// µs, arguments, client address, client name]. Only the first three
// fields are read; the arguments are not looked at, however they nest.
func parseCommandlogGet(reply any, limit int) ([]commandlogEntry, error) {
	rows, ok := reply.([]any)
	if !ok {
		return nil, fmt.Errorf("commandlog get: reply is %T, not an array", reply)
	}
	if len(rows) > limit {
		return nil, fmt.Errorf("commandlog get: %d entries, more than the %d asked for", len(rows), limit)
	}
	out := make([]commandlogEntry, 0, len(rows))
	for i, r := range rows {
		f, ok := r.([]any)
		if !ok || len(f) < 3 {
			return nil, fmt.Errorf("commandlog get: entry %d is malformed (%T of %d)", i, r, len(f))
		}
		var nums [3]int64
		for j := range nums {
			if nums[j], ok = f[j].(int64); !ok {
				return nil, fmt.Errorf("commandlog get: entry %d field %d is %T, not an integer", i, j, f[j])
			}
		}
		if nums[0] < 0 || nums[2] < 0 || nums[2] > maxSlowEntryMicros {
			return nil, fmt.Errorf("commandlog get: entry %d: id %d, %d µs out of range", i, nums[0], nums[2])
		}
		out = append(out, commandlogEntry{id: nums[0], micros: nums[2]})
	}
	return out, nil
}

// commandlogTracker turns successive reads of the slow log into "entries
// logged in between", by id: the server numbers entries from 0 at start
// and COMMANDLOG RESET does not start over.
type commandlogTracker struct {
	have   bool
	runID  string
	lastID int64
}

// next returns the execution times, in seconds, of the entries new since
// the previous read. The first read only sets the baseline: what was
// logged before the prober looked is not observed (a prober restart would
// count it again). After a server restart (new run_id, or ids that went
// back) every entry read is new.
func (c *commandlogTracker) next(runID string, entries []commandlogEntry) []float64 {
	maxID, got := int64(-1), len(entries) > 0
	for _, e := range entries {
		maxID = max(maxID, e.id)
	}
	prev := *c
	if got || runID != prev.runID {
		c.lastID = maxID
	}
	c.have, c.runID = true, runID
	if !prev.have {
		return nil
	}
	from := prev.lastID
	if runID != prev.runID || got && maxID < prev.lastID {
		from = -1
	}
	var out []float64
	for _, e := range entries {
		if e.id > from {
			out = append(out, float64(e.micros)/1e6)
		}
	}
	return out
}

// CommandlogBuckets are the classic buckets of
// redis_prober_server_commandlog_slow_seconds, one a decade from 1 ms to
// 10 s around the default threshold of 10 ms; the detail is in the native
// buckets.
var CommandlogBuckets = []float64{.001, .01, .1, 1, 10}

// commandlogHistogramOpts declare redis_prober_server_commandlog_slow_seconds
// for every target of a set.
func commandlogHistogramOpts() prometheus.HistogramOpts {
	return prometheus.HistogramOpts{
		Name:                            "redis_prober_server_commandlog_slow_seconds",
		Help:                            "Execution time of each command the server logged as slow (COMMANDLOG slow, Valkey 8.1+), observed once by entry id; at most 128 entries a refresh. Absent on servers without COMMANDLOG.",
		Buckets:                         CommandlogBuckets,
		NativeHistogramBucketFactor:     1.1,
		NativeHistogramMaxBucketNumber:  160,
		NativeHistogramMinResetDuration: time.Hour,
	}
}

// commandlogDescs are the gauges of the commandlog collector.
type commandlogDescs struct {
	length targetDesc
}

func newCommandlogDescs() commandlogDescs {
	return commandlogDescs{
		length: newTargetDesc("redis_prober_server_commandlog_length",
			"Entries in each COMMANDLOG (Valkey 8.1+): slow, large-request, large-reply. Absent on servers without COMMANDLOG.",
			"log"),
	}
}

func (d commandlogDescs) describe(ch chan<- *prometheus.Desc) {
	ch <- d.length.Desc
}

func (d commandlogDescs) emit(out *sink, sl *seriesLabels, lens *CommandlogLengths) {
	if lens == nil {
		return
	}
	for i, typ := range commandlogTypes {
		out.series(d.length, prometheus.GaugeValue, float64(lens[i]), sl, typ)
	}
}

// commandlogState is a target's COMMANDLOG bookkeeping; t.refreshMu
// guards it.
type commandlogState struct {
	tracker commandlogTracker
	// seen: the server had COMMANDLOG at the last INFO read, so a
	// refresh that cannot read INFO reports the collector failed rather
	// than dropping its health series.
	seen bool
	// refused is the error of a refused COMMANDLOG, not asked again
	// before retryAt or a server restart (a new run_id).
	refused       error
	refusedRunID  string
	retryAt       time.Time
	pendingSlow   []float64 // observations before Add
	histogramMade bool
}

// refreshCommandlog is the commandlog step of Refresh; t.refreshMu is held.
// ran is false when the server has no COMMANDLOG: nothing is recorded.
func (t *Target) refreshCommandlog(ctx context.Context, info redisinfo.Info, infoErr error, now time.Time) (lens *CommandlogLengths, ran bool, err error) {
	st := &t.cl
	if infoErr != nil {
		return nil, st.seen, infoErr
	}
	if st.seen = redisinfo.CommandlogSupported(info); !st.seen {
		return nil, false, nil
	}
	// Kept across refreshes (the tracker, a refusal): a substring would
	// keep the whole INFO reply alive.
	runID := strings.Clone(info["run_id"])
	if st.refused != nil && runID == st.refusedRunID && now.Before(st.retryAt) {
		return nil, true, st.refused
	}
	st.refused = nil
	lens, slow, err := t.fetchCommandlog(ctx, runID)
	if errors.Is(err, ErrNoData) {
		st.refused, st.refusedRunID, st.retryAt = err, runID, now.Add(commandlogRetry)
	}
	if err != nil {
		return nil, true, err
	}
	t.commandlogHistogram()
	t.observeSlow(slow)
	return lens, true, nil
}

// fetchCommandlog reads COMMANDLOG LEN of each log and the newest entries
// of the slow log, and returns the lengths and the execution times of the
// slow entries new since the last read.
func (t *Target) fetchCommandlog(ctx context.Context, runID string) (*CommandlogLengths, []float64, error) {
	var lens CommandlogLengths
	for i, typ := range commandlogTypes {
		reply, err := t.client.Do(ctx, "commandlog", "len", typ).Result()
		if err != nil {
			return nil, nil, redisinfo.CommandErr("COMMANDLOG LEN", err)
		}
		if lens[i], err = parseCommandlogLen(typ, reply); err != nil {
			return nil, nil, err
		}
	}
	reply, err := t.client.Do(ctx, "commandlog", "get", commandlogGetCount, "slow").Result()
	if err != nil {
		return nil, nil, redisinfo.CommandErr("COMMANDLOG GET", err)
	}
	entries, err := parseCommandlogGet(reply, commandlogGetCount)
	if err != nil {
		return nil, nil, err
	}
	return &lens, t.cl.tracker.next(runID, entries), nil
}

// commandlogHistogram makes the target's child of the set's slow-log
// histogram once the target is added and its COMMANDLOG was read, so a
// server without it (or a user refused it) has no such series; t.refreshMu
// is held.
func (t *Target) commandlogHistogram() {
	if t.cl.histogramMade || t.fork == nil { // t.fork: not added yet
		return
	}
	h, err := t.set.slow.GetMetricWithLabelValues(t.sl.values[:]...)
	if err != nil { // labels that are not valid UTF-8: Add refused them already
		return
	}
	t.cl.histogramMade = true
	t.mu.Lock()
	t.slow = h.(prometheus.Histogram)
	t.mu.Unlock()
	for _, v := range t.cl.pendingSlow {
		t.slow.Observe(v)
	}
	t.cl.pendingSlow = nil
}

// observeSlow records the execution times of new slow entries; t.refreshMu
// is held.
func (t *Target) observeSlow(seconds []float64) {
	for _, v := range seconds {
		if t.slow != nil {
			t.slow.Observe(v)
		} else if len(t.cl.pendingSlow) < commandlogGetCount {
			t.cl.pendingSlow = append(t.cl.pendingSlow, v)
		}
	}
}

// collectSlow collects the target's slow-log histogram, once made.
func (t *Target) collectSlow(out *sink) {
	t.mu.RLock()
	h := t.slow
	t.mu.RUnlock()
	if h != nil {
		out.metric(t.set.slowDesc, h)
	}
}
