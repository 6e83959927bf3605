package faultlog

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Outages are the spells of the process's nodes going down: a node that
// does not answer (refused, reset, EOF, timeout, its credentials refused)
// is down until it answers again, whichever of its probe, connect probe
// and collectors noticed, and the spell is one "redis down" line at warn
// and one "redis recovered" line at info. The lines wait a moment
// (Window) for the nodes that fail with it: nodes of one server are one
// line with their count, and more servers than MaxServerLines at once (a
// stall of the prober's own host times every probe out together) are one
// line for all. A spell that is over before its line is due is one
// "redis failed briefly" line at info, not a warning and a recovery.
//
// The engine makes one for the process and a Node of it for each node it
// runs. Every method takes the time it happens at, so a test replays a
// trace; a timer flushes the lines when nothing else happens.
type Outages struct {
	log   *slog.Logger
	now   func() time.Time
	after func(time.Duration, func()) // arms a flush; nil leaves flushing to the caller

	mu     sync.Mutex
	spells map[*Node]*spell
	due    time.Time // when the earliest owed line is due; zero when none is
	armed  time.Time // the earliest flush a timer is set for; zero when none
}

const (
	// Window is how long the first line of a batch waits for the nodes
	// failing (or recovering) with it, so they share its line.
	Window = time.Second
	// Grace is how long a node answers before its spell is over: a
	// failure within it belongs to the same spell. A go-redis pool gives
	// the dial error it met last for a while after the server is back,
	// so a collector can fail once more after the probe has recovered.
	Grace = 2 * time.Second
	// MaxServerLines is the most servers a batch names a line each; a
	// batch of more is one line.
	MaxServerLines = 3
	// maxNames bounds the names a line lists, and maxSources the sources
	// a spell remembers.
	maxNames   = 5
	maxSources = 8
)

// Node is one node's spell, shared by its probe and its collectors.
// Answered's path while the node is up is one atomic load.
type Node struct {
	o       *Outages
	log     *slog.Logger // the node's own lines (they carry its target and node)
	server  string
	name    string      // the node in a server's line
	failing atomic.Bool // in a spell (down, or answering within Grace)

	lastBrief time.Time // its last "failed briefly" logged; o.mu guards it
}

type spell struct {
	since    time.Time // the first failure
	answered time.Time // zero while down; else the answer that may end it
	first    string    // the first error
	last     string
	by       []string // the sources that noticed, in order
	failures int
	told     told
}

// told is what a spell's lines said so far.
type told int

const (
	toldNothing told = iota
	toldDown         // "redis down"
	toldBrief        // "redis failed briefly", or nothing at debug
)

// NewOutages returns the outages of a process, logging to log; its timer
// flushes the lines that are due.
func NewOutages(log *slog.Logger) *Outages {
	o := newOutages(log, time.Now)
	o.after = func(d time.Duration, f func()) { time.AfterFunc(d, f) }
	return o
}

func newOutages(log *slog.Logger, now func() time.Time) *Outages {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Outages{log: log, now: now, spells: map[*Node]*spell{}}
}

// Node returns the spell of a node of server (the address it is reached
// at, without credentials), logging its own lines to log; name is what a
// server's line calls it.
func (o *Outages) Node(log *slog.Logger, server, name string) *Node {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Node{o: o, log: log, server: server, name: name}
}

// Fail takes a failure of source that Redis did not answer.
func (n *Node) Fail(source string, err error, now time.Time) {
	msg := err.Error()
	o := n.o
	o.mu.Lock()
	defer o.mu.Unlock()
	// What was due before this failure is told as it stood (the timer
	// may be late).
	o.flushIfDue(now)
	sp := o.spells[n]
	if sp == nil || sp.told == toldBrief {
		// A node down again after a brief failure is a spell of its own.
		sp = &spell{since: now, first: msg}
		o.spells[n] = sp
		n.failing.Store(true)
		o.owe(now, now.Add(Window))
	}
	sp.answered = time.Time{}
	sp.failures++
	sp.last = msg
	if len(sp.by) < maxSources && !slices.Contains(sp.by, source) {
		sp.by = append(sp.by, source)
	}
}

// Answered takes an answer of the node (a reply, an error reply too).
func (n *Node) Answered(now time.Time) {
	if !n.failing.Load() {
		return
	}
	o := n.o
	o.mu.Lock()
	defer o.mu.Unlock()
	o.flushIfDue(now)
	if sp := o.spells[n]; sp != nil && sp.answered.IsZero() {
		sp.answered = now
		o.owe(now, now.Add(Grace+Window))
	}
}

// Failing says whether the node is in a spell.
func (n *Node) Failing() bool { return n.failing.Load() }

// Close forgets the node's spell, if any: the node has stopped, and no
// recovery of it will come.
func (n *Node) Close() {
	o := n.o
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.spells, n)
	n.failing.Store(false)
}

// Flush logs the lines due at now.
func (o *Outages) Flush(now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.armed = time.Time{}
	o.flushIfDue(now)
	if !o.due.IsZero() {
		// A flush on an event may have moved the due time past the
		// timer that calls this one.
		o.arm(now, o.due)
	}
}

// event is when a spell's next line is owed: its start, or its end
// (Grace after the answer that ended it); ok is false when it owes none
// (down, and told so).
func (sp *spell) event() (time.Time, bool) {
	if !sp.answered.IsZero() {
		return sp.answered.Add(Grace), true
	}
	return sp.since, sp.told == toldNothing
}

// owe notes that a line may be due at due. o.mu is held.
func (o *Outages) owe(now, due time.Time) {
	if o.due.IsZero() || due.Before(o.due) {
		o.due = due
	}
	o.arm(now, o.due)
}

// flushIfDue logs the lines due at now: once the earliest owed line has
// waited Window, every line owed by now goes out together. o.mu is held.
func (o *Outages) flushIfDue(now time.Time) {
	if o.due.IsZero() || o.due.After(now) {
		return
	}
	var down, brief, back, over []*Node
	for n, sp := range o.spells {
		e, ok := sp.event()
		switch {
		case !ok:
		case sp.answered.IsZero():
			down = append(down, n)
		case sp.told == toldNothing:
			// Answered before its first line: over, or as good as.
			brief = append(brief, n)
		case !e.After(now) && sp.told == toldDown:
			back = append(back, n)
		}
		if ok && !sp.answered.IsZero() && !e.After(now) {
			over = append(over, n)
		}
	}
	o.tell(slog.LevelWarn, "redis down", down, "targets_down", func(n *Node, sp *spell) []any {
		sp.told = toldDown
		return []any{"err", sp.first, "noticed_by", strings.Join(sp.by, ",")}
	})
	var briefs []*Node
	for _, n := range brief {
		sp := o.spells[n]
		sp.told = toldBrief
		// A node that fails briefly again and again (a collector whose
		// reads time out while the probe is answered) says so once in a
		// while.
		if !n.lastBrief.IsZero() && now.Sub(n.lastBrief) < RepeatEvery {
			n.log.Debug("redis failed briefly", "server", n.server, "err", sp.first, "failures", sp.failures)
			continue
		}
		n.lastBrief = now
		briefs = append(briefs, n)
	}
	o.tell(slog.LevelInfo, "redis failed briefly", briefs, "targets", func(n *Node, sp *spell) []any {
		return []any{"err", sp.first, "failures", sp.failures, "for", sp.answered.Sub(sp.since).Round(time.Millisecond)}
	})
	o.tell(slog.LevelInfo, "redis recovered", back, "targets_up", func(n *Node, sp *spell) []any {
		return []any{"after_failures", sp.failures, "down_for", sp.answered.Sub(sp.since).Round(time.Millisecond), "last_error", sp.last}
	})
	for _, n := range over {
		delete(o.spells, n)
		n.failing.Store(false)
	}
	// What is left owes its lines later.
	o.due = time.Time{}
	for _, sp := range o.spells {
		if e, ok := sp.event(); ok {
			o.owe(now, e.Add(Window))
		}
	}
}

// tell logs one kind of line for nodes: a node's own line when it is the
// only one of its server, a server's line with the count of its nodes,
// or, for more servers than MaxServerLines, one line for all. attrs gives
// a node's attributes (and may update its spell); count names the count.
func (o *Outages) tell(level slog.Level, msg string, nodes []*Node, count string, attrs func(*Node, *spell) []any) {
	if len(nodes) == 0 {
		return
	}
	slices.SortFunc(nodes, func(a, b *Node) int { return cmp.Or(cmp.Compare(a.server, b.server), cmp.Compare(a.name, b.name)) })
	var servers [][]*Node // nodes by server, in order
	for i, n := range nodes {
		if i == 0 || n.server != nodes[i-1].server {
			servers = append(servers, nil)
		}
		servers[len(servers)-1] = append(servers[len(servers)-1], n)
	}
	if len(servers) > MaxServerLines {
		names := make([]string, len(servers))
		for i, s := range servers {
			names[i] = s[0].server
		}
		a := attrs(nodes[0], o.spells[nodes[0]])
		for _, n := range nodes[1:] {
			attrs(n, o.spells[n])
		}
		o.log.Log(context.Background(), level, msg, append([]any{"servers", len(servers), count, len(nodes), "server_names", list(names)}, a...)...)
		return
	}
	for _, s := range servers {
		if len(s) == 1 {
			n := s[0]
			n.log.Log(context.Background(), level, msg, append([]any{"server", n.server}, attrs(n, o.spells[n])...)...)
			continue
		}
		names := make([]string, len(s))
		for i, n := range s {
			names[i] = n.name
		}
		a := attrs(s[0], o.spells[s[0]])
		for _, n := range s[1:] {
			attrs(n, o.spells[n])
		}
		o.log.Log(context.Background(), level, msg, append([]any{"server", s[0].server, count, len(s), "target_names", list(names)}, a...)...)
	}
}

// list joins the first few names and counts the rest.
func list(names []string) string {
	if len(names) <= maxNames {
		return strings.Join(names, ",")
	}
	return fmt.Sprintf("%s (+%d more)", strings.Join(names[:maxNames], ","), len(names)-maxNames)
}

// arm sets a timer to flush at due, unless one is set for no later.
// o.mu is held.
func (o *Outages) arm(now, due time.Time) {
	if o.after == nil || (!o.armed.IsZero() && !o.armed.After(due)) {
		return
	}
	o.armed = due
	o.after(due.Sub(now), func() { o.Flush(o.now()) })
}
