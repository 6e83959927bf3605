package exposition_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/collector"
	"github.com/redis-prober/redis-prober/internal/exposition"
	"github.com/redis-prober/redis-prober/internal/exposition/expositiontest"
	"github.com/redis-prober/redis-prober/internal/host"
	"github.com/redis-prober/redis-prober/prober"
	"github.com/redis-prober/redis-prober/wire"
)

// collectorTestdata holds a tuned host's /proc and /sys, and
// infoTestdata the INFO text of a Redis target, that collector's own tests
// read. They are read in place: a copy would drift from what the collector
// is tested on.
var (
	collectorTestdata = filepath.Join("..", "..", "collector", "testdata")
	infoTestdata      = filepath.Join("..", "redisinfo", "testdata")
)

// world is what a prober watching n targets serves at /metrics, as
// cmd/redis-prober wires it: the Redis side of every target (collector.
// Targets with every collector on, and its health), the host collectors,
// the probe's series (prober.Metrics, three commands a target with
// latencies recorded), the Go and process collectors. The same
// collectors are registered on ours (exposition.Registry) and on theirs
// (client_golang's registry), so the two gatherings can be set side by
// side.
type world struct {
	ours   *exposition.Registry
	theirs *prometheus.Registry
}

func newWorld(tb testing.TB, targets int) *world {
	tb.Helper()
	w := &world{ours: exposition.NewRegistry(), theirs: prometheus.NewRegistry()}
	paths := host.Paths{
		ProcFS: filepath.Join(collectorTestdata, "hosts", "tuned", "proc"),
		SysFS:  filepath.Join(collectorTestdata, "hosts", "tuned", "sys"),
	}
	info, err := os.ReadFile(filepath.Join(infoTestdata, "info", "redis-8.0.txt"))
	if err != nil {
		tb.Fatal(err)
	}
	d := &fixtureDoer{info: string(info)}
	set := collector.NewTargets()
	metrics := prober.NewMetricsWith(w.ours, prober.MetricsOptions{})
	w.register(tb, set, set.Health())
	w.register(tb, collector.NewHost(paths, collector.AllEnabled(), nil),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	w.theirs.MustRegister(metrics) // NewMetricsWith registered it on ours
	commands := []string{"ping", "get", "set"}
	metrics.InitHostChanges("kernel", "thp", "sysctl")
	for i := range targets {
		name := fmt.Sprintf("target-%04d", i)
		tgt := set.NewTarget(collector.TargetConfig{
			Name: name, Node: "", Commands: commands, Paths: paths, Enabled: collector.AllEnabled(),
		}, d)
		if _, err := set.Add(tgt); err != nil {
			tb.Fatal(err)
		}
		tgt.Refresh(tb.Context())
		r := metrics.ForTarget(name, commands, 5*time.Millisecond)
		// Latencies over the probe's range, so the native histograms
		// have the spread of buckets a live one has.
		for j := range 200 {
			r.Record(j%len(commands), prober.ResultOK, time.Duration(50+(j*j*37+i)%4000)*time.Microsecond)
		}
		r.Record(0, prober.ResultTimeout, time.Second)
		r.SetUp(true)
		r.RecordConnect(prober.ResultOK, 300*time.Microsecond)
		r.RecordLag(time.Duration(i%50) * time.Microsecond)
		r.RecordClientDelay(time.Duration(i%30) * time.Microsecond)
		r.SetClock(wire.ClockKernel)
		metrics.InitChanges(name, "restart", "version", "config", "role", "maxmemory")
	}
	return w
}

func (w *world) register(tb testing.TB, cs ...prometheus.Collector) {
	tb.Helper()
	for _, c := range cs {
		if err := w.ours.Register(c); err != nil {
			tb.Fatal(err)
		}
		if err := w.theirs.Register(c); err != nil {
			tb.Fatal(err)
		}
	}
}

// gather is one Gather of ours, which must not fail.
func (w *world) gather(tb testing.TB) []*dto.MetricFamily {
	tb.Helper()
	mfs, err := w.ours.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	return mfs
}

// series counts the series of mfs as Prometheus does: a classic
// histogram's buckets, sum and count each, a native one as one.
func series(mfs []*dto.MetricFamily) int {
	n := 0
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch {
			case m.Histogram != nil:
				n += 3 + len(m.Histogram.GetBucket())
			case m.Summary != nil:
				n += 2 + len(m.Summary.GetQuantile())
			default:
				n++
			}
		}
	}
	return n
}

// TestWorldGathersAsTheRegistry: the world the benchmarks measure is
// gathered alike by ours and theirs, so an A/B of the two compares the
// same work. The families that change between two reads (the Go and
// process collectors', the host collectors' durations) are left out.
func TestWorldGathersAsTheRegistry(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 20)
	steady := func(g prometheus.Gatherer) []*dto.MetricFamily {
		t.Helper()
		mfs, err := g.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var out []*dto.MetricFamily
		for _, mf := range mfs {
			if n := mf.GetName(); !strings.HasPrefix(n, "go_") && !strings.HasPrefix(n, "process_") &&
				n != "redis_prober_collector_duration_seconds" {
				out = append(out, mf)
			}
		}
		return out
	}
	got, want := steady(w.ours), steady(w.theirs)
	if n := series(got); n < 20*100 {
		t.Errorf("%d series for 20 targets: the world is not a prober's", n)
	}
	expositiontest.Equal(t, "the world", got, want)
}

// fixtureDoer answers a target's collectors from fixtures: the INFO text
// of a Redis 8.0, its command statistics, one fork event, the server-side
// histogram of each probed command and the config the checks read.
type fixtureDoer struct{ info string }

var fixtureConfig = map[string]string{
	"maxmemory": "0", "maxclients": "10000", "tcp-backlog": "511", "latency-monitor-threshold": "0",
	"appendonly": "no", "appendfsync": "everysec", "no-appendfsync-on-rewrite": "no",
}

func (d *fixtureDoer) Do(ctx context.Context, args ...any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, args...)
	words := make([]string, len(args))
	for i, a := range args {
		words[i] = strings.ToLower(fmt.Sprint(a))
	}
	switch name := strings.Join(words, " "); {
	case name == "info":
		cmd.SetVal(d.info)
	case name == "info commandstats":
		cmd.SetVal("# Commandstats\r\ncmdstat_ping:calls=3000,usec=1500\r\ncmdstat_get:calls=3000,usec=2850\r\ncmdstat_set:calls=3000,usec=4100\r\n")
	case name == "latency latest":
		cmd.SetVal([]any{[]any{"fork", int64(1795985000), int64(5), int64(12)}})
	case strings.HasPrefix(name, "latency histogram"):
		h := []any{"calls", int64(3000), "histogram_usec", []any{int64(1), int64(2100), int64(2), int64(2950), int64(4), int64(3000)}}
		cmd.SetVal([]any{"ping", h, "get", h, "set", h})
	case strings.HasPrefix(name, "config get"):
		var out []any
		for _, p := range words[2:] {
			if v, ok := fixtureConfig[p]; ok {
				out = append(out, p, v)
			}
		}
		cmd.SetVal(out)
	default:
		cmd.SetErr(errors.New("fixtureDoer: unknown command " + name))
	}
	return cmd
}
