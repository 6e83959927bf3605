package explain

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// Nodes probing one local server share its /proc samples: one read an
// interval whichever node asks; every node sees the same evidence, not a
// copy, for as long as the longest keep of them; a sample is forgotten
// after that; a process that is gone is dropped, and its nodes still see
// what it said.
func TestShareSamplesAServerOnce(t *testing.T) {
	sh := NewShare()
	self := "/proc/" + strconv.Itoa(os.Getpid())
	a := procSampler{pid: os.Getpid(), dir: self}
	b := a
	var ca, cb procCursor
	now := time.Now().UnixNano()
	step := int64(ProcInterval)
	keep := 20 * step

	sh.take(&a, &ca, now, keep)
	sh.take(&b, &cb, now, keep/2)
	sp := sh.procs[os.Getpid()]
	if sp == nil || sp.seq != 1 || len(sh.procs) != 1 {
		t.Fatalf("two nodes at once: %d samplers, seq %v; want one sample", len(sh.procs), sp)
	}
	if sp.keep != keep {
		t.Errorf("kept %d ns, want the longest keep of the nodes, %d", sp.keep, keep)
	}
	// A sample's evidence, as the sampler would give it: both nodes see
	// the one slice.
	sp.seq++
	sp.ev = append(sp.ev, sharedSample{to: now + step, ev: []Evidence{{Cause: RedisCPU, From: now, To: now + step, Dur: time.Millisecond, Spread: true}}})
	sp.at = now + step
	va, vb := sh.take(&a, &ca, now+step, keep), sh.take(&b, &cb, now+step, keep)
	if len(va[0]) != 1 || len(vb[0]) != 1 || va[0][0].ev[0].Cause != RedisCPU {
		t.Fatalf("views %v and %v, want the sample's run delay", va, vb)
	}
	if &va[0][0].ev[0] != &vb[0][0].ev[0] {
		t.Error("the nodes hold copies of the sample, want the Share's one")
	}
	// Half an interval later the shared sampler reads again, once.
	seq := sp.seq
	sh.take(&a, &ca, now+step+step/2, keep)
	sh.take(&b, &cb, now+step+step/2, keep)
	if sp.seq != seq+1 {
		t.Errorf("seq %d after two nodes half an interval on, want %d", sp.seq, seq+1)
	}
	// The sample's window ended keep ago: the next sample forgets it,
	// and a view taken before still holds it whole.
	old := va[0]
	later := now + step + keep
	if v := sh.take(&a, &ca, later, keep); len(v[0]) != 0 {
		t.Errorf("%d samples kept past keep", len(v[0]))
	}
	if old[0].ev[0].Cause != RedisCPU {
		t.Errorf("an older view changed under its node: %v", old)
	}
	sp.ev = append(sp.ev, sharedSample{to: later, ev: []Evidence{{Cause: Swap, From: later - step, To: later}}})
	// A process gone is dropped; its nodes still see what it said.
	sp.s.dir = "/proc/0-gone"
	sp.at = 0
	if v := sh.take(&a, &ca, later+step, keep); len(sh.procs) != 0 || len(v[0]) != 1 || v[0][0].ev[0].Cause != Swap {
		t.Errorf("gone: view %v, %d samplers left", v, len(sh.procs))
	}
	// A node not attached reads nothing.
	var none procSampler
	var cn procCursor
	if v := sh.take(&none, &cn, now, keep); v[0] != nil || v[1] != nil || len(sh.procs) != 0 {
		t.Errorf("unattached: %v", v)
	}
}

// The log reads of the whole process are bounded: a burst, then the rate.
func TestShareBoundsLogReads(t *testing.T) {
	sh := NewShare()
	now := time.Now()
	n := 0
	for range 2 * logReadBurst {
		if sh.allowLogRead(now) {
			n++
		}
	}
	if n != logReadBurst {
		t.Errorf("%d reads at once, want %d", n, logReadBurst)
	}
	now = now.Add(100 * time.Millisecond)
	n = 0
	for range logReadBurst {
		if sh.allowLogRead(now) {
			n++
		}
	}
	if want := logReadRate / 10; n != want {
		t.Errorf("%d reads 100 ms later, want %d", n, want)
	}
	var none *Share
	if !none.allowLogRead(now) {
		t.Error("a nil Share bounds reads")
	}
}

// While a node of a server had slow requests lately, the Share's one loop
// samples the server every ProcInterval between the nodes' ticks; it stops
// when no server is wanted any more, starts again on the next want, and
// the last Release stops it at once (goleak checks none is left).
func TestShareLoopSamplesWhileWanted(t *testing.T) {
	sh := NewShare()
	sh.Hold()
	own := procSampler{pid: os.Getpid(), dir: "/proc/" + strconv.Itoa(os.Getpid())}
	var cur procCursor
	sh.take(&own, &cur, time.Now().UnixNano(), int64(time.Minute))
	seq := func() uint64 {
		sh.mu.Lock()
		defer sh.mu.Unlock()
		return cur.sp.seq
	}
	running := func() bool {
		sh.mu.Lock()
		defer sh.mu.Unlock()
		return sh.stop != nil
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 5 s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if running() {
		t.Fatal("the loop runs with no server wanted")
	}
	// Wanted: it samples between the ticks; no longer wanted, it ends
	// itself and samples no more.
	from := seq()
	sh.want(&cur, time.Now().Add(time.Hour).UnixNano())
	if !running() {
		t.Fatal("a want did not start the loop")
	}
	waitFor("two samples of the loop", func() bool { return seq() >= from+2 })
	sh.mu.Lock()
	cur.sp.wanted = 0 // its node's slow requests are procHot old
	sh.mu.Unlock()
	waitFor("the loop ends once nothing is wanted", func() bool { return !running() })
	// Nothing samples it until the next want (a loop still running would
	// within an interval; a slow host cannot make this fail, only miss it).
	ended := seq()
	time.Sleep(3 * ProcInterval)
	if n := seq() - ended; n != 0 {
		t.Errorf("%d samples after the loop ended", n)
	}
	// Wanted again, for long: the last Release stops it.
	from = seq()
	sh.want(&cur, time.Now().Add(time.Hour).UnixNano())
	waitFor("samples again", func() bool { return seq() > from })
	sh.Release()
	if running() {
		t.Error("the loop runs after the last Release")
	}
	// A Share nobody holds samples only when asked.
	sh.want(&cur, time.Now().Add(time.Hour).UnixNano())
	if running() {
		t.Error("a want started the loop of a Share with no users")
	}
}
