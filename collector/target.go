package collector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// Doer is the narrow slice of go-redis the Redis-side collectors use;
// *redis.Client is one.
type Doer interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// TargetConfig describes one Redis target's collectors.
type TargetConfig struct {
	Name     string   // the target label
	Node     string   // the node label: host:port in a Cluster or Sentinel target, "" for a single server
	Commands []string // probed commands (lower case), for LATENCY HISTOGRAM
	Paths    Paths
	Enabled  Enabled
	// Intrinsic returns the host's recent worst scheduling jitter; nil or
	// ok=false leaves the intrinsic_latency check unknown.
	Intrinsic func() (d time.Duration, ok bool)
	Log       *slog.Logger
	// ServerClassicBuckets adds classic buckets to the server-side
	// latency histogram (22 series a command) beside its native buckets,
	// for a Prometheus that does not ingest native histograms.
	ServerClassicBuckets bool
	// Processes, when set, shares /proc reads of one redis-server between
	// the targets that name it.
	Processes *ProcessCache
	// HostFacts, when set, shares the host's kernel state between targets.
	HostFacts *HostFactsCache
}

// Snapshot is what one refresh learned about a target.
type Snapshot struct {
	Time       time.Time
	Info       Info
	Config     map[string]string
	Events     []LatencyEvent
	Histograms []CommandHistogram
	Process    *ProcessStats
	Host       HostFacts
	Checks     []Result
	// Errors per collector name: nil when it succeeded. Collectors not
	// run are absent.
	Errors    map[string]error
	Durations map[string]time.Duration
}

// Target holds the cached Redis-side state of one target and exports it.
// Refresh is the only place that talks to Redis; Collect reads the cache.
type Target struct {
	cfg    TargetConfig
	client Doer
	faults *faultLog

	health healthDescs
	info   infoDescs
	lat    latencyDescs
	proc   processDescs
	checks checkDescs
	fork   prometheus.Histogram
	// dropped counts series left out, by collector: over a per-target
	// cap, a duplicate label value, an absurd INFO value.
	dropped *prometheus.CounterVec

	refreshMu sync.Mutex // one refresh at a time; guards the fields below
	forks     forkTracker
	capLogged map[string]bool // collectors whose drops were logged
	lastBad   string          // the absurd INFO values logged last

	mu   sync.RWMutex
	snap Snapshot
}

var _ prometheus.Collector = (*Target)(nil)

// ForkBuckets are the classic buckets of redis_prober_fork_seconds, one a
// decade from 1 ms to 1 s: enough for a Prometheus without native
// histograms to tell a small instance's fork from a slow VM's, with the
// detail in the native buckets (16 classic ones were 17 series a target for
// an event that happens a few times an hour).
var ForkBuckets = []float64{.001, .01, .1, 1}

// NewTarget declares the series of one target (all carrying its target
// label). It does not call Redis; Refresh does.
func NewTarget(cfg TargetConfig, client Doer) *Target {
	if cfg.Enabled == nil {
		cfg.Enabled = AllEnabled()
	}
	cl := prometheus.Labels{"target": cfg.Name, "node": cfg.Node}
	t := &Target{
		cfg:    cfg,
		client: client,
		faults: newFaultLog(cfg.Log),
		health: newHealthDescs(cl),
		info:   newInfoDescs(cl),
		lat:    newLatencyDescs(cl, cfg.ServerClassicBuckets),
		proc:   newProcessDescs(cl),
		checks: newCheckDescs(cl),
		fork: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:                            "redis_prober_fork_seconds",
			Help:                            "Duration of every fork the prober saw happen (from INFO total_forks and latest_fork_usec; several forks between two refreshes are all counted at the latest one's duration).",
			ConstLabels:                     cl,
			Buckets:                         ForkBuckets,
			NativeHistogramBucketFactor:     1.1,
			NativeHistogramMaxBucketNumber:  160,
			NativeHistogramMinResetDuration: time.Hour,
		}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "redis_prober_collector_dropped_series_total",
			Help:        "Series a Redis-side collector left out of /metrics: LATENCY LATEST events and LATENCY HISTOGRAM commands over the per-target caps or repeated, INFO fields over the parse bounds or with absurd values (a negative fork time).",
			ConstLabels: cl,
		}, []string{"collector"}),
		capLogged: map[string]bool{},
	}
	// The collectors that can drop start at 0.
	for _, name := range []string{"info", "latency"} {
		if cfg.Enabled[name] {
			t.dropped.WithLabelValues(name)
		}
	}
	return t
}

// drop counts n series collector left out, and logs the first time it
// happens (the counter tells the rest).
func (t *Target) drop(collector string, n int, why string) {
	if n <= 0 {
		return
	}
	t.dropped.WithLabelValues(collector).Add(float64(n))
	if t.capLogged[collector] {
		return
	}
	t.capLogged[collector] = true
	t.faults.log.Warn("collector dropped series; redis_prober_collector_dropped_series_total counts further drops, this is logged once",
		"collector", collector, "dropped", n, "why", why)
}

// Name is the target label.
func (t *Target) Name() string { return t.cfg.Name }

// Node is the node label.
func (t *Target) Node() string { return t.cfg.Node }

// Snapshot returns the last refresh's result.
func (t *Target) Snapshot() Snapshot {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.snap
}

// Refresh reads INFO, LATENCY, CONFIG, the Redis process and the host
// facts the enabled collectors need, evaluates the checks, and replaces the
// cache. What cannot be read this time is absent from the cache (a stale
// value would lie), and the collector's error says why.
func (t *Target) Refresh(ctx context.Context) {
	t.refreshMu.Lock()
	defer t.refreshMu.Unlock()
	on := t.cfg.Enabled
	s := Snapshot{Time: time.Now(), Errors: map[string]error{}, Durations: map[string]time.Duration{}}
	record := func(name string, start time.Time, err error) {
		if !on[name] {
			return
		}
		s.Errors[name], s.Durations[name] = err, time.Since(start)
		t.faults.observe(name, err)
	}

	start := time.Now()
	var infoErr error
	if on["info"] || on["latency"] || on["process"] || on["checks"] {
		var skipped int
		s.Info, skipped, infoErr = fetchInfo(ctx, t.client, "")
		if infoErr == nil {
			t.drop("info", skipped, fmt.Sprintf("INFO lines over the parse bounds (%d fields, %d bytes a line, %d bytes in all)", maxInfoFields, maxInfoLineLen, maxInfoBytes))
			t.dropAbsurd(s.Info)
			if n := t.forks.next(s.Info); n > 0 {
				if usec, ok := s.Info.Float("latest_fork_usec"); ok {
					for range n {
						t.fork.Observe(usec / 1e6)
					}
				}
			}
		}
	}
	record("info", start, infoErr)

	if on["latency"] {
		start = time.Now()
		err := infoErr
		if err == nil {
			s.Events, s.Histograms, err = t.fetchLatency(ctx, s.Info)
		}
		record("latency", start, err)
	}

	var procErr error
	if on["process"] || on["checks"] {
		start = time.Now()
		if procErr = infoErr; procErr == nil {
			s.Process, procErr = t.cfg.Processes.Read(t.cfg.Paths, IdentityFromInfo(s.Info), start)
		}
		record("process", start, procErr)
	}

	if on["checks"] {
		start = time.Now()
		var err error
		if infoErr == nil {
			s.Config, err = fetchConfig(ctx, t.client, s.Info)
		} else {
			err = infoErr
		}
		var hostErr error
		s.Host, hostErr = t.cfg.HostFacts.Read(t.cfg.Paths, time.Now())
		f := Facts{Host: s.Host, Info: s.Info, Config: s.Config, Process: s.Process}
		if t.cfg.Intrinsic != nil {
			f.Intrinsic, f.HasIntrinsic = t.cfg.Intrinsic()
		}
		s.Checks = Evaluate(&f)
		record("checks", start, errors.Join(err, hostErr))
	}

	t.mu.Lock()
	t.snap = s
	t.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (t *Target) Describe(ch chan<- *prometheus.Desc) {
	t.health.describe(ch)
	t.info.describe(ch)
	t.fork.Describe(ch)
	t.lat.describe(ch)
	t.proc.describe(ch)
	t.checks.describe(ch)
	t.dropped.Describe(ch)
}

// Collect implements prometheus.Collector from the cache only.
func (t *Target) Collect(ch chan<- prometheus.Metric) {
	s := t.Snapshot()
	for _, d := range All() {
		if d.Kind != KindTarget || !t.cfg.Enabled[d.Name] {
			continue
		}
		switch d.Name {
		case "info":
			t.info.emit(ch, s.Info)
			t.fork.Collect(ch)
		case "latency":
			t.lat.emit(ch, s.Events, s.Histograms)
		case "process":
			t.proc.emit(ch, s.Process)
		case "checks":
			t.checks.emit(ch, s.Checks)
		}
		if err, ran := s.Errors[d.Name]; ran {
			t.health.emit(ch, d.Name, err, s.Durations[d.Name].Seconds())
		}
	}
	t.dropped.Collect(ch)
}

// dropAbsurd removes the absurd values of info (see infoRanges), counts
// them and logs them at debug when they differ from last time.
func (t *Target) dropAbsurd(info Info) {
	bad := dropAbsurd(info)
	if len(bad) == 0 {
		t.lastBad = ""
		return
	}
	t.dropped.WithLabelValues("info").Add(float64(len(bad)))
	if msg := strings.Join(bad, " "); msg != t.lastBad {
		t.lastBad = msg
		t.faults.log.Debug("INFO values out of range ignored; their series are absent", "fields", msg)
	}
}

// fetchInfo runs INFO [section] and parses it; skipped counts the lines
// over the parse bounds.
func fetchInfo(ctx context.Context, c Doer, section string) (info Info, skipped int, err error) {
	args := []any{"info"}
	if section != "" {
		args = append(args, section)
	}
	s, err := c.Do(ctx, args...).Text()
	if err != nil {
		return nil, 0, redisErr("INFO", err)
	}
	return parseInfo(s)
}

// fetchLatency reads LATENCY LATEST and, on Redis 7+, the server-side
// histogram of the probed commands with their exact sums from INFO
// commandstats.
func (t *Target) fetchLatency(ctx context.Context, info Info) ([]LatencyEvent, []CommandHistogram, error) {
	reply, err := t.client.Do(ctx, "latency", "latest").Result()
	if err != nil {
		return nil, nil, redisErr("LATENCY LATEST", err)
	}
	events, dropped, err := parseLatencyLatest(reply)
	if err != nil {
		return nil, nil, err
	}
	t.drop("latency", dropped, fmt.Sprintf("LATENCY LATEST events repeated, negative or over the cap of %d", maxLatencyEvents))
	major, _, ok := info.Version()
	if !ok || major < 7 || len(t.cfg.Commands) == 0 {
		return events, nil, nil
	}
	args := []any{"latency", "histogram"}
	for _, c := range t.cfg.Commands {
		args = append(args, c)
	}
	reply, err = t.client.Do(ctx, args...).Result()
	if err != nil {
		return events, nil, redisErr("LATENCY HISTOGRAM", err)
	}
	hists, dropped, err := parseLatencyHistogram(reply)
	if err != nil {
		return events, nil, err
	}
	t.drop("latency", dropped, fmt.Sprintf("LATENCY HISTOGRAM commands repeated or over the cap of %d", maxHistogramCommands))
	stats, _, err := fetchInfo(ctx, t.client, "commandstats")
	if err == nil {
		cs := parseCommandStats(stats)
		for i := range hists {
			if st, ok := cs[strings.ToLower(hists[i].Command)]; ok {
				hists[i].SumSeconds, hists[i].SumExact = float64(st.usec)/1e6, true
			}
		}
	}
	return events, hists, nil
}

// configParams are the settings the checks read with CONFIG GET.
func configParams() []string {
	return []string{
		"maxmemory", "maxclients", "tcp-backlog", "latency-monitor-threshold",
		"appendonly", "appendfsync", "no-appendfsync-on-rewrite",
	}
}

// fetchConfig reads configParams: one CONFIG GET on Redis 7+, which takes
// several names, one per name before.
func fetchConfig(ctx context.Context, c Doer, info Info) (map[string]string, error) {
	out := map[string]string{}
	params := configParams()
	batches := [][]string{params}
	if major, _, ok := info.Version(); !ok || major < 7 {
		batches = batches[:0]
		for _, p := range params {
			batches = append(batches, []string{p})
		}
	}
	for _, b := range batches {
		args := []any{"config", "get"}
		for _, p := range b {
			args = append(args, p)
		}
		reply, err := c.Do(ctx, args...).Result()
		if err != nil {
			return nil, redisErr("CONFIG GET", err)
		}
		if err := parseConfigReply(reply, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// parseConfigReply adds the name/value pairs of a CONFIG GET reply (a flat
// array in RESP2, a map in RESP3) to out.
func parseConfigReply(reply any, out map[string]string) error {
	switch r := reply.(type) {
	case []any:
		if len(r)%2 != 0 {
			return errors.New("config get: odd reply")
		}
		for i := 0; i < len(r); i += 2 {
			k, ok1 := r[i].(string)
			v, ok2 := r[i+1].(string)
			if !ok1 || !ok2 {
				return fmt.Errorf("config get: %T/%T in reply", r[i], r[i+1])
			}
			out[k] = v
		}
	case map[any]any:
		for k, v := range r {
			out[fmt.Sprint(k)] = fmt.Sprint(v)
		}
	default:
		return fmt.Errorf("config get: reply is %T", reply)
	}
	return nil
}

// redisErr wraps a Redis error; a command refused by ACL (NOPERM) or
// renamed away (unknown command) is "not available here".
func redisErr(cmd string, err error) error {
	var rerr redis.Error
	if errors.As(err, &rerr) {
		msg := rerr.Error()
		if strings.HasPrefix(msg, "NOPERM") || strings.HasPrefix(msg, "ERR unknown command") ||
			strings.HasPrefix(msg, "ERR unknown subcommand") {
			return fmt.Errorf("%s refused: %w (%s)", cmd, ErrNoData, firstWord(msg))
		}
	}
	return fmt.Errorf("%s: %w", cmd, err)
}

func firstWord(s string) string {
	w, _, _ := strings.Cut(s, " ")
	return w
}
