package burst

import (
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/redis-prober/redis-prober/prober"
)

// Latency histograms hold nanoseconds from 64 ns resolution up to a minute,
// three significant digits above 131 µs: HdrHistogram's usual precision.
const (
	histLowest  = 100
	histHighest = int64(time.Minute)
	histDigits  = 3
)

func newLatencyHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(histLowest, histHighest, histDigits)
}

// newWindowHist is the coarse histogram of the governor's sliding window:
// two digits are plenty to compare a p99 with a threshold.
func newWindowHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(histLowest, histHighest, 2)
}

func recordHist(h *hdrhistogram.Histogram, d time.Duration) {
	_ = h.RecordValue(min(max(int64(d), 0), histHighest))
}

// CommandStats are the figures of one command of a burst (or the totals).
type CommandStats struct {
	Name     string
	Ops      int64 // measured requests answered or failed
	Hits     int64
	Misses   int64
	Errors   int64 // error replies and failed connections
	Timeouts int64
	BytesOut int64 // request bytes sent
	BytesIn  int64 // value bytes received
	Hist     *hdrhistogram.Histogram
}

func newCommandStats(name string) *CommandStats {
	return &CommandStats{Name: name, Hist: newLatencyHist()}
}

func (c *CommandStats) merge(o *CommandStats) {
	c.Ops += o.Ops
	c.Hits += o.Hits
	c.Misses += o.Misses
	c.Errors += o.Errors
	c.Timeouts += o.Timeouts
	c.BytesOut += o.BytesOut
	c.BytesIn += o.BytesIn
	c.Hist.Merge(o.Hist)
}

// Quantile returns the latency at q (0.99 for p99).
func (c *CommandStats) Quantile(q float64) time.Duration {
	if c.Hist == nil || c.Hist.TotalCount() == 0 {
		return 0
	}
	return time.Duration(c.Hist.ValueAtPercentile(q * 100))
}

// Mean is the average latency.
func (c *CommandStats) Mean() time.Duration {
	if c.Hist == nil || c.Hist.TotalCount() == 0 {
		return 0
	}
	return time.Duration(c.Hist.Mean())
}

// Max is the largest latency seen.
func (c *CommandStats) Max() time.Duration {
	if c.Hist == nil || c.Hist.TotalCount() == 0 {
		return 0
	}
	return time.Duration(c.Hist.Max())
}

// statShard is where a group of clients records; a burst has a few shards
// (about one per CPU), not one per client, so a thousand clients do not
// each carry their own histograms, yet clients rarely wait on each other.
// Clients lock a shard once per pipeline batch.
type statShard struct {
	mu      sync.Mutex
	cmds    []*CommandStats
	window  *hdrhistogram.Histogram // since the governor last looked
	total   int64                   // measured requests, for the error budget
	failed  int64                   // errors and timeouts among them
	lastEnd time.Duration           // end of the last measured reply, since the burst's start
	lag     *hdrhistogram.Histogram // the client's schedule lag of measured requests
	stamped int64                   // measured requests timed by the kernel's stamps
}

func newStatShard(names []string) *statShard {
	s := &statShard{window: newWindowHist(), lag: newLatencyHist()}
	for _, n := range names {
		s.cmds = append(s.cmds, newCommandStats(n))
	}
	return s
}

// sample is one finished request of a batch.
type sample struct {
	op          int // index in the plan's mix
	res         prober.Result
	lat         time.Duration
	lag         time.Duration // the client's own lateness in sending it
	stamped     bool          // timed by the kernel's stamps
	end         time.Duration // when the reply came, since the load began
	hit, miss   int
	out, in     int64
	extra       bool // a PEXPIRE follows the request
	measured    bool
	interrupted bool
}

// add records a batch.
func (s *statShard) add(batch []sample) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range batch {
		b := &batch[i]
		if !b.measured || b.interrupted {
			continue
		}
		c := s.cmds[b.op]
		c.Ops++
		c.Hits += int64(b.hit)
		c.Misses += int64(b.miss)
		c.BytesOut += b.out
		c.BytesIn += b.in
		switch b.res {
		case prober.ResultError:
			c.Errors++
			s.failed++
		case prober.ResultTimeout:
			c.Timeouts++
			s.failed++
		}
		recordHist(c.Hist, b.lat)
		recordHist(s.lag, b.lag)
		if b.stamped {
			s.stamped++
		}
		recordHist(s.window, b.lat)
		s.total++
		s.lastEnd = max(s.lastEnd, b.end)
	}
}

// drain moves the window histogram into dst and returns the running
// totals.
func (s *statShard) drain(dst *hdrhistogram.Histogram) (total, failed int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dst.Merge(s.window)
	s.window.Reset()
	return s.total, s.failed
}
