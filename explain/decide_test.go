package explain

import (
	"testing"
	"time"
)

const ms = int64(time.Millisecond)

// TestDecidePrecedence is the precedence of docs/explain.md on fixtures: a
// slow request of 40 ms ending at t=1000 ms, threshold 10 ms, against the
// evidence its sources could give.
func TestDecidePrecedence(t *testing.T) {
	t.Parallel()
	req := Request{End: 1000 * ms, Latency: 40 * time.Millisecond}
	user := req
	user.UserClock = true
	th := 10 * time.Millisecond
	at := func(c Cause, from, to int64, d time.Duration) Evidence {
		return Evidence{Cause: c, From: from * ms, To: to * ms, Dur: d}
	}
	spread := func(c Cause, from, to int64, d time.Duration) Evidence {
		e := at(c, from, to, d)
		e.Spread = true
		return e
	}
	// A round trip that rose by d and held, over a request's time on the
	// wire.
	rose := func(from, to int64, d time.Duration) Evidence {
		e := at(Network, from, to, d)
		e.Rise = true
		return e
	}
	for _, tc := range []struct {
		name string
		req  Request
		ev   []Evidence
		want Cause
	}{
		{"nothing", req, nil, Unexplained},
		{"evidence before the request", req, []Evidence{at(Fork, 0, 950, 35*time.Millisecond)}, Unexplained},
		{"evidence after the request", req, []Evidence{at(SlowCommand, 1001, 2000, 35*time.Millisecond)}, Unexplained},
		{"a fork that accounts", req, []Evidence{at(Fork, 0, 2000, 35*time.Millisecond)}, Fork},
		{"a slow command that accounts", req, []Evidence{at(SlowCommand, 900, 1970, 38*time.Millisecond)}, SlowCommand},
		// BGSAVE's own SLOWLOG entry is its fork: both account, fork first.
		{"fork before slow_command", req, []Evidence{
			at(SlowCommand, 900, 2000, 36*time.Millisecond), at(Fork, 500, 1500, 35*time.Millisecond)}, Fork},
		// A state that held (a BGSAVE child) loses to a stall that accounts.
		{"a timed stall beats a coincident state", req, []Evidence{
			at(Fork, 0, 2000, 0), at(SlowCommand, 900, 2000, 39*time.Millisecond)}, SlowCommand},
		{"a stall too short to account only coincides", req, []Evidence{
			at(SlowCommand, 900, 2000, 6*time.Millisecond), at(Expiry, 0, 2000, 0)}, SlowCommand},
		{"coincidences go by precedence", req, []Evidence{
			at(Expiry, 0, 2000, 0), at(Eviction, 0, 2000, 0), at(Defrag, 0, 2000, 0)}, Eviction},
		{"a stall under half the threshold is no coincidence", req, []Evidence{
			at(RedisCPU, 900, 1000, 4*time.Millisecond)}, Unexplained},
		{"stalls of a cause add up", req, []Evidence{
			at(SlowCommand, 900, 1000, 20*time.Millisecond), at(SlowCommand, 900, 1000, 20*time.Millisecond),
			at(Fork, 0, 2000, 0)}, SlowCommand},
		// A run delay is a total over its window: a request is charged its
		// share by overlap (the request is [960, 1000]).
		{"run delay by overlap", req, []Evidence{
			spread(RedisCPU, 960, 1000, 35*time.Millisecond), spread(RedisCPU, 1000, 1100, 50*time.Millisecond)}, RedisCPU},
		{"run delay outside the request is not charged", req, []Evidence{
			spread(RedisCPU, 800, 960, 80*time.Millisecond), at(Expiry, 0, 2000, 0)}, Expiry},
		// The scheduler makes a server wait in whole ticks and only when
		// it has work: 32 ms of run delay over 2 s may all have been this
		// request's, 15 ms would not account for it even so.
		{"a run delay that could have fallen on it whole", req, []Evidence{
			spread(RedisCPU, 0, 2000, 32*time.Millisecond)}, RedisCPU},
		{"a run delay too small even whole", req, []Evidence{
			spread(RedisCPU, 0, 2000, 15*time.Millisecond)}, Unexplained},
		// Just over the threshold, a little run delay would "account":
		// under half the threshold it is no evidence (a congested link
		// otherwise read as redis_cpu).
		{"a run delay under half the threshold", Request{End: 1000 * ms, Latency: 12 * time.Millisecond}, []Evidence{
			spread(RedisCPU, 0, 2000, 3*time.Millisecond)}, Unexplained},
		{"a possible run delay only coincides", req, []Evidence{
			spread(RedisCPU, 0, 2000, 32*time.Millisecond), at(Fork, 0, 2000, 0)}, Fork},
		{"the largest stall covering half the latency", req, []Evidence{
			spread(RedisCPU, 960, 1000, 25*time.Millisecond), at(Expiry, 0, 2000, 0),
			at(SlowCommand, 900, 2000, 8*time.Millisecond)}, RedisCPU},
		// A busy EVAL of 30 ms on a starved server: neither its SLOWLOG
		// entry nor the run delay accounts alone; the EVAL covers the most.
		{"a slow command on a starved server", req, []Evidence{
			at(SlowCommand, 900, 2000, 30*time.Millisecond), spread(RedisCPU, 960, 1000, 15*time.Millisecond)}, SlowCommand},
		{"host evidence needs the prober's clock", req, []Evidence{at(Host, 990, 1000, 35*time.Millisecond)}, Unexplained},
		{"host on the prober's clock", user, []Evidence{at(Host, 990, 1000, 35*time.Millisecond)}, Host},
		{"a server cause beats host", user, []Evidence{
			at(Host, 990, 1000, 35*time.Millisecond), at(SlowCommand, 950, 2000, 35*time.Millisecond)}, SlowCommand},
		// The network: a retransmission stalls the request for the
		// retransmission timeout, over its time on the wire.
		{"a retransmission accounts", req, []Evidence{at(Network, 962, 1000, 36*time.Millisecond)}, Network},
		{"a server stall that accounts beats a retransmission", req, []Evidence{
			at(Network, 962, 1000, 36*time.Millisecond), at(SlowCommand, 900, 2000, 35*time.Millisecond)}, SlowCommand},
		{"a retransmission beats a coincident server state", req, []Evidence{
			at(Network, 962, 1000, 36*time.Millisecond), at(Fork, 0, 2000, 0)}, Network},
		{"a round trip that rose only coincides", req, []Evidence{rose(962, 1000, 12*time.Millisecond)}, Network},
		{"a rise that accounts", req, []Evidence{rose(962, 1000, 35*time.Millisecond)}, Network},
		// A server state's cost is not known: it may be all of the rise.
		{"a server state comes before a round trip that rose", req, []Evidence{
			rose(962, 1000, 38*time.Millisecond), at(Expiry, 0, 2000, 0)}, Expiry},
		{"a fork that accounts beats a rise", req, []Evidence{
			rose(962, 1000, 38*time.Millisecond), at(Fork, 0, 2000, 35*time.Millisecond)}, Fork},
		// The EVAL's 30 ms lengthened the round trip too: 8 ms of the
		// rise are left to the path, the EVAL covers the most.
		{"a slow command beats the rise it lengthened", req, []Evidence{
			rose(962, 1000, 38*time.Millisecond), at(SlowCommand, 900, 2000, 30*time.Millisecond)}, SlowCommand},
		{"a run delay that could have been the whole rise", req, []Evidence{
			rose(962, 1000, 30*time.Millisecond), spread(RedisCPU, 0, 2000, 32*time.Millisecond)}, RedisCPU},
		// A congested link beside a little run delay: by precedence alone
		// (the rise a state) these were redis_cpu.
		{"a congested link just over the threshold, beside a run delay", Request{End: 1000 * ms, Latency: 12 * time.Millisecond},
			[]Evidence{rose(988, 1000, 12*time.Millisecond), spread(RedisCPU, 0, 2000, 8*time.Millisecond)}, Network},
		{"a congested link bigger than a possible run delay", req, []Evidence{
			rose(962, 1000, 35*time.Millisecond), spread(RedisCPU, 0, 2000, 22*time.Millisecond)}, Network},
		// A starved window's state costs the window's run delay, no more.
		{"a congested link bigger than a starved window", req, []Evidence{
			rose(962, 1000, 38*time.Millisecond), spread(RedisCPU, 900, 1100, 20*time.Millisecond),
			at(RedisCPU, 900, 1100, 0)}, Network},
		// Two connections see the same queue: the largest rise, not both.
		{"rises of two connections do not add up", req, []Evidence{
			rose(962, 1000, 16*time.Millisecond), rose(970, 1000, 16*time.Millisecond),
			spread(RedisCPU, 0, 2000, 20*time.Millisecond)}, RedisCPU},
		{"a rise is bounded by the request", Request{End: 1000 * ms, Latency: 12 * time.Millisecond}, []Evidence{
			rose(988, 1000, 40*time.Millisecond), spread(RedisCPU, 0, 2000, 12*time.Millisecond)}, RedisCPU},
		{"network before host", user, []Evidence{
			at(Host, 990, 1000, 35*time.Millisecond), at(Network, 962, 1000, 36*time.Millisecond)}, Network},
		{"latency events of no named class", req, []Evidence{at(LatencyEvent, 950, 2000, 40*time.Millisecond)}, LatencyEvent},
		{"unexplained evidence is ignored", req, []Evidence{at(Unexplained, 0, 2000, 40*time.Millisecond)}, Unexplained},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Decide(tc.req, th, tc.ev); got != tc.want {
				t.Errorf("Decide = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCauseNames(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, c := range Causes() {
		s := c.String()
		if s == "" || s == "unknown" || seen[s] {
			t.Fatalf("cause %d is named %q", c, s)
		}
		seen[s] = true
		if back, ok := ParseCause(s); !ok || back != c {
			t.Errorf("ParseCause(%q) = %v, %v", s, back, ok)
		}
	}
	if len(seen) != 12 || Causes()[len(Causes())-1] != Unexplained {
		t.Errorf("causes %v: want the 12 of the design, unexplained last", seen)
	}
}

func TestLatencyEventCause(t *testing.T) {
	t.Parallel()
	for ev, want := range map[string]Cause{
		"fork": Fork, "aof-fsync-always": Persistence, "aof-write-pending-fsync": Persistence,
		"rdb-unlink-temp-file": Persistence, "command": SlowCommand, "fast-command": SlowCommand,
		"eviction-cycle": Eviction, "eviction-del": Eviction, "expire-cycle": Expiry,
		"active-defrag-cycle": Defrag, "module-acquire-GIL": LatencyEvent, "aof-": LatencyEvent, "": LatencyEvent,
	} {
		if got := latencyEventCause(ev); got != want {
			t.Errorf("latencyEventCause(%q) = %v, want %v", ev, got, want)
		}
	}
}
