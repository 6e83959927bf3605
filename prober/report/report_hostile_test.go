package report

import (
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/redisinfo"
	"github.com/redis-prober/redis-prober/prober/burst"
)

// A hostile reply once made a burst count hits = -2000; the report never
// shows a negative count, whatever the codec counted.
func TestCommandReportCountsNeverNegative(t *testing.T) {
	c := &burst.CommandStats{Name: "get", Ops: 1000, Hits: -2000, Misses: 3000, Errors: -1, Timeouts: -1, BytesOut: -5, BytesIn: -5}
	r := NewCommandReport(c, time.Second, nil)
	if r.Hits < 0 || r.Misses < 0 || r.Errors < 0 || r.Timeouts < 0 || r.KBPerSec < 0 || r.Ops < 0 {
		t.Errorf("negative count in %+v", r)
	}
}

// The environment snapshot reads no secret CONFIG parameter, so a report
// never holds one.
func TestSnapshotReadsNoSecretParam(t *testing.T) {
	for _, p := range latencyConfig {
		if redisinfo.SecretParam(p) {
			t.Errorf("the snapshot reads secret CONFIG parameter %s", p)
		}
	}
}
