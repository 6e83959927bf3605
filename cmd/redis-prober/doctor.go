package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/promslog"
	"golang.org/x/sys/unix"

	"github.com/redis-prober/redis-prober/collector"
	"github.com/redis-prober/redis-prober/internal/safetext"
	"github.com/redis-prober/redis-prober/prober"
)

// doctorTimeout bounds each Redis request and connect of the doctor.
const doctorTimeout = 2 * time.Second

// addDoctorCommand declares `redis-prober doctor`: a one-shot host and Redis
// tuning report with the fix for each failed check, and a short live
// measurement. Exit 0: nothing critical failed; 1: something critical
// failed (or a Redis could not be reached); 2: bad usage.
func addDoctorCommand(cmd *kingpin.CmdClause) command {
	redisF := addRedisFlags(cmd)
	paths := addPathFlags(cmd)
	duration := durationFlag(cmd, "measure.duration", "How long to measure PING latency, connect latency and the host's intrinsic latency (0 skips it).", "3s")
	output := typedFlag(cmd, "output", "Report format: text or json.", "text", func(s string) (string, error) {
		if s != "text" && s != "json" {
			return "", fmt.Errorf("%q is not text or json", s)
		}
		return s, nil
	})

	return func(ctx context.Context, env *cliEnv) error {
		log := promslog.New(env.logConfig)
		if *duration > 5*time.Minute {
			return usagef("--measure.duration: %v is more than 5m", *duration)
		}
		names, eps, err := redisF.endpoints(log)
		if err != nil {
			return err
		}
		rep := runDoctor(ctx, doctorConfig{
			names: names, endpoints: eps, paths: paths.paths(), duration: *duration, log: log,
		})
		if *output == "json" {
			enc := json.NewEncoder(env.stdout)
			enc.SetIndent("", "  ")
			if err := enc.Encode(rep); err != nil {
				return fmt.Errorf("write report: %w", err)
			}
		} else {
			rep.writeText(env.stdout, useColour(env.stdout))
		}
		if len(rep.Critical) > 0 {
			return fmt.Errorf("critical: %s", strings.Join(rep.Critical, ", "))
		}
		return nil
	}
}

type doctorConfig struct {
	names     []string
	endpoints []prober.Endpoint
	paths     collector.Paths
	duration  time.Duration
	log       *slog.Logger
}

// doctorReport is the whole report; its JSON form is for machines.
type doctorReport struct {
	Host      []checkReport  `json:"host"`
	Intrinsic *intrinsicStat `json:"intrinsic_latency,omitempty"`
	Targets   []targetReport `json:"targets"`
	// Critical lists what failed at critical severity, as target/check
	// ids; unreachable targets are listed as target/unreachable.
	Critical []string `json:"critical_failed"`
}

type targetReport struct {
	Target         string `json:"target"`
	Server         string `json:"server,omitempty"`
	Reachable      bool   `json:"reachable"`
	Error          string `json:"error,omitempty"`
	ProcessVisible bool   `json:"process_visible"`
	// ProcessError says why the process is not visible: Redis runs on
	// another host (or in another namespace), so the checks of Redis's host
	// are not read from this one.
	ProcessError string         `json:"process_error,omitempty"`
	Ping         *latencyStat   `json:"ping_latency,omitempty"`
	Connect      *latencyStat   `json:"connect_latency,omitempty"`
	// Clock is what timed the PINGs: kernel (wire time) or user.
	Clock string `json:"clock,omitempty"`
	// ClientDelay is how long replies sat in this host's kernel before
	// the prober read them: this host's own delay, not in Ping.
	ClientDelay *latencyStat `json:"client_delay,omitempty"`
	Checks       []checkReport  `json:"checks"`
	Events       []latencyEvent `json:"latency_events,omitempty"`
}

type checkReport struct {
	ID       string `json:"id"`
	Severity string `json:"severity"`
	Status   string `json:"status"`
	Value    string `json:"value"`
	Why      string `json:"why"`
	Fix      string `json:"fix"`
}

type latencyEvent struct {
	Event         string  `json:"event"`
	LatestSeconds float64 `json:"latest_seconds"`
	MaxSeconds    float64 `json:"max_seconds"`
}

type latencyStat struct {
	Count      int     `json:"count"`
	Errors     int     `json:"errors"`
	P50Seconds float64 `json:"p50_seconds"`
	P99Seconds float64 `json:"p99_seconds"`
	MaxSeconds float64 `json:"max_seconds"`
}

type intrinsicStat struct {
	Windows    int     `json:"windows"`
	MaxSeconds float64 `json:"max_seconds"`
}

func runDoctor(ctx context.Context, cfg doctorConfig) *doctorReport {
	rep := &doctorReport{Targets: make([]targetReport, len(cfg.endpoints))}
	meas := make([]*sampleRecorder, len(cfg.endpoints))
	intr := &maxObserver{}
	if cfg.duration > 0 {
		mctx, cancel := context.WithTimeout(ctx, cfg.duration)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A heavier duty cycle than in `run` (5%): this runs once.
			prober.IntrinsicSampler{Window: 5 * time.Millisecond, Interval: 100 * time.Millisecond, Observer: intr}.Run(mctx)
		}()
		for i, ep := range cfg.endpoints {
			meas[i] = &sampleRecorder{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				measure(mctx, ep, meas[i], cfg.log)
			}()
		}
		wg.Wait()
		cancel()
		if n, worst := intr.result(); n > 0 {
			rep.Intrinsic = &intrinsicStat{Windows: n, MaxSeconds: worst.Seconds()}
		}
	}
	for i, ep := range cfg.endpoints {
		rep.Targets[i] = checkTarget(ctx, cfg, cfg.names[i], ep, intr)
		if m := meas[i]; m != nil {
			t := &rep.Targets[i]
			t.Ping, t.Connect, t.ClientDelay, t.Clock = m.stats()
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
			rep.Critical = append(rep.Critical, t.Target+"/unreachable")
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
// every 200 ms until ctx is done, with the prober's own probe code.
func measure(ctx context.Context, ep prober.Endpoint, rec *sampleRecorder, log *slog.Logger) {
	cmds, err := prober.ParseCommands("ping")
	if err != nil {
		return
	}
	cfg := prober.ProbeConfig{
		Rate: 100, Timeout: doctorTimeout, Commands: cmds, Connections: 1, DataSize: 1, KeyTTL: time.Minute,
		Namespace: prober.Namespace{Prefix: "redis-prober:", Tag: "doctor"},
	}
	faults := prober.NewFaultLog(log)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		prober.NewConnectProbe(ep, doctorTimeout, rec, faults).Run(ctx, 200*time.Millisecond)
	}()
	prober.NewProbe(cfg, ep, rec, faults).Run(ctx)
	wg.Wait()
}

// checkTarget reads the target once through the same collector code the
// exporter runs, and keeps the Redis-side checks.
func checkTarget(ctx context.Context, cfg doctorConfig, name string, ep prober.Endpoint, intr *maxObserver) targetReport {
	client := ep.NewClient(doctorTimeout, 1)
	defer client.Close()
	tgt := collector.NewTarget(collector.TargetConfig{
		Name: name, Commands: []string{"ping"}, Paths: cfg.paths, Enabled: collector.AllEnabled(),
		Intrinsic: intr.worst, Log: cfg.log,
	}, client)
	rctx, cancel := context.WithTimeout(ctx, 4*doctorTimeout)
	defer cancel()
	tgt.Refresh(rctx)
	s := tgt.Snapshot()
	tr := targetReport{Target: name, Reachable: s.Info != nil, ProcessVisible: s.Process != nil}
	if s.Info == nil {
		tr.Error = errorText(s.Errors["info"])
		return tr
	}
	tr.Server = s.Info.Server()
	if s.Process == nil {
		tr.ProcessError = errorText(s.Errors["process"])
	}
	for _, r := range s.Checks {
		if r.Scope != collector.ScopeRedis {
			continue
		}
		if r.RedisHost && s.Process == nil {
			r = notThisHost(r, s.Config)
		}
		tr.Checks = append(tr.Checks, toCheckReport(r))
	}
	for _, e := range s.Events {
		tr.Events = append(tr.Events, latencyEvent{Event: e.Event, LatestSeconds: float64(e.LatestMillis) / 1e3, MaxSeconds: float64(e.MaxMillis) / 1e3})
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
func hostChecks(cfg doctorConfig, intr *maxObserver, targets []targetReport) []checkReport {
	hf, err := collector.ReadHostFacts(cfg.paths)
	if err != nil {
		cfg.log.Debug("reading host facts", "err", err)
	}
	f := collector.Facts{Host: hf}
	f.Intrinsic, f.HasIntrinsic = intr.worst()
	var out []checkReport
	for _, r := range collector.Evaluate(&f) {
		if r.Scope == collector.ScopeHost {
			out = append(out, toCheckReport(r))
		}
	}
	return out
}

func toCheckReport(r collector.Result) checkReport {
	return checkReport{ID: r.ID, Severity: string(r.Severity), Status: r.Status.String(), Value: r.Value, Why: r.Why, Fix: r.Fix}
}

// errorText says why a target could not be read, without its internals.
func errorText(err error) string {
	if err == nil {
		return "no answer"
	}
	return err.Error()
}

// writeText prints the report for a person: one line per check, and for
// each problem why it matters and the fix.
// Every string that came from Redis (or the host) goes through
// safetext.Printable: an INFO field must not drive the terminal.
func (r *doctorReport) writeText(w io.Writer, colour bool) {
	p := &textPrinter{w: w, colour: colour}
	q := safetext.Printable
	p.heading("Host (what this prober's /proc and /sys show)")
	if r.Intrinsic != nil {
		p.line("  measured: intrinsic latency max %s over %d windows", fmtSeconds(r.Intrinsic.MaxSeconds), r.Intrinsic.Windows)
	}
	for _, c := range r.Host {
		p.check(c)
	}
	for _, t := range r.Targets {
		p.line("")
		if !t.Reachable {
			p.heading("Redis " + q(t.Target) + ": NOT REACHABLE")
			p.line("  %s %s", p.tag("FAIL", red), q(t.Error))
			continue
		}
		p.heading("Redis " + q(t.Target) + " (" + q(t.Server) + ")")
		if t.Ping != nil {
			p.line("  measured: %s", t.Ping.describe("PING"))
		}
		if t.Connect != nil {
			p.line("  measured: %s", t.Connect.describe("connect (dial+AUTH+PING)"))
		}
		p.hostDelay(t)
		if !t.ProcessVisible {
			p.line("  note: the redis-server process is not visible here (%s)", q(t.ProcessError))
			p.line("        Redis runs on another host (or in another namespace): the Host section above is not its host,")
			p.line("        so the checks of its host and process are unknown; run the doctor on Redis's host for them")
		}
		for _, e := range t.Events {
			p.line("  LATENCY LATEST %-20s latest %s, max %s", q(e.Event), fmtSeconds(e.LatestSeconds), fmtSeconds(e.MaxSeconds))
		}
		for _, c := range t.Checks {
			p.check(c)
		}
	}
	p.line("")
	counts := map[string]int{}
	for _, c := range r.allChecks() {
		counts[verdict(c)]++
	}
	summary := fmt.Sprintf("Summary: failed %d, warnings %d, info %d, passed %d, unknown %d",
		counts["FAIL"], counts["WARN"], counts["INFO"], counts["PASS"], counts["UNKNOWN"])
	if len(r.Critical) > 0 {
		p.line("%s; critical: %s", summary, q(strings.Join(r.Critical, ", ")))
	} else {
		p.line("%s; nothing critical", summary)
	}
}

func (r *doctorReport) allChecks() []checkReport {
	out := slices.Clone(r.Host)
	for _, t := range r.Targets {
		out = append(out, t.Checks...)
	}
	return out
}

// verdict is the word shown for a check: FAIL (critical), WARN, INFO,
// PASS or UNKNOWN.
func verdict(c checkReport) string {
	switch {
	case c.Status == "pass":
		return "PASS"
	case c.Status == "unknown":
		return "UNKNOWN"
	case c.Status == "warn":
		return "WARN"
	case c.Severity == string(collector.SeverityCritical):
		return "FAIL"
	case c.Severity == string(collector.SeverityWarning):
		return "WARN"
	}
	return "INFO"
}

const (
	red    = "31"
	green  = "32"
	yellow = "33"
	cyan   = "36"
	grey   = "90"
)

type textPrinter struct {
	w      io.Writer
	colour bool
}

func (p *textPrinter) line(format string, args ...any) { fmt.Fprintf(p.w, format+"\n", args...) }

func (p *textPrinter) heading(s string) {
	if p.colour {
		s = "\x1b[1m" + s + "\x1b[0m"
	}
	p.line("%s", s)
}

func (p *textPrinter) tag(word, colour string) string {
	s := fmt.Sprintf("%-7s", word)
	if p.colour {
		return "\x1b[" + colour + "m" + s + "\x1b[0m"
	}
	return s
}

func (p *textPrinter) check(c checkReport) {
	v := verdict(c)
	colour := map[string]string{"PASS": green, "FAIL": red, "WARN": yellow, "INFO": cyan, "UNKNOWN": grey}[v]
	q := safetext.Printable
	p.line("  %s %-21s %s", p.tag(v, colour), q(c.ID), q(c.Value))
	if v == "PASS" || v == "UNKNOWN" {
		return
	}
	p.line("          why: %s", q(c.Why))
	for i, l := range strings.Split(c.Fix, "\n") {
		label := "fix:"
		if i > 0 {
			label = "    "
		}
		p.line("          %s %s", label, q(l))
	}
}

// slowHost is the client delay p99 above which the doctor says this host,
// not Redis or the network, is slow to hand replies to the process that
// waits for them (the intrinsic-latency check's threshold).
const slowHost = time.Millisecond

// hostDelay prints what timed the PINGs and this host's own delay beside
// them: with kernel timestamps the PING figure is the wire's, and a client
// on this host sees the client delay on top of it.
func (p *textPrinter) hostDelay(t targetReport) {
	if t.Clock == string(prober.ClockUser) {
		p.line("  note: no kernel timestamps here; the PING figure includes this host's own delay")
		return
	}
	d := t.ClientDelay
	if d == nil || d.Count == 0 {
		return
	}
	p.line("  measured: %s", d.describe("client delay (reply in this host's kernel until read)"))
	if d.P99Seconds > slowHost.Seconds() {
		p.line("  %s this host is slow: replies waited %s (p99) in its kernel before being read. That is this host,",
			p.tag("WARN", yellow), fmtSeconds(d.P99Seconds))
		p.line("        not Redis or the network (the PING figure leaves it out); clients running here see it on top")
	}
}

func (s *latencyStat) describe(what string) string {
	if s.Count == 0 {
		return fmt.Sprintf("%s: no answer (%d errors)", what, s.Errors)
	}
	return fmt.Sprintf("%s p50 %s, p99 %s, max %s (%d requests, %d errors)",
		what, fmtSeconds(s.P50Seconds), fmtSeconds(s.P99Seconds), fmtSeconds(s.MaxSeconds), s.Count, s.Errors)
}

func fmtSeconds(s float64) string {
	return fmt.Sprintf("%.3f ms", s*1e3)
}

// useColour is true only for a terminal, and never with NO_COLOR set.
func useColour(w io.Writer) bool {
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// sampleRecorder keeps every sample of the short live measurement, so the
// percentiles are exact.
type sampleRecorder struct {
	mu                      sync.Mutex
	ping, connect, delay    []time.Duration
	pingErrors, connectErrs int
	clock                   prober.Clock
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

func (r *sampleRecorder) RecordClientDelay(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.delay = append(r.delay, d)
}

func (r *sampleRecorder) SetClock(c prober.Clock) {
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

func (r *sampleRecorder) stats() (ping, connect, delay *latencyStat, clock string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.delay) > 0 {
		delay = summarize(r.delay, 0)
	}
	return summarize(r.ping, r.pingErrors), summarize(r.connect, r.connectErrs), delay, string(r.clock)
}

func summarize(ds []time.Duration, errs int) *latencyStat {
	st := &latencyStat{Count: len(ds), Errors: errs}
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

// worst is the collector's Intrinsic source.
func (o *maxObserver) worst() (time.Duration, bool) {
	n, d := o.result()
	return d, n > 0
}
