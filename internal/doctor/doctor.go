// Package doctor is `redis-prober doctor`: a one-shot host and Redis tuning
// report with the fix for each failed check, and a short live measurement
// with the prober's own probe code. It reads the same collectors as the
// exporter, so what the doctor says and what the metrics say agree.
package doctor

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/redis-prober/redis-prober/collector"
	"github.com/redis-prober/redis-prober/explain"
	"github.com/redis-prober/redis-prober/internal/host"
	"github.com/redis-prober/redis-prober/prober"
	"github.com/redis-prober/redis-prober/wire"
)

// Timeout bounds each Redis request and connect of the doctor.
const Timeout = 2 * time.Second

// Config is what one doctor run looks at.
type Config struct {
	Names     []string // one per endpoint, as the target label would read
	Endpoints []prober.Endpoint
	Paths     host.Paths
	Duration  time.Duration // of the live measurement; 0 skips it
	Log       *slog.Logger
}

// Report is the whole report; its JSON form is for machines.
type Report struct {
	Host      []CheckReport  `json:"host"`
	Intrinsic *IntrinsicStat `json:"intrinsic_latency,omitempty"`
	Targets   []TargetReport `json:"targets"`
	// Critical lists what failed at critical severity, as target/check
	// ids; a target that gave no INFO is listed as target/<its Failure>
	// (target/unreachable, target/credentials_refused, ...).
	Critical []string `json:"critical_failed"`
}

// TargetReport is what the doctor found on one Redis: reachability, the
// live measurement and the Redis-side checks.
type TargetReport struct {
	Target    string `json:"target"`
	Server    string `json:"server,omitempty"`
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
	// Failure says why a target that gave no INFO failed: unreachable,
	// credentials_refused, not_redis or error_reply (failure.go).
	Failure        string `json:"failure,omitempty"`
	ProcessVisible bool   `json:"process_visible"`
	// ProcessError says why the process is not visible: Redis runs on
	// another host (or in another namespace), so the checks of Redis's host
	// are not read from this one.
	ProcessError string       `json:"process_error,omitempty"`
	Ping         *LatencyStat `json:"ping_latency,omitempty"`
	Connect      *LatencyStat `json:"connect_latency,omitempty"`
	// Clock is what timed the PINGs: kernel (wire time) or user.
	Clock string `json:"clock,omitempty"`
	// ClientDelay is how long replies sat in this host's kernel before
	// the prober read them: this host's own delay, not in Ping.
	ClientDelay *LatencyStat `json:"client_delay,omitempty"`
	// Slow are the PINGs of the measurement at or above SlowThreshold,
	// by their cause (docs/explain.md); nil without a measurement.
	Slow          []SlowCause `json:"slow_requests,omitempty"`
	SlowThreshold float64     `json:"slow_threshold_seconds,omitempty"`
	// LargestKeys are the largest key-size bins of each kind (INFO
	// KEYSIZES, Redis 8+) as read while slow PINGs waited, said when some
	// were slow_command: a command on one of them may be it.
	LargestKeys string         `json:"largest_keys,omitempty"`
	Checks      []CheckReport  `json:"checks"`
	Events      []LatencyEvent `json:"latency_events,omitempty"`
}

// CheckReport is one check as the report shows it, with why it matters
// and the fix.
type CheckReport struct {
	ID       string `json:"id"`
	Severity string `json:"severity"`
	Status   string `json:"status"`
	Value    string `json:"value"`
	Why      string `json:"why"`
	Fix      string `json:"fix"`
}

// LatencyEvent is one LATENCY LATEST row.
type LatencyEvent struct {
	Event         string  `json:"event"`
	LatestSeconds float64 `json:"latest_seconds"`
	MaxSeconds    float64 `json:"max_seconds"`
}

// LatencyStat is an exact summary of the samples of the live measurement.
type LatencyStat struct {
	Count      int     `json:"count"`
	Errors     int     `json:"errors"`
	P50Seconds float64 `json:"p50_seconds"`
	P99Seconds float64 `json:"p99_seconds"`
	MaxSeconds float64 `json:"max_seconds"`
}

// SlowCause is one cause of the measurement's slow requests.
type SlowCause struct {
	Cause string `json:"cause"`
	Count uint64 `json:"count"`
}

// IntrinsicStat is the host's worst scheduling gap over the measurement.
type IntrinsicStat struct {
	Windows    int     `json:"windows"`
	MaxSeconds float64 `json:"max_seconds"`
}

func Run(ctx context.Context, cfg Config) *Report {
	rep := &Report{Targets: make([]TargetReport, len(cfg.Endpoints))}
	meas := make([]*sampleRecorder, len(cfg.Endpoints))
	intr := &maxObserver{}
	if cfg.Duration > 0 {
		mctx, cancel := context.WithTimeout(ctx, cfg.Duration)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A heavier duty cycle than in `run` (5%): this runs once.
			prober.IntrinsicSampler{Window: 5 * time.Millisecond, Interval: 100 * time.Millisecond, Observer: intr}.Run(mctx)
		}()
		for i, ep := range cfg.Endpoints {
			meas[i] = &sampleRecorder{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				measure(ctx, mctx, ep, meas[i], cfg)
			}()
		}
		wg.Wait()
		cancel()
		if n, worst := intr.result(); n > 0 {
			rep.Intrinsic = &IntrinsicStat{Windows: n, MaxSeconds: worst.Seconds()}
		}
	}
	for i, ep := range cfg.Endpoints {
		rep.Targets[i] = checkTarget(ctx, cfg, cfg.Names[i], ep)
		if m := meas[i]; m != nil {
			t := &rep.Targets[i]
			t.Ping, t.Connect, t.ClientDelay, t.Clock = m.stats()
			if m.slow != nil {
				t.SlowThreshold = m.slow.Threshold().Seconds()
				counts := m.slow.Counts()
				for _, c := range explain.Causes() {
					if counts[c] > 0 {
						t.Slow = append(t.Slow, SlowCause{Cause: c.String(), Count: counts[c]})
					}
				}
				slices.SortStableFunc(t.Slow, func(a, b SlowCause) int { return cmp.Compare(b.Count, a.Count) })
				if k := m.slow.KeySizes(); counts[explain.SlowCommand] > 0 && !k.Empty() {
					t.LargestKeys = k.String()
				}
			}
		}
	}
	rep.Host = hostChecks(cfg, intr, rep.Targets)
	for _, c := range rep.Host {
		if c.Status == "fail" && c.Severity == string(collector.SeverityCritical) {
			rep.Critical = append(rep.Critical, "host/"+c.ID)
		}
	}
	for _, t := range rep.Targets {
		if !t.Reachable {
			rep.Critical = append(rep.Critical, t.Target+"/"+cmp.Or(t.Failure, FailureUnreachable))
			continue
		}
		for _, c := range t.Checks {
			if c.Status == "fail" && c.Severity == string(collector.SeverityCritical) {
				rep.Critical = append(rep.Critical, t.Target+"/"+c.ID)
			}
		}
	}
	return rep
}

// measure probes PING at 100/s on one connection and a fresh connection
// every 200 ms until mctx is done, with the prober's own probe code, and
// attributes its slow PINGs to their causes as run does (package explain,
// at the default objective). The sources are read once more after the
// window (within ctx), so the last slow requests are decided too.
func measure(ctx, mctx context.Context, ep prober.Endpoint, rec *sampleRecorder, dcfg Config) {
	cmds, err := prober.ParseCommands("ping")
	if err != nil {
		return
	}
	cfg := prober.ProbeConfig{
		Rate: 100, Timeout: Timeout, Commands: cmds, Connections: 1, DataSize: 1, KeyTTL: time.Minute,
		Namespace: prober.Namespace{Prefix: "redis-prober:", Tag: "doctor"},
	}
	faults := prober.NewFaultLog(dcfg.Log)
	slow := explain.NewNode(explain.Config{})
	client := ep.NewClient(Timeout, 1)
	defer client.Close()
	reader := explain.NewReader(explain.ReaderConfig{Node: slow, Client: client, Log: dcfg.Log, Paths: dcfg.Paths})
	rec.slow = slow
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		prober.NewConnectProbe(ep, Timeout, rec, faults).Run(mctx, 200*time.Millisecond)
	}()
	go func() {
		defer wg.Done()
		readSources(mctx, reader)
	}()
	prober.NewProbe(cfg, ep, slow.Tap(rec), faults).Run(mctx)
	wg.Wait()
	// The window's last slow requests: their sources are read past them.
	for i := 0; i < 3 && slow.Pending() && ctx.Err() == nil; i++ {
		tctx, cancel := context.WithTimeout(ctx, Timeout)
		reader.Tick(tctx)
		cancel()
		if slow.Pending() {
			time.Sleep(explain.TickInterval / 2)
		}
	}
}

// readSources runs the reader as a node's housekeeping would, until ctx is
// done.
func readSources(ctx context.Context, r *explain.Reader) {
	tick := time.NewTicker(explain.ProcInterval)
	defer tick.Stop()
	every := int(explain.TickInterval / explain.ProcInterval)
	for i := 0; ctx.Err() == nil; i++ {
		if i%every == 0 {
			r.Tick(ctx)
		} else {
			r.SampleProc(ctx)
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

// checkTarget reads the target once through the same collector code the
// exporter runs, and keeps the Redis-side checks.
func checkTarget(ctx context.Context, cfg Config, name string, ep prober.Endpoint) TargetReport {
	client := ep.NewClient(Timeout, 1)
	defer client.Close()
	tgt := collector.NewTarget(collector.TargetConfig{
		Name: name, Commands: []string{"ping"}, Paths: cfg.Paths, Enabled: collector.AllEnabled(), Log: cfg.Log,
	}, client)
	rctx, cancel := context.WithTimeout(ctx, 4*Timeout)
	defer cancel()
	tgt.Refresh(rctx)
	s := tgt.Snapshot()
	tr := TargetReport{Target: name, Reachable: s.Info != nil, ProcessVisible: s.Process != nil}
	if s.Info == nil {
		tr.Error = errorText(s.Errors["info"])
		tr.Failure = failureOf(s.Errors["info"])
		return tr
	}
	tr.Server = s.Info.Server()
	if s.Process == nil {
		tr.ProcessError = errorText(s.Errors["process"])
	}
	for _, r := range s.Checks { // the Redis-scope checks; the host's are hostChecks
		if r.RedisHost && s.Process == nil {
			r = notThisHost(r, s.Config)
		}
		tr.Checks = append(tr.Checks, toCheckReport(r))
	}
	for _, e := range s.Events {
		tr.Events = append(tr.Events, LatencyEvent{Event: e.Event, LatestSeconds: float64(e.LatestMillis) / 1e3, MaxSeconds: float64(e.MaxMillis) / 1e3})
	}
	return tr
}

// notThisHost replaces a check of Redis's host by "unknown" when Redis's
// process is not visible here: Redis runs on another host (or in another
// network or PID namespace), and this host's sysctls and NUMA layout say
// nothing about it. What Redis itself reports (tcp-backlog) is kept.
func notThisHost(r collector.Result, config map[string]string) collector.Result {
	r.Status = collector.StatusUnknown
	r.Value = "Redis's host is not visible from here"
	switch r.ID {
	case "somaxconn", "tcp_max_syn_backlog":
		if v, ok := config["tcp-backlog"]; ok {
			r.Value = "tcp-backlog " + v + " (from Redis); the sysctls of Redis's host are not visible from here"
		}
	}
	return r
}

// hostChecks evaluates the host-scope checks once, with what the targets
// told (nothing, when none was reachable).
func hostChecks(cfg Config, intr *maxObserver, targets []TargetReport) []CheckReport {
	hf, err := collector.ReadHostFacts(cfg.Paths)
	if err != nil {
		cfg.Log.Debug("reading host facts", "err", err)
	}
	f := collector.Facts{Host: hf}
	f.Intrinsic, f.HasIntrinsic = intr.worst()
	var out []CheckReport
	for _, r := range collector.Evaluate(&f, collector.ScopeHost) {
		out = append(out, toCheckReport(r))
	}
	return out
}

func toCheckReport(r collector.Result) CheckReport {
	return CheckReport{ID: r.ID, Severity: string(r.Severity), Status: r.Status.String(), Value: r.Value, Why: r.Why, Fix: r.Fix}
}

// errorText says why a target could not be read, without its internals.
func errorText(err error) string {
	if err == nil {
		return "no answer"
	}
	return err.Error()
}

// sampleRecorder keeps every sample of the short live measurement, so the
// percentiles are exact.
type sampleRecorder struct {
	slow                    *explain.Node // the measurement's slow requests by cause
	mu                      sync.Mutex
	ping, connect, delay    []time.Duration
	pingErrors, connectErrs int
	clock                   wire.Clock
}

func (r *sampleRecorder) Record(_ int, res prober.Result, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if res != prober.ResultOK {
		r.pingErrors++
		return
	}
	r.ping = append(r.ping, d)
}

func (r *sampleRecorder) SetUp(bool)              {}
func (r *sampleRecorder) RecordLag(time.Duration) {}
func (r *sampleRecorder) ClockFallback()          {}

// RecordNetwork keeps nothing: the network evidence reaches the window's
// attribution through slow's tap.
func (r *sampleRecorder) RecordNetwork(prober.NetworkSample) {}

func (r *sampleRecorder) RecordClientDelay(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.delay = append(r.delay, d)
}

func (r *sampleRecorder) SetClock(c wire.Clock) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clock = c
}

func (r *sampleRecorder) RecordConnect(res prober.Result, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if res != prober.ResultOK {
		r.connectErrs++
		return
	}
	r.connect = append(r.connect, d)
}

func (r *sampleRecorder) stats() (ping, connect, delay *LatencyStat, clock string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.delay) > 0 {
		delay = summarize(r.delay, 0)
	}
	return summarize(r.ping, r.pingErrors), summarize(r.connect, r.connectErrs), delay, string(r.clock)
}

func summarize(ds []time.Duration, errs int) *LatencyStat {
	st := &LatencyStat{Count: len(ds), Errors: errs}
	if len(ds) == 0 {
		return st
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	q := func(p float64) float64 {
		i := int(p*float64(len(s))+0.999999) - 1
		return s[max(0, min(i, len(s)-1))].Seconds()
	}
	st.P50Seconds, st.P99Seconds, st.MaxSeconds = q(0.50), q(0.99), s[len(s)-1].Seconds()
	return st
}

// maxObserver keeps the worst intrinsic-latency window.
type maxObserver struct {
	mu     sync.Mutex
	n      int
	maxSec float64
}

func (o *maxObserver) Observe(v float64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.n++
	o.maxSec = max(o.maxSec, v)
}

func (o *maxObserver) result() (int, time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n, time.Duration(o.maxSec * float64(time.Second))
}

// worst is the intrinsic_latency host check's input.
func (o *maxObserver) worst() (time.Duration, bool) {
	n, d := o.result()
	return d, n > 0
}
