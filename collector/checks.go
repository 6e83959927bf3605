package collector

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/redis-prober/redis-prober/internal/safetext"
)

// Severity is how bad a failed check is.
type Severity string

const (
	SeverityCritical Severity = "critical"
	SeverityWarning  Severity = "warning"
	SeverityInfo     Severity = "info"
)

// Status is the outcome of one check.
type Status int

const (
	// StatusUnknown: an input could not be read (no permission, not
	// visible from here). Never counted as a failure.
	StatusUnknown Status = iota
	StatusPass
	// StatusWarn: passes its severity but fails its warning level.
	StatusWarn
	StatusFail
)

func (s Status) String() string {
	switch s {
	case StatusPass:
		return "pass"
	case StatusWarn:
		return "warn"
	case StatusFail:
		return "fail"
	}
	return "unknown"
}

// Scope says whether a check is about the host the prober reads or about
// one Redis server.
type Scope string

const (
	ScopeHost  Scope = "host"
	ScopeRedis Scope = "redis"
)

// Check is one tuning check: why it matters for latency and the exact fix.
type Check struct {
	ID       string
	Severity Severity // of a failure
	Scope    Scope
	// Warns: the check also has a warning level below its failure
	// threshold, exported as a second series with severity="warning".
	Warns bool
	// RedisHost: the check reads this host's /proc or /sys as the host
	// Redis runs on (a Redis-scope check with a host input). It is only
	// meaningful when Redis runs here: its process is visible.
	RedisHost bool
	Why       string
	Fix       string
	eval      func(f *Facts) (Status, string)
}

// Result is a check's outcome and the value it saw (or why it is unknown).
type Result struct {
	Check
	Status Status
	Value  string
}

// Failed reports a failure at the check's own severity.
func (r Result) Failed() bool { return r.Status == StatusFail }

// Evaluate runs the checks of scope over f, in report order: ScopeRedis
// for each target's refresh, ScopeHost once per host refresh (HostChecks)
// and in the doctor. The list (Checks) is the one place a check is
// written; this is the one place it runs.
func Evaluate(f *Facts, scope Scope) []Result {
	list := checkList()
	out := make([]Result, 0, len(list))
	for _, c := range list {
		if c.Scope != scope {
			continue
		}
		st, v := c.eval(f)
		out = append(out, Result{Check: c, Status: st, Value: v})
	}
	return out
}

// checkDescs are the series of the checks collector.
type checkDescs struct {
	passed, unknown targetDesc
}

func newCheckDescs() checkDescs {
	return checkDescs{
		passed: newTargetDesc("redis_prober_check_passed",
			"1 when a tuning check of this Redis passes at the given severity, 0 when it fails; absent while its input cannot be read (see redis_prober_check_unknown). The checks of the prober's own host are redis_prober_host_check_passed.",
			"check", "severity"),
		unknown: newTargetDesc("redis_prober_check_unknown",
			"1 when a tuning check cannot be evaluated because an input is not readable here (ACL, PID namespace, no /sys); never a failure. Absent for checks that were evaluated (see redis_prober_check_passed).",
			"check"),
	}
}

func (d checkDescs) describe(ch chan<- *prometheus.Desc) {
	ch <- d.passed.Desc
	ch <- d.unknown.Desc
}

func (d checkDescs) emit(out *sink, sl *seriesLabels, results []Result) {
	checkSeries(results, func(id string, sev Severity, passed bool) {
		out.series(d.passed, prometheus.GaugeValue, boolFloat(passed), sl, id, string(sev))
	}, func(id string) {
		out.series(d.unknown, prometheus.GaugeValue, 1, sl, id)
	})
}

// checkSeries is what each result exports, the same per target
// (redis_prober_check_*) and for the host (redis_prober_host_check_*):
// passed (by severity) when it was evaluated, unknown when it could not be
// (not a 0 beside every evaluated one: series are the budget). A check
// that Warns has a second passed series at severity warning.
func checkSeries(results []Result, passed func(id string, sev Severity, ok bool), unknown func(id string)) {
	for _, r := range results {
		if r.Status == StatusUnknown {
			unknown(r.ID)
			continue
		}
		passed(r.ID, r.Severity, r.Status != StatusFail)
		if r.Warns {
			passed(r.ID, SeverityWarning, r.Status == StatusPass)
		}
	}
}

// FailedCheck is a check that failed at its last evaluation, as the status
// page lists it: a 0 of redis_prober_check_passed.
type FailedCheck struct {
	ID string
	// Severity is the check's own for a failure, warning for a check
	// that passes its severity but not its warning level.
	Severity Severity
	// Value is what the check saw ("appendfsync always"), printable and
	// at most maxFailedValue bytes. Checks read numbers and settings that
	// hold no secrets (never requirepass or masterauth).
	Value string
}

const maxFailedValue = 200

// Failing lists the results that fail, at their severity or their warning
// level, in check order. Its length is bounded by the fixed check list.
func Failing(results []Result) []FailedCheck {
	var out []FailedCheck
	for _, r := range results {
		sev := r.Severity
		switch r.Status {
		case StatusFail:
		case StatusWarn:
			sev = SeverityWarning
		default:
			continue
		}
		out = append(out, FailedCheck{ID: r.ID, Severity: sev, Value: safetext.Label(r.Value, maxFailedValue)})
	}
	return out
}

// FailingChecks is Failing over the last refresh (the Redis-scope checks;
// the host's are HostChecks.Failing); ok is false when the checks
// collector is off or has not run yet.
func (t *Target) FailingChecks() (failing []FailedCheck, ok bool) {
	s := t.Snapshot()
	if _, ran := s.Errors["checks"]; !ran {
		return nil, false
	}
	return Failing(s.Checks), true
}
