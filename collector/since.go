package collector

import (
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/redis-prober/redis-prober/internal/host"
	"github.com/redis-prober/redis-prober/internal/redisinfo"
)

// Since when a counter counts is its start (created) timestamp in the
// protobuf exposition: a Prometheus that stores start timestamps counts
// the increase from 0 at that time up to the first sample, so the first
// interval after a restart (of the prober, of Redis, of the host) is not
// lost, and a restart whose counter grew past its old value is still a
// reset. The prober's own counters and histograms start when they are
// made (client_golang's and prober.Histogram's); what the collectors
// mirror counts since the server started (INFO uptime_in_seconds), since
// its statistics or latency monitor were reset, since the redis-server
// process started, or since the host booted. Where that is not known,
// the series has none: a wrong one would make Prometheus count what
// happened before it.

// ServerSince is since when a server's own counters count, as of a
// refresh; zero when unknown.
type ServerSince struct {
	// Stats is the server's start, or the refresh that saw its
	// statistics reset (CONFIG RESETSTAT): INFO total_forks and LATENCY
	// HISTOGRAM count since then.
	Stats time.Time
	// Latency is the server's start, or the refresh that saw its latency
	// monitor reset (LATENCY RESET): the LATENCY LATEST totals count
	// since then.
	Latency time.Time

	stats, latency *timestamppb.Timestamp // the same, made once for every series
}

// serverSince follows one server's counters across refreshes to tell
// since when they count; Target.refreshMu guards it.
type serverSince struct {
	cur      ServerSince
	runID    string
	prevRead time.Time // the refresh before the current one
	lastRead time.Time
	commands int64            // INFO total_commands_processed at lastRead; -1 unknown
	spikes   map[string]int64 // LATENCY LATEST count per event at lastRead
}

// info takes the INFO of a refresh started at read. A new run_id (a
// restart, or the first read) puts both times at the server's start: read
// less uptime_in_seconds, less the second that uptime rounds away, so it
// is never after the start (on the prober's clock, which Prometheus's
// scrapes share, not the server's). A total_commands_processed that went
// back (the prober's own probes keep it growing) is a CONFIG RESETSTAT
// since the last read: the statistics count from then.
func (s *serverSince) info(info redisinfo.Info, read time.Time) ServerSince {
	s.prevRead, s.lastRead = s.lastRead, read
	cmds, ok := info.Int("total_commands_processed")
	if !ok {
		cmds = -1
	}
	runID := info["run_id"]
	if runID == "" || runID != s.runID {
		s.runID = strings.Clone(runID) // a substring would keep the whole reply alive
		s.spikes = nil
		s.cur = ServerSince{}
		if up, ok := info.Int("uptime_in_seconds"); ok && up >= 0 && runID != "" {
			start := read.Add(-time.Duration(up+1) * time.Second).Truncate(time.Second)
			s.cur = ServerSince{Stats: start, Latency: start}
		}
	} else if cmds >= 0 && s.commands >= 0 && cmds < s.commands && !s.prevRead.IsZero() {
		s.cur.Stats = s.prevRead
	}
	s.commands = cmds
	s.stamp()
	return s.cur
}

// events takes the LATENCY LATEST of the same refresh. An event whose
// count went back, or that is gone, was reset since the last read.
func (s *serverSince) events(events []LatencyEvent) ServerSince {
	seen := make(map[string]int64, len(events))
	reset := false
	for _, e := range events {
		if !e.HasTotals {
			continue
		}
		seen[e.Event] = e.Count
		if prev, ok := s.spikes[e.Event]; ok && e.Count < prev {
			reset = true
		}
	}
	for ev := range s.spikes {
		if _, ok := seen[ev]; !ok {
			reset = true
		}
	}
	if reset && !s.prevRead.IsZero() && !s.cur.Latency.IsZero() {
		s.cur.Latency = s.prevRead
	}
	s.spikes = seen
	s.stamp()
	return s.cur
}

// stamp makes the timestamps of the current times when they changed.
func (s *serverSince) stamp() {
	if s.cur.stats == nil || !s.cur.stats.AsTime().Equal(s.cur.Stats) {
		s.cur.stats = startStamp(s.cur.Stats)
	}
	if s.cur.latency == nil || !s.cur.latency.AsTime().Equal(s.cur.Latency) {
		s.cur.latency = startStamp(s.cur.Latency)
	}
}

// bootTime is the host's boot time, read once from the procfs root of
// the host collectors: the start of the counters /proc keeps since boot.
type bootTime struct {
	mu    sync.Mutex
	known bool
	t     time.Time
}

// get returns the boot time, zero while /proc/stat cannot tell it.
func (b *bootTime) get(paths host.Paths) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.known {
		if t, err := paths.Host().BootTime(); err == nil {
			b.t, b.known = t, true
		}
	}
	return b.t
}
