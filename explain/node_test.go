package explain

import (
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/redis-prober/redis-prober/internal/nodeid"
	"github.com/redis-prober/redis-prober/prober"
)

// clock is a settable clock for a Node.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newTestNode(cfg Config) (*Node, *clock) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	n := NewNode(cfg)
	n.now = c.now
	return n, c
}

// TestTapTimesRequests: a request with a client delay ended that long
// before it was recorded and was kernel-timed; one without was timed by
// the prober's clock. Fast requests and error replies wait for nothing.
func TestTapTimesRequests(t *testing.T) {
	t.Parallel()
	n, c := newTestNode(Config{Threshold: 10 * time.Millisecond})
	rec := n.Tap(prober.NopRecorder{})
	rec.Record(0, prober.ResultOK, 2*time.Millisecond)
	rec.Record(0, prober.ResultError, time.Second)
	if n.Pending() {
		t.Fatal("a fast request or an error reply waits")
	}
	rec.RecordClientDelay(300 * time.Microsecond)
	rec.Record(0, prober.ResultOK, 40*time.Millisecond)
	rec.Record(1, prober.ResultTimeout, time.Second)
	now := c.now().UnixNano()
	n.mu.Lock()
	got := append([]pendingReq(nil), n.pending...)
	n.mu.Unlock()
	if len(got) != 2 {
		t.Fatalf("pending %+v", got)
	}
	if got[0].End != now-int64(300*time.Microsecond) || got[0].UserClock || got[0].Latency != 40*time.Millisecond {
		t.Errorf("stamped request %+v", got[0])
	}
	if got[1].End != now || !got[1].UserClock {
		t.Errorf("timeout %+v: want the prober's clock, ending now", got[1])
	}
}

// TestSettle: a request is decided once the sources were read past its
// end (or it waited decideBy), with the evidence there is then; the counts,
// the timeline and the unexplained share follow.
func TestSettle(t *testing.T) {
	t.Parallel()
	n, c := newTestNode(Config{Threshold: 10 * time.Millisecond})
	rec := n.Tap(prober.NopRecorder{})
	t0 := c.now().UnixNano()
	rec.RecordClientDelay(0)
	rec.Record(0, prober.ResultOK, 50*time.Millisecond) // ends at t0
	c.add(time.Second)
	rec.RecordClientDelay(0)
	rec.Record(0, prober.ResultOK, 20*time.Millisecond) // ends at t0+1s
	n.addEvidence(Evidence{Cause: SlowCommand, From: t0 - 100*ms, To: t0 + 10*ms, Dur: 45 * time.Millisecond})

	n.Settle(t0 + 500*ms)
	if got := n.Counts(); got[SlowCommand] != 1 || sum(got) != 1 {
		t.Fatalf("after the first: %v", got)
	}
	if !n.Pending() {
		t.Fatal("the second request was decided before its sources were read")
	}
	c.add(decideBy + time.Second)
	n.Settle(0) // a source that never answers holds nothing back for long
	got := n.Counts()
	if got[Unexplained] != 1 || sum(got) != 2 || n.Pending() {
		t.Fatalf("after decideBy: %v", got)
	}
	if share := n.UnexplainedShare(); share != 0.5 {
		t.Errorf("unexplained share %v, want 0.5", share)
	}
	tl := n.Timeline()
	var inTL uint64
	for _, m := range tl {
		for _, v := range m.Counts {
			inTL += uint64(v)
		}
	}
	if inTL != 2 {
		t.Errorf("timeline %+v holds %d requests, want 2", tl, inTL)
	}
	c.add(time.Hour)
	if n.UnexplainedShare() != 0 || len(n.Timeline()) != 0 {
		t.Error("an hour later the window still holds the requests")
	}
}

func sum(c [NumCauses]uint64) (s uint64) {
	for _, v := range c {
		s += v
	}
	return s
}

// TestThresholdFollowsBaseline: the objective until the baseline has its
// samples, then four times the node's own p99 (never under 1 ms, never
// over the objective).
func TestThresholdFollowsBaseline(t *testing.T) {
	t.Parallel()
	n, c := newTestNode(Config{Objective: 20 * time.Millisecond})
	if th := n.Threshold(); th != 20*time.Millisecond {
		t.Fatalf("initial threshold %v, want the objective", th)
	}
	n.Settle(0) // starts the minute
	for range 1000 {
		n.Observe(prober.ResultOK, 2*time.Millisecond)
	}
	c.add(time.Minute)
	n.Settle(0)
	th := n.Threshold()
	// The p99 is read as its bucket's upper bound: at most a factor of
	// 2^(1/4) (schema 2) above the 2 ms.
	if th < 8*time.Millisecond || th > time.Duration(8e6*math.Pow(2, 0.25)) {
		t.Errorf("threshold %v, want 4 × 2 ms, within a bucket above", th)
	}
	for range 1000 {
		n.Observe(prober.ResultOK, 50*time.Microsecond)
	}
	c.add(time.Minute)
	n.Settle(0)
	if th := n.Threshold(); th < 8*time.Millisecond {
		t.Errorf("threshold %v: the first minute's p99 is still in the window", th)
	}
	for range BaselineMinutes {
		for range 1000 {
			n.Observe(prober.ResultOK, 50*time.Microsecond)
		}
		c.add(time.Minute)
		n.Settle(0)
	}
	if th := n.Threshold(); th != MinThreshold {
		t.Errorf("threshold %v, want the floor %v", th, MinThreshold)
	}
	fixed, _ := newTestNode(Config{Objective: 20 * time.Millisecond, Threshold: 3 * time.Millisecond})
	fixed.Settle(0)
	if th := fixed.Threshold(); th != 3*time.Millisecond {
		t.Errorf("fixed threshold %v", th)
	}
}

func TestBaseBuckets(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{time.Microsecond, 20 * time.Microsecond, time.Millisecond, 3 * time.Millisecond,
		1<<20 + 1, time.Second, time.Hour} {
		i := baseIndex(d)
		if i < 0 || i >= baseBuckets {
			t.Fatalf("%v: bucket %d", d, i)
		}
		// Within the range, d lies in (the bound below, the bucket's bound].
		if i > 0 && i < baseBuckets-1 && (baseUpper(i) < d || baseUpper(i-1) >= d) {
			t.Errorf("%v in bucket %d of upper bound %v", d, i, baseUpper(i))
		}
	}
}

// TestMetrics: every cause of every node from the start, the threshold and
// the share; a removed node is gone.
func TestMetrics(t *testing.T) {
	t.Parallel()
	m := NewMetrics()
	n, _ := newTestNode(Config{Threshold: 2 * time.Millisecond})
	remove := m.Add(nodeid.ID{Target: "cache"}, n)
	var want strings.Builder
	want.WriteString("# HELP redis_prober_slow_requests_total Slow probe requests (at or above redis_prober_slow_threshold_seconds) by their one attributed cause (docs/explain.md).\n# TYPE redis_prober_slow_requests_total counter\n")
	for _, c := range Causes() {
		want.WriteString(`redis_prober_slow_requests_total{cause="` + c.String() + `",node="",target="cache"} 0` + "\n")
	}
	if err := testutil.CollectAndCompare(m, strings.NewReader(want.String()), "redis_prober_slow_requests_total"); err != nil {
		t.Error(err)
	}
	if got := testutil.CollectAndCount(m); got != 14 {
		t.Errorf("%d series, want 12 causes, the threshold and the share", got)
	}
	if lint, err := testutil.CollectAndLint(m); err != nil || len(lint) > 0 {
		t.Errorf("lint: %v %v", lint, err)
	}
	remove()
	if got := testutil.CollectAndCount(m); got != 0 {
		t.Errorf("%d series after the node left", got)
	}
}

// Evidence is kept as long as a waiting request could overlap it (decideBy
// + the node's longest request + evidenceLag), and at most maxEvidence
// pieces of it, the oldest going first.
func TestEvidenceBounds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		maxLatency time.Duration
		keep       time.Duration
	}{
		{time.Second, decideBy + time.Second + evidenceLag},
		{0, decideBy + defaultMaxLatency + evidenceLag},
	} {
		t.Run(tc.maxLatency.String(), func(t *testing.T) {
			n, clk := newTestNode(Config{Threshold: 2 * time.Millisecond, MaxLatency: tc.maxLatency})
			at := func() int64 { return clk.now().UnixNano() }
			n.addEvidence(Evidence{Cause: Fork, From: at() - 1, To: at()})
			clk.add(tc.keep - time.Millisecond)
			n.Settle(at())
			if len(n.evidence) != 1 {
				t.Fatalf("evidence %v old was forgotten within %v", tc.keep-time.Millisecond, tc.keep)
			}
			clk.add(time.Millisecond)
			n.Settle(at())
			if len(n.evidence) != 0 {
				t.Fatalf("evidence %v old is kept", tc.keep)
			}
		})
	}
	n, _ := newTestNode(Config{Threshold: 2 * time.Millisecond})
	for i := range maxEvidence + 1 {
		n.addEvidence(Evidence{Cause: Network, From: int64(i), To: int64(i) + 1})
	}
	if len(n.evidence) > maxEvidence || n.evidence[len(n.evidence)-1].From != maxEvidence {
		t.Fatalf("%d pieces of evidence after %d, the newest from %d", len(n.evidence), maxEvidence+1, n.evidence[len(n.evidence)-1].From)
	}
	if first := n.evidence[0].From; first != int64(maxEvidence+1-len(n.evidence)) {
		t.Errorf("the oldest kept is from %d, want the newest %d in order", first, len(n.evidence))
	}
}

// onHot hears of the first slow request after none for procHot (it starts
// the Share's sampling of the server), not of every slow request.
func TestNodeTellsWhenItTurnsHot(t *testing.T) {
	t.Parallel()
	n, c := newTestNode(Config{Threshold: 10 * time.Millisecond})
	var told []int64
	n.onHot = func(at int64) { told = append(told, at) }
	slow := func() { n.Observe(prober.ResultOK, 20*time.Millisecond) }
	slow()
	c.add(procHot / 2)
	slow()
	n.Observe(prober.ResultOK, time.Millisecond) // fast: nothing
	c.add(procHot + time.Second)
	slow()
	if len(told) != 2 || told[1]-told[0] != int64(procHot*3/2+time.Second) {
		t.Errorf("told at %v, want the first slow request and the one after %v without", told, procHot)
	}
}

// The timeline holds only the minutes that had slow requests, the last
// hour of them in order, whatever order the clock gives them in.
func TestTimelineKeepsAnHourOfMinutes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		minutes []int64 // a request decided in each, in this order
		want    []int64 // the minutes kept, oldest first
	}{
		{"none", nil, nil},
		{"one minute twice", []int64{100, 100}, []int64{100}},
		{"gaps", []int64{100, 130, 159}, []int64{100, 130, 159}},
		{"an hour on", []int64{100, 130, 160}, []int64{130, 160}},
		{"a clock set back", []int64{100, 105, 102}, []int64{100, 102, 105}},
		{"ninety minutes", seq(0, 90), seq(30, 90)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n Node
			for _, m := range tc.minutes {
				n.countMinute(m, Fork)
			}
			var got []int64
			var all uint32
			for _, e := range n.minutes {
				got = append(got, e.at)
				all += e.counts[Fork]
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("minutes %v, want %v", got, tc.want)
			}
			if tc.name == "one minute twice" && all != 2 {
				t.Errorf("%d requests counted in the minute, want 2", all)
			}
			if len(tc.minutes) == 0 && n.minutes != nil {
				t.Error("a node without slow requests holds a timeline")
			}
		})
	}
}

func seq(from, to int64) []int64 {
	var out []int64
	for m := from; m < to; m++ {
		out = append(out, m)
	}
	return out
}
