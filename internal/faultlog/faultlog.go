// Package faultlog logs a repeating fault once, not once per attempt, and a
// recovery when it is over. One Log watches the named sources of one node:
// the probe's commands and its connect probe (Probe), or a target's
// collectors (Collectors).
package faultlog

import (
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Log remembers which of its sources are failing and with what error, and
// logs a failure line and a recovery line per spell. The two styles differ
// in what a spell is and in when a failure is worth a line:
//
//   - Probe: one spell across every source. Each distinct error is logged
//     the first time it is seen (again only after RepeatEvery, however often
//     it comes and goes in between, and at most MaxDistinct at once). A
//     spell of the server not answering (down, unreachable, refusing the
//     connection) is over at the first answered request of any source; a
//     failure the server answered (OOM on writes while reads work) is over
//     when that source works again. The recovery is logged, if the spell
//     logged anything, when no source is failing. So a fault that hits only
//     some commands is one spell, not a failure and a recovery per round;
//     two faults that alternate are two lines, not two per round; a server
//     that answers every other request with garbage is one failure and one
//     recovery line in five minutes, not one line per probe.
//   - Collectors: each source its own spell, logged when its error changes
//     and when it works again (at debug); an error that is "no data here"
//     (the quiet error) is logged at debug, anything else at warn.
//
// Observe's success path is one atomic load while nothing fails.
type Log struct {
	log     *slog.Logger
	style   style
	node    *Node       // Probe: the node's spell, which takes the failures Redis did not answer
	failing atomic.Bool // some source is failing

	mu   sync.Mutex
	down map[string]fault  // failing sources
	seen map[string]*entry // Probe: distinct errors logged lately
	// Probe: the spell under way.
	logged bool   // it printed a failure line
	last   string // its last error
	total  int    // its failures
}

type fault struct {
	answered bool   // the server answered the failure
	last     string // the source's last error text
}

type entry struct {
	at      time.Time
	repeats int
}

// style is what a spell is and how it reads in the log.
type style struct {
	shared    bool   // one spell across sources (Probe), else one per source
	key       string // the attribute naming the source
	failing   string
	recovered string
	quiet     error // Collectors: errors.Is(err, quiet) is logged at debug, as quietMsg
	quietMsg  string
}

// RepeatEvery is how often a Probe log logs a fault that goes on again.
const RepeatEvery = 5 * time.Minute

// MaxDistinct bounds the errors a Probe log remembers at once; further new
// ones are counted, not logged, so error text with changing parts cannot
// flood the log.
const MaxDistinct = 16

// Probe returns the log of one node's probe: "probe failing" at warn with
// the command, the error and whether Redis answered it; "probe recovered"
// at info with the spell's failures and last error.
func Probe(log *slog.Logger) *Log {
	return newLog(log, style{shared: true, key: "command", failing: "probe failing", recovered: "probe recovered"})
}

// Collectors returns the log of a set of collectors: "collector failed" at
// warn, or "collector has no data here" at debug for an error that is
// quiet; "collector recovered" at debug.
func Collectors(log *slog.Logger, quiet error) *Log {
	return newLog(log, style{key: "collector", failing: "collector failed", recovered: "collector recovered",
		quiet: quiet, quietMsg: "collector has no data here"})
}

// NodeProbe is Probe for a node whose spells of not answering are node's
// (shared with its collectors and coalesced with other nodes'): its own
// lines are of the failures Redis answered.
func NodeProbe(log *slog.Logger, node *Node) *Log {
	f := Probe(log)
	f.node = node
	return f
}

func newLog(log *slog.Logger, st style) *Log {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Log{log: log, style: st, down: map[string]fault{}, seen: map[string]*entry{}}
}

// Observe takes one outcome of source what: a nil err is a success.
// answered says whether the server answered the failure (an error reply)
// rather than not at all; only a Probe log's spells use it.
func (f *Log) Observe(what string, err error, answered bool) {
	if f.node != nil {
		if err != nil && !answered {
			f.node.Fail(what, err, time.Now())
			return
		}
		if f.node.Failing() {
			f.node.Answered(time.Now())
		}
	}
	if err == nil {
		if f.failing.Load() {
			f.recover(what)
		}
		return
	}
	msg := err.Error()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failing.Store(true)
	prev, was := f.down[what]
	f.down[what] = fault{answered: answered, last: msg}
	if !f.style.shared {
		if was && prev.last == msg {
			return
		}
		if f.style.quiet != nil && errors.Is(err, f.style.quiet) {
			f.log.Debug(f.style.quietMsg, f.style.key, what, "err", msg)
			return
		}
		f.log.Warn(f.style.failing, f.style.key, what, "err", msg)
		return
	}
	f.last = msg
	f.total++
	now := time.Now()
	e := f.seen[msg]
	if e != nil && now.Sub(e.at) < RepeatEvery {
		e.repeats++
		return
	}
	if e == nil && len(f.seen) >= MaxDistinct {
		for m, old := range f.seen {
			if now.Sub(old.at) >= RepeatEvery {
				delete(f.seen, m)
			}
		}
		if len(f.seen) >= MaxDistinct {
			return
		}
	}
	attrs := []any{f.style.key, what, "err", msg, "redis_answered", answered}
	if e != nil {
		attrs = append(attrs, "repeated", e.repeats)
	}
	f.log.Warn(f.style.failing, attrs...)
	f.seen[msg] = &entry{at: now}
	f.logged = true
}

// recover takes a success of what while some source is failing.
func (f *Log) recover(what string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.style.shared {
		if _, ok := f.down[what]; ok {
			delete(f.down, what)
			f.log.Debug(f.style.recovered, f.style.key, what)
		}
		if len(f.down) == 0 {
			f.failing.Store(false)
		}
		return
	}
	if _, ok := f.down[what]; !ok && !f.unanswered() {
		return
	}
	delete(f.down, what)
	// An answer proves the server reachable: failures it did not answer
	// (of any source) are over.
	for src, ft := range f.down {
		if !ft.answered {
			delete(f.down, src)
		}
	}
	if len(f.down) == 0 && f.failing.Swap(false) {
		if f.logged {
			f.log.Info(f.style.recovered, "after_failures", f.total, "last_error", f.last)
		}
		f.last, f.total, f.logged = "", 0, false
	}
}

func (f *Log) unanswered() bool {
	for _, ft := range f.down {
		if !ft.answered {
			return true
		}
	}
	return false
}

// Logger is the logger f writes to (a discarding one when it was given
// nil), for a user's one-off lines beside its faults.
func (f *Log) Logger() *slog.Logger { return f.log }
