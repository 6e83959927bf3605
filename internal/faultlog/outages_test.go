package faultlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// lineRecorder keeps what was logged as "LEVEL msg key=value ...", the
// attributes sorted by key, so a test compares whole lines.
type lineRecorder struct {
	attrs []slog.Attr
	out   *[]string
	mu    *sync.Mutex
}

func newLineRecorder() lineRecorder { return lineRecorder{out: &[]string{}, mu: &sync.Mutex{}} }

func (h lineRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (h lineRecorder) Handle(_ context.Context, r slog.Record) error {
	var kv []string
	for _, a := range h.attrs {
		kv = append(kv, a.Key+"="+a.Value.String())
	}
	r.Attrs(func(a slog.Attr) bool {
		kv = append(kv, a.Key+"="+a.Value.String())
		return true
	})
	slices.Sort(kv)
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.out = append(*h.out, strings.TrimSpace(r.Level.String()+" "+r.Message+" "+strings.Join(kv, " ")))
	return nil
}

func (h lineRecorder) WithAttrs(as []slog.Attr) slog.Handler {
	return lineRecorder{attrs: append(slices.Clone(h.attrs), as...), out: h.out, mu: h.mu}
}

func (h lineRecorder) WithGroup(string) slog.Handler { return h }

func (h lineRecorder) lines() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(*h.out)
}

// ev is one event of a trace: at ms after the start, node (a name of
// nodes) fails with err, or answers when err is nil; a flush is what the
// timer does.
type ev struct {
	ms   int
	node string
	err  error
}

func flush(ms int) ev { return ev{ms: ms} }

var (
	errRefused = errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")
	errTimeout = errors.New("read tcp 127.0.0.1:6379: i/o timeout")
)

// nodes "a".."z" of server s1 unless named "server/target".
func traceNode(o *Outages, log *slog.Logger, name string) *Node {
	server, target := "s1", name
	if i := strings.IndexByte(name, '/'); i >= 0 {
		server, target = name[:i], name[i+1:]
	}
	return o.Node(log.With("target", target), server, target)
}

// every returns, for each node, a failure (or an answer) at ms.
func every(ms int, err error, names ...string) []ev {
	var out []ev
	for _, n := range names {
		out = append(out, ev{ms: ms, node: n, err: err})
	}
	return out
}

func names(prefix string, n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("%s%02d", prefix, i))
	}
	return out
}

func trace(parts ...[]ev) []ev {
	var out []ev
	for _, p := range parts {
		out = append(out, p...)
	}
	slices.SortStableFunc(out, func(a, b ev) int { return a.ms - b.ms })
	return out
}

func TestOutagesLines(t *testing.T) {
	twenty := names("t", 20)
	var stallServers []string
	for i := range 50 {
		stallServers = append(stallServers, fmt.Sprintf("s%02d/t%02d", i, i))
	}
	for _, tc := range []struct {
		name  string
		trace []ev
		want  []string
	}{
		{"healthy", trace(every(0, nil, "a"), every(100, nil, "a"), []ev{flush(10000)}), nil},
		{"one node down then up", trace(
			every(0, errRefused, "a"), every(100, errTimeout, "a"), every(5000, nil, "a"), []ev{flush(20000)}),
			[]string{
				"WARN redis down err=" + errRefused.Error() + " noticed_by=ping server=s1 target=a",
				"INFO redis recovered after_failures=2 down_for=5s last_error=" + errTimeout.Error() + " server=s1 target=a",
			}},
		{"every source of a node is one spell", trace(
			[]ev{{0, "a", errRefused}, {10, "a", errRefused}, {500, "a", errRefused}, {3000, "a", nil}}, []ev{flush(20000)}),
			[]string{
				"WARN redis down err=" + errRefused.Error() + " noticed_by=ping server=s1 target=a",
				"INFO redis recovered after_failures=3 down_for=3s last_error=" + errRefused.Error() + " server=s1 target=a",
			}},
		{"twenty nodes of a server are one line down and one back", trace(
			every(0, errRefused, twenty[:10]...), every(300, errRefused, twenty[10:]...),
			every(4000, nil, twenty[:15]...), every(4500, nil, twenty[15:]...), []ev{flush(20000)}),
			[]string{
				"WARN redis down err=" + errRefused.Error() + " noticed_by=ping server=s1 target_names=t00,t01,t02,t03,t04 (+15 more) targets_down=20",
				"INFO redis recovered after_failures=1 down_for=4s last_error=" + errRefused.Error() + " server=s1 target_names=t00,t01,t02,t03,t04 (+15 more) targets_up=20",
			}},
		{"a failure soon after the answer is the same spell", trace(
			every(0, errRefused, "a"), every(3000, nil, "a"), every(3500, errRefused, "a"), every(3600, nil, "a"), []ev{flush(20000)}),
			[]string{
				"WARN redis down err=" + errRefused.Error() + " noticed_by=ping server=s1 target=a",
				"INFO redis recovered after_failures=2 down_for=3.6s last_error=" + errRefused.Error() + " server=s1 target=a",
			}},
		{"down again after the grace is a new spell", trace(
			every(0, errRefused, "a"), every(3000, nil, "a"), every(9000, errRefused, "a"), every(12000, nil, "a"), []ev{flush(30000)}),
			[]string{
				"WARN redis down err=" + errRefused.Error() + " noticed_by=ping server=s1 target=a",
				"INFO redis recovered after_failures=1 down_for=3s last_error=" + errRefused.Error() + " server=s1 target=a",
				"WARN redis down err=" + errRefused.Error() + " noticed_by=ping server=s1 target=a",
				"INFO redis recovered after_failures=1 down_for=3s last_error=" + errRefused.Error() + " server=s1 target=a",
			}},
		{"over before its line is one brief line", trace(
			every(0, errTimeout, "a"), every(100, nil, "a"), []ev{flush(20000)}),
			[]string{"INFO redis failed briefly err=" + errTimeout.Error() + " failures=1 for=100ms server=s1 target=a"}},
		{"brief failures again and again say so once in a while", trace(
			every(0, errTimeout, "a"), every(100, nil, "a"),
			every(15000, errTimeout, "a"), every(15100, nil, "a"),
			every(30000, errTimeout, "a"), every(30100, nil, "a"), []ev{flush(40000)}),
			[]string{
				"INFO redis failed briefly err=" + errTimeout.Error() + " failures=1 for=100ms server=s1 target=a",
				"DEBUG redis failed briefly err=" + errTimeout.Error() + " failures=1 server=s1 target=a",
				"DEBUG redis failed briefly err=" + errTimeout.Error() + " failures=1 server=s1 target=a",
			}},
		{"down soon after a brief failure", trace(
			every(0, errTimeout, "a"), every(100, nil, "a"), every(1500, errRefused, "a"), every(6000, nil, "a"), []ev{flush(20000)}),
			[]string{
				"INFO redis failed briefly err=" + errTimeout.Error() + " failures=1 for=100ms server=s1 target=a",
				"WARN redis down err=" + errRefused.Error() + " noticed_by=ping server=s1 target=a",
				"INFO redis recovered after_failures=1 down_for=4.5s last_error=" + errRefused.Error() + " server=s1 target=a",
			}},
		{"two servers down together, a line each", trace(
			every(0, errRefused, "s1/a", "s1/b", "s2/c"), every(5000, nil, "s1/a", "s1/b", "s2/c"), []ev{flush(20000)}),
			[]string{
				"WARN redis down err=" + errRefused.Error() + " noticed_by=ping server=s1 target_names=a,b targets_down=2",
				"WARN redis down err=" + errRefused.Error() + " noticed_by=ping server=s2 target=c",
				"INFO redis recovered after_failures=1 down_for=5s last_error=" + errRefused.Error() + " server=s1 target_names=a,b targets_up=2",
				"INFO redis recovered after_failures=1 down_for=5s last_error=" + errRefused.Error() + " server=s2 target=c",
			}},
		{"nodes failing apart are lines apart, back together one", trace(
			every(0, errRefused, "a"), every(5000, errRefused, "b"), every(10000, nil, "a", "b"), []ev{flush(20000)}),
			[]string{
				"WARN redis down err=" + errRefused.Error() + " noticed_by=ping server=s1 target=a",
				"WARN redis down err=" + errRefused.Error() + " noticed_by=ping server=s1 target=b",
				// Back together: one line.
				"INFO redis recovered after_failures=1 down_for=10s last_error=" + errRefused.Error() + " server=s1 target_names=a,b targets_up=2",
			}},
		{"a host stall times out every probe at once: one line", trace(
			every(0, errTimeout, stallServers...), every(150, nil, stallServers...), []ev{flush(20000)}),
			[]string{"INFO redis failed briefly err=" + errTimeout.Error() + " failures=1 for=150ms server_names=s00,s01,s02,s03,s04 (+45 more) servers=50 targets=50"}},
		{"a long stall: one line down, one back", trace(
			every(0, errTimeout, stallServers...), every(2500, nil, stallServers...), []ev{flush(20000)}),
			[]string{
				"WARN redis down err=" + errTimeout.Error() + " noticed_by=ping server_names=s00,s01,s02,s03,s04 (+45 more) servers=50 targets_down=50",
				"INFO redis recovered after_failures=1 down_for=2.5s last_error=" + errTimeout.Error() + " server_names=s00,s01,s02,s03,s04 (+45 more) servers=50 targets_up=50",
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Date(2026, 12, 7, 20, 0, 0, 0, time.UTC)
			h := newLineRecorder()
			log := slog.New(h)
			o := newOutages(log, nil) // no timer: the trace's flushes are the timer's
			nodes := map[string]*Node{}
			for _, e := range tc.trace {
				now := start.Add(time.Duration(e.ms) * time.Millisecond)
				if e.node == "" {
					o.Flush(now)
					continue
				}
				n := nodes[e.node]
				if n == nil {
					n = traceNode(o, log, e.node)
					nodes[e.node] = n
				}
				if e.err != nil {
					n.Fail("ping", e.err, now)
				} else {
					n.Answered(now)
				}
			}
			if got := h.lines(); !slices.Equal(got, tc.want) {
				t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			for name, n := range nodes {
				if n.Failing() {
					t.Errorf("node %s still in a spell at the end", name)
				}
			}
		})
	}
}

// The lines wait for the nodes failing together; a timer flushes them when
// no further event comes, at the time it is due.
func TestOutagesTimerFlushes(t *testing.T) {
	start := time.Date(2026, 12, 7, 20, 0, 0, 0, time.UTC)
	now := start
	h := newLineRecorder()
	o := newOutages(slog.New(h), func() time.Time { return now })
	var timers []time.Duration
	var fire []func()
	o.after = func(d time.Duration, f func()) { timers, fire = append(timers, d), append(fire, f) }
	a := o.Node(slog.New(h), "s1", "a")
	a.Fail("ping", errRefused, now)
	a.Fail("get", errRefused, now.Add(100*time.Millisecond))
	if len(h.lines()) != 0 || len(timers) != 1 || timers[0] != Window {
		t.Fatalf("before the window: lines %q, timers %v; want none and one of %v", h.lines(), timers, Window)
	}
	now = start.Add(Window)
	fire[0]()
	if got := h.lines(); len(got) != 1 || !strings.HasPrefix(got[0], "WARN redis down") || !strings.Contains(got[0], "noticed_by=ping,get") {
		t.Fatalf("after the window: %q", got)
	}
	now = start.Add(5 * time.Second)
	a.Answered(now)
	if d := timers[len(timers)-1]; d != Grace+Window {
		t.Fatalf("timer after the answer set for %v, want %v", d, Grace+Window)
	}
	now = now.Add(Grace + Window)
	fire[len(fire)-1]()
	if got := h.lines(); len(got) != 2 || !strings.HasPrefix(got[1], "INFO redis recovered") {
		t.Fatalf("after the grace: %q", got)
	}
	if a.Failing() {
		t.Error("node still failing after its recovery")
	}
}

// A line due after a flush that an event made before the timer's is still
// flushed by a timer.
func TestOutagesTimerAfterAnEventsFlush(t *testing.T) {
	start := time.Date(2026, 12, 7, 20, 0, 0, 0, time.UTC)
	now := start
	h := newLineRecorder()
	o := newOutages(slog.New(h), func() time.Time { return now })
	var fire []func()
	o.after = func(_ time.Duration, f func()) { fire = append(fire, f) }
	a, b := o.Node(slog.New(h), "s1", "a"), o.Node(slog.New(h), "s2", "b")
	a.Fail("ping", errRefused, now)
	now = start.Add(Window + Window/2)
	b.Fail("ping", errRefused, now) // a's line is out, b's owed
	fire[0]()                       // late: nothing due, b's timer set
	if len(fire) != 2 {
		t.Fatalf("%d timers set, want 2 (a's, then b's)", len(fire))
	}
	now = now.Add(Window)
	fire[1]()
	if got := h.lines(); len(got) != 2 || !strings.Contains(got[1], "server=s2") {
		t.Errorf("lines %q, want a's and b's", got)
	}
}

// A node that stops while down is forgotten: no line waits for it.
func TestOutagesCloseForgets(t *testing.T) {
	start := time.Now()
	h := newLineRecorder()
	o := newOutages(slog.New(h), nil)
	a := o.Node(slog.New(h), "s1", "a")
	a.Fail("ping", errRefused, start)
	a.Close()
	o.Flush(start.Add(time.Minute))
	if got := h.lines(); len(got) != 0 || a.Failing() || len(o.spells) != 0 {
		t.Errorf("lines %q, failing %v, spells %d after Close", got, a.Failing(), len(o.spells))
	}
}

// A node's probe sends its failures Redis did not answer to the node's
// spell, and keeps those it answered (OOM) as its own.
func TestNodeProbeSharesTheSpell(t *testing.T) {
	h := newLineRecorder()
	o := newOutages(slog.New(h), nil)
	n := o.Node(slog.New(h), "s1", "a")
	f := NodeProbe(slog.New(h), n)
	f.Observe("ping", errRefused, false)
	f.Observe("get", errRefused, false)
	if !n.Failing() {
		t.Fatal("the node is not in a spell after unanswered failures")
	}
	f.Observe("set", replyErr("OOM command not allowed"), true)
	o.Flush(time.Now().Add(time.Hour))
	got := strings.Join(h.lines(), "\n")
	if strings.Count(got, "redis failed briefly") != 1 || strings.Count(got, "probe failing") != 1 || strings.Contains(got, "probe failing command=ping") {
		t.Errorf("lines:\n%s\nwant one brief spell of the node and one OOM line of the probe", got)
	}
}

// The success path of a node's probe takes no lock and allocates nothing
// while nothing fails.
func TestNodeProbeSuccessDoesNotAllocate(t *testing.T) {
	f := NodeProbe(nil, NewOutages(nil).Node(nil, "s1", "a"))
	if n := testing.AllocsPerRun(1000, func() { f.Observe("ping", nil, true) }); n != 0 {
		t.Errorf("%v allocations per success", n)
	}
}
