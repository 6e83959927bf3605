package explain

import (
	"fmt"
	"strings"
	"time"
)

// slowEntry is what attribution reads of a SLOWLOG (COMMANDLOG slow) entry:
// its id, when it was logged (whole Unix seconds of the server, just after
// the command ended), how long the command ran, and whether the command
// forks (BGSAVE, BGREWRITEAOF: its time is the fork's). Never its
// arguments or client.
type slowEntry struct {
	id, unix, micros int64
	forks            bool
}

// forkingCommand says whether a command's name is one that forks.
func forkingCommand(args any) bool {
	a, ok := args.([]any)
	if !ok || len(a) == 0 {
		return false
	}
	name, ok := a[0].(string)
	return ok && (strings.EqualFold(name, "bgsave") || strings.EqualFold(name, "bgrewriteaof"))
}

// maxEntryMicros is the longest execution taken as true: a day.
const maxEntryMicros = 24 * 3600 * 1e6

// parseSlowlog reads a SLOWLOG GET / COMMANDLOG GET reply (RESP2 arrays of
// [id, unix time, µs, args, ...]). A malformed entry fails the reply.
func parseSlowlog(reply any) ([]slowEntry, error) {
	rows, ok := reply.([]any)
	if !ok {
		return nil, fmt.Errorf("slowlog get: reply is %T, not an array", reply)
	}
	out := make([]slowEntry, 0, len(rows))
	for _, r := range rows {
		f, ok := r.([]any)
		if !ok || len(f) < 3 {
			return nil, fmt.Errorf("slowlog get: malformed entry (%T)", r)
		}
		var e slowEntry
		for i, p := range []*int64{&e.id, &e.unix, &e.micros} {
			if *p, ok = f[i].(int64); !ok || *p < 0 {
				return nil, fmt.Errorf("slowlog get: field %d is %T", i, f[i])
			}
		}
		if len(f) > 3 {
			e.forks = forkingCommand(f[3])
		}
		if e.micros > maxEntryMicros {
			return nil, fmt.Errorf("slowlog get: entry of %d µs is out of range", e.micros)
		}
		out = append(out, e)
	}
	return out, nil
}

// slowEvidence places entry on the prober's clock: logged at second s of
// the server, the command ended within [s, s+1) and began its duration
// before. offset is the server's clock minus the prober's.
func slowEvidence(e slowEntry, offset int64) Evidence {
	d := time.Duration(e.micros) * time.Microsecond
	end := e.unix*int64(time.Second) - offset
	c := SlowCommand
	if e.forks {
		c = Fork
	}
	return Evidence{Cause: c, From: end - int64(d), To: end + int64(time.Second), Dur: d}
}

// largeEvidence places a COMMANDLOG large-request or large-reply entry on
// the prober's clock: a command of another client read or wrote that many
// bytes (its third field is a size, not a time) in the second it was
// logged. Copying megabytes is the main thread's time, but how much the
// log does not say: a state of that second, a coincidence (Decide's step
// 3) under slow_command, which a timed cause beats.
func largeEvidence(e slowEntry, offset int64) Evidence {
	at := e.unix*int64(time.Second) - offset
	return Evidence{Cause: SlowCommand, From: at, To: at + int64(time.Second)}
}

// latencySpike is one sample of a LATENCY event class: when (whole Unix
// seconds of the server, as the spike ended) and how long, in ms.
type latencySpike struct {
	event     string
	unix, ms  int64
	maxMillis int64 // LATENCY LATEST only
}

// parseLatencyLatest reads LATENCY LATEST ([event, unix, latest ms, max ms,
// ...] each). At most maxEvents classes are kept.
func parseLatencyLatest(reply any) ([]latencySpike, error) {
	rows, ok := reply.([]any)
	if !ok {
		return nil, fmt.Errorf("latency latest: reply is %T, not an array", reply)
	}
	out := make([]latencySpike, 0, min(len(rows), maxEvents))
	for _, r := range rows {
		f, ok := r.([]any)
		if !ok || len(f) < 4 {
			return nil, fmt.Errorf("latency latest: malformed entry (%T)", r)
		}
		var s latencySpike
		if s.event, ok = f[0].(string); !ok {
			return nil, fmt.Errorf("latency latest: event is %T", f[0])
		}
		for i, p := range []*int64{&s.unix, &s.ms, &s.maxMillis} {
			if *p, ok = f[i+1].(int64); !ok || *p < 0 {
				return nil, fmt.Errorf("latency latest: field %d is %T", i+1, f[i+1])
			}
		}
		if len(out) < maxEvents {
			out = append(out, s)
		}
	}
	return out, nil
}

// maxEvents bounds the LATENCY event classes followed (Redis 7 has about 20).
const maxEvents = 64

// parseLatencyHistory reads LATENCY HISTORY event ([unix, ms] pairs, at
// most 160 a class).
func parseLatencyHistory(event string, reply any) ([]latencySpike, error) {
	rows, ok := reply.([]any)
	if !ok {
		return nil, fmt.Errorf("latency history: reply is %T, not an array", reply)
	}
	out := make([]latencySpike, 0, len(rows))
	for _, r := range rows {
		f, ok := r.([]any)
		if !ok || len(f) < 2 {
			return nil, fmt.Errorf("latency history: malformed entry (%T)", r)
		}
		s := latencySpike{event: event}
		if s.unix, ok = f[0].(int64); !ok {
			return nil, fmt.Errorf("latency history: time is %T", f[0])
		}
		if s.ms, ok = f[1].(int64); !ok || s.ms < 0 {
			return nil, fmt.Errorf("latency history: latency is %T", f[1])
		}
		out = append(out, s)
	}
	return out, nil
}

// spikeEvidence places a spike on the prober's clock, as slowEvidence does.
func spikeEvidence(s latencySpike, offset int64) Evidence {
	d := time.Duration(s.ms) * time.Millisecond
	end := s.unix*int64(time.Second) - offset
	return Evidence{Cause: latencyEventCause(s.event), From: end - int64(d), To: end + int64(time.Second), Dur: d}
}
