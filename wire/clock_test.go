package wire

import (
	"testing"
	"time"
)

func TestWireTiming(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	wall := func(d time.Duration) time.Time { return t0.Add(d).Round(0) }
	good := Exchange{WriteAt: at(10 * time.Microsecond), TXWall: wall(15 * time.Microsecond),
		ReadAt: at(120 * time.Microsecond), RXWall: wall(100 * time.Microsecond), TX: true, RX: true}
	for _, tc := range []struct {
		name       string
		ex         Exchange
		from       time.Time
		ok         bool
		d, delay   time.Duration
		start, end time.Duration
	}{
		{name: "due slot: TX to RX", ex: good, ok: true, d: 85 * time.Microsecond, delay: 20 * time.Microsecond, end: 130 * time.Microsecond},
		{name: "overdue slot: due time to RX", ex: good, from: at(-time.Millisecond), ok: true, d: 1100 * time.Microsecond, delay: 20 * time.Microsecond, start: -time.Millisecond, end: 130 * time.Microsecond},
		{name: "no RX stamp", ex: func() Exchange { e := good; e.RX = false; return e }(), end: 130 * time.Microsecond},
		{name: "no TX stamp", ex: func() Exchange { e := good; e.TX = false; return e }(), end: 130 * time.Microsecond},
		{name: "no TX stamp but overdue", ex: func() Exchange { e := good; e.TX = false; return e }(), from: at(-time.Millisecond), ok: true, d: 1100 * time.Microsecond, delay: 20 * time.Microsecond, start: -time.Millisecond, end: 130 * time.Microsecond},
		{name: "TX stamp before the write", ex: func() Exchange { e := good; e.TXWall = wall(0); return e }(), end: 130 * time.Microsecond},
		{name: "RX after the read", ex: func() Exchange { e := good; e.RXWall = wall(125 * time.Microsecond); return e }(), end: 130 * time.Microsecond},
		{name: "read outside the request", ex: good, end: 110 * time.Microsecond},
		{name: "wall clock stepped", ex: func() Exchange {
			e := good
			e.ReadAt = e.ReadAt.Add(time.Second)
			e.ReadAt = time.Unix(0, e.ReadAt.UnixNano()+int64(time.Hour)).Add(0)
			return e
		}(), end: 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, delay, ok := Timing(tc.ex, tc.from, at(tc.start), at(tc.end))
			if ok != tc.ok || (ok && (d != tc.d || delay != tc.delay)) {
				t.Fatalf("got %v, %v, %v; want %v, %v, %v", d, delay, ok, tc.d, tc.delay, tc.ok)
			}
		})
	}
}
