// Package statuspage serves redis-prober's status page: every node's state,
// its recent latency (1 and 5 minutes, a sparkline of the last hour), its
// last errors, burst, change and failing checks, and once the failing
// checks of the prober's own host, from the engine's in-memory history
// (engine.Status). HTML only, from an embedded
// html/template; no script.
package statuspage

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/version"

	"github.com/redis-prober/redis-prober/collector"
	"github.com/redis-prober/redis-prober/engine"
	"github.com/redis-prober/redis-prober/explain"
	"github.com/redis-prober/redis-prober/internal/safetext"
	"github.com/redis-prober/redis-prober/prober/burst"
	"github.com/redis-prober/redis-prober/prober/history"
)

//go:embed templates/status.html
var statusTemplates embed.FS

// statusTemplate is parsed on the page's first view, not at start: a
// sidecar's page is seldom opened, and parsing at init kept the parse
// tree and the template parser's code resident in every prober
// (docs/performance.md, "Measured reasons").
var statusTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.ParseFS(statusTemplates, "templates/status.html"))
})

// statusRefresh is how often the page reloads itself (a meta refresh: the
// page has no JavaScript).
const statusRefresh = 10

// Page serves the status page at / and its ?target= detail view from
// the engine's in-memory history.
type Page struct {
	status    *engine.Status
	telemetry string
	log       *slog.Logger
	now       func() time.Time
}

// New is the page of status; telemetry is the metrics path it links to.
func New(status *engine.Status, telemetry string, log *slog.Logger) *Page {
	return &Page{status: status, telemetry: telemetry, log: log, now: time.Now}
}

func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	target := r.URL.Query().Get("target")
	detail := r.URL.Query().Has("target")
	view := p.view(target, detail)
	var buf bytes.Buffer
	if err := statusTemplate().Execute(&buf, view); err != nil {
		p.log.Error("status page", "err", err)
		http.Error(w, "status page failed; see the log", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	// No script, style or image from anywhere else, ever.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if detail && len(view.Nodes) == 0 {
		w.WriteHeader(http.StatusNotFound)
	}
	_, _ = w.Write(buf.Bytes())
}

type statusView struct {
	Refresh            int
	Version, Telemetry string
	Now                string
	Detail             bool
	Target             string
	Nodes              []nodeView
	Up, Down, Unknown  int
	// HostChecks are the failing checks of the prober's own host, shown
	// once on the page (not per node: they are not about any Redis);
	// HostChecksKnown is false when none were evaluated.
	HostChecks      []checkView
	HostChecksKnown bool
}

type nodeView struct {
	Target, Node, Endpoint string
	DetailURL              string
	State, Since           string
	Objective              string
	ReadOnly               bool
	All                    rowView
	Commands               []rowView
	Spark, BigSpark        sparkView
	LastError              *errorView
	Errors                 []errorView
	Burst                  *burstView
	Change                 *changeView
	// Checks are the failing checks; ChecksKnown is false when none
	// were evaluated (the checks collector off, or not run yet).
	Checks      []checkView
	ChecksKnown bool
	// Why is the attribution of the node's slow requests (nil: off).
	Why *whyView
}

// whyView is a node's slow requests by cause (docs/explain.md).
type whyView struct {
	Threshold string
	// Top are the last 5 minutes' causes, most first (the targets' table
	// names the first two).
	Top   []causeView
	Total uint64
	// SinceChange are the causes since the last change, when it was in
	// the last hour (SinceChangeKnown).
	SinceChange      []causeView
	SinceChangeKnown bool
	// Causes are the timeline's columns (the causes it holds); each
	// minute's counts are in that order.
	Causes   []string
	Timeline []whyMinute
	// LargestKeys: a Redis 8's largest key sizes when slow requests last
	// waited (engine.SlowCauses).
	LargestKeys string
}

type causeView struct {
	Cause string
	Count uint64
	Share string
}

type whyMinute struct {
	At     string
	Counts []uint32
}

func causeViews(cc []engine.CauseCount) ([]causeView, uint64) {
	var total uint64
	for _, c := range cc {
		total += c.Count
	}
	out := make([]causeView, len(cc))
	for i, c := range cc {
		out[i] = causeView{Cause: c.Cause, Count: c.Count, Share: strconv.FormatFloat(100*float64(c.Count)/float64(total), 'f', 0, 64) + " %"}
	}
	return out, total
}

func whyOf(w *engine.SlowCauses) *whyView {
	if w == nil {
		return nil
	}
	v := &whyView{Threshold: fmtLatency(w.Threshold), SinceChangeKnown: w.SinceChangeKnown, LargestKeys: w.LargestKeys}
	v.Top, v.Total = causeViews(w.Last5m)
	v.SinceChange, _ = causeViews(w.SinceChange)
	var used [explain.NumCauses]bool
	for _, m := range w.Timeline {
		for c, n := range m.Counts {
			used[c] = used[c] || n > 0
		}
	}
	var cols []int
	for c, u := range used {
		if u {
			cols = append(cols, c)
			v.Causes = append(v.Causes, explain.Cause(c).String())
		}
	}
	for _, m := range w.Timeline {
		row := whyMinute{At: m.Start.Format("15:04")}
		for _, c := range cols {
			row.Counts = append(row.Counts, m.Counts[c])
		}
		v.Timeline = append(v.Timeline, row)
	}
	return v
}

type burstView struct {
	Plan, Outcome, Reason, Detail string
	OpsPerSec, P99, Requests      string
	Capacity                      string
	Ago, At                       string
}

type changeView struct {
	Kinds, Ago, At string
	// Headline is the command whose p99 since the change is the highest,
	// with its p99 before and after ("" when neither window has samples).
	Headline            string
	Before, After       string
	BeforeFew, AfterFew bool
	Commands            []changeRow
	MinSamples          uint64
}

type changeRow struct {
	Command              string
	BeforeP50, BeforeP99 string
	BeforeCount          uint64
	AfterP50, AfterP99   string
	AfterCount           uint64
	BeforeFew, AfterFew  bool
}

type checkView struct {
	ID, Severity, Value string
}

type rowView struct {
	Command string
	M1, M5  quantView
}

type quantView struct {
	P50, P99, P999 string
	Samples        uint64
	Failed         uint64
	P99Class       string
	P999Class      string
}

type errorView struct {
	Text       string
	Count      uint64
	First, Ago string
}

func (p *Page) view(target string, detail bool) statusView {
	now := p.now()
	nodes := p.status.Snapshot(target, now)
	if detail && target == "" {
		nodes = nil
	}
	v := statusView{Refresh: statusRefresh, Version: version.Version, Telemetry: p.telemetry,
		Now: now.Format("2006-01-02 15:04:05 MST"), Detail: detail, Target: target, Nodes: make([]nodeView, len(nodes))}
	host := p.status.Host()
	v.HostChecks, v.HostChecksKnown = checkViews(host.FailingChecks), host.ChecksKnown
	for i, n := range nodes {
		nv := nodeView{Target: n.Target, Node: n.Node, Endpoint: n.Endpoint, Objective: fmtLatency(n.Objective),
			ReadOnly: n.ReadOnly, DetailURL: "/?target=" + url.QueryEscape(n.Target),
			All:      rowOf(n.All, n.Objective),
			Spark:    sparkOf(n.Spark, n.Objective, 100, 24),
			BigSpark: sparkOf(n.Spark, n.Objective, 600, 90)}
		switch n.Up {
		case history.UpYes:
			nv.State = "up"
			v.Up++
		case history.UpNo:
			nv.State = "down"
			v.Down++
		default:
			nv.State = "unknown"
			v.Unknown++
		}
		if !n.UpSince.IsZero() {
			nv.Since = "for " + span(now, n.UpSince)
		}
		for _, c := range n.Commands {
			nv.Commands = append(nv.Commands, rowOf(c, n.Objective))
		}
		for _, e := range n.Errors {
			nv.Errors = append(nv.Errors, errorView{Text: e.Text, Count: e.Count,
				First: e.First.Format("15:04:05"), Ago: ago(now, e.Last)})
		}
		if len(nv.Errors) > 0 {
			nv.LastError = &nv.Errors[0]
		}
		nv.Burst = burstOf(n.LastBurst, now)
		nv.Change = changeOf(n.LastChange, now)
		nv.ChecksKnown = n.ChecksKnown
		nv.Checks = checkViews(n.FailingChecks)
		nv.Why = whyOf(n.Why)
		v.Nodes[i] = nv
	}
	return v
}

func checkViews(failing []collector.FailedCheck) []checkView {
	var out []checkView
	for _, c := range failing {
		out = append(out, checkView{ID: c.ID, Severity: string(c.Severity), Value: c.Value})
	}
	return out
}

// maxBurstDetail bounds the governor's or dialer's sentence on the page.
const maxBurstDetail = 300

func burstOf(b *engine.LastBurst, now time.Time) *burstView {
	if b == nil {
		return nil
	}
	v := &burstView{Plan: b.Plan, Outcome: string(b.Outcome), Detail: safetext.Label(b.Detail, maxBurstDetail),
		OpsPerSec: "—", P99: fmtLatency(b.P99), Ago: ago(now, b.End), At: b.End.Format("15:04:05")}
	if b.Reason != burst.ReasonNone {
		v.Reason = b.Reason
	}
	if b.Requests > 0 {
		v.OpsPerSec = fmtRate(b.OpsPerSec)
		v.Requests = strconv.FormatInt(b.Requests, 10)
	}
	if b.Capacity > 0 {
		v.Capacity = fmtRate(b.Capacity)
	}
	return v
}

// fmtRate prints ops/s as a whole number with thousands separators.
func fmtRate(r float64) string {
	s := strconv.FormatFloat(r, 'f', 0, 64)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s + " ops/s"
}

func changeOf(c *engine.LastChange, now time.Time) *changeView {
	if c == nil {
		return nil
	}
	v := &changeView{Kinds: strings.Join(c.Kinds, ", "), Ago: ago(now, c.At), At: c.At.Format("15:04:05"),
		MinSamples: c.MinSamples}
	few := func(n uint64) bool { return n < c.MinSamples }
	// The headline is the command slowest since the change; before any
	// sample since, the one slowest before it.
	var worst time.Duration
	var worstAfter bool
	for i, a := range c.After {
		r := changeRow{Command: a.Command, AfterP50: fmtLatency(a.P50), AfterP99: fmtLatency(a.P99),
			AfterCount: a.Count, AfterFew: few(a.Count), BeforeP50: "—", BeforeP99: "—", BeforeFew: true}
		// Before and After are in the same probe command order.
		if i < len(c.Before) && c.Before[i].Command == a.Command {
			b := c.Before[i]
			r.BeforeP50, r.BeforeP99, r.BeforeCount, r.BeforeFew = fmtLatency(b.P50), fmtLatency(b.P99), b.Count, few(b.Count)
		}
		v.Commands = append(v.Commands, r)
		var pick bool
		switch {
		case a.Count > 0:
			pick = !worstAfter || a.P99 > worst
			if pick {
				worst, worstAfter = a.P99, true
			}
		case !worstAfter && r.BeforeCount > 0 && i < len(c.Before):
			pick = v.Headline == "" || c.Before[i].P99 > worst
			if pick {
				worst = c.Before[i].P99
			}
		}
		if pick {
			v.Headline, v.Before, v.After, v.BeforeFew, v.AfterFew = r.Command, r.BeforeP99, r.AfterP99, r.BeforeFew, r.AfterFew
		}
	}
	return v
}

func rowOf(c history.RecentCommand, objective time.Duration) rowView {
	return rowView{Command: c.Command, M1: quantOf(c.Last1m, objective), M5: quantOf(c.Last5m, objective)}
}

func quantOf(q history.RecentQuantiles, objective time.Duration) quantView {
	v := quantView{Samples: q.Count, Failed: q.Failed, P50: "—", P99: "—", P999: "—"}
	if q.Count == 0 {
		return v
	}
	v.P50, v.P99, v.P999 = fmtLatency(q.P50), fmtLatency(q.P99), fmtLatency(q.P999)
	switch {
	case objective > 0 && q.P99 > objective:
		v.P99Class = "over"
	case q.Count < 100:
		v.P99Class = "few"
	}
	if q.Count < 1000 {
		v.P999Class = "few"
	}
	return v
}

// fmtLatency prints a latency with three significant digits, in the unit a
// person reads it in.
func fmtLatency(d time.Duration) string {
	switch {
	case d <= 0:
		return "—"
	case d < time.Millisecond:
		return strconv.FormatFloat(float64(d)/float64(time.Microsecond), 'f', 0, 64) + " µs"
	case d < time.Second:
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'g', 3, 64) + " ms"
	}
	return strconv.FormatFloat(d.Seconds(), 'g', 3, 64) + " s"
}

func ago(now, t time.Time) string { return span(now, t) + " ago" }

// span is the time from t to now, to the second under a minute.
func span(now, t time.Time) string {
	d := max(now.Sub(t), 0)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

type sparkView struct {
	W, H         int
	Label        string
	Lines        []string
	Dots         []sparkDot
	HasObjective bool
	ObjectiveY   string
	Empty        bool
	// Note is the text in the blank part of a sparkline whose points are
	// all recent (sparkNoteMinutes).
	Note            string
	TextY, FontSize int
}

// sparkNoteMinutes: while every point of a sparkline is within its last
// sparkNoteMinutes minutes (a node probed for less time than that, or
// answering again after a long gap), most of it is blank, and in the first
// minute its one point (this minute so far) is a dot at the right edge. A
// note in the blank then says that the line gains one point a minute; on
// the small sparkline it ends before those minutes' points begin.
const sparkNoteMinutes = 8

type sparkDot struct{ X, Y string }

// sparkOf draws the per-minute p99 points (oldest first, 0 where a minute
// had no samples) as polylines on a linear scale from 0 to the highest
// point (or the objective, when that is higher, so a flat line under the
// objective reads as fine). Gaps stay gaps.
func sparkOf(points []time.Duration, objective time.Duration, w, h int) sparkView {
	v := sparkView{W: w, H: h, TextY: h/2 + 4, FontSize: max(9, h/8)}
	var top time.Duration
	var n int
	var last time.Duration
	for _, p := range points {
		if p > 0 {
			top = max(top, p)
			n++
			last = p
		}
	}
	if n == 0 {
		v.Empty = true
		v.Label = "p99 over the last hour: nothing measured yet"
		return v
	}
	v.Label = fmt.Sprintf("p99 per minute over the last hour, the last point this minute so far: highest %s, last %s", fmtLatency(top), fmtLatency(last))
	if first := slices.IndexFunc(points, func(p time.Duration) bool { return p > 0 }); first >= len(points)-sparkNoteMinutes {
		v.Note = "1 point a minute"
	}
	scale := top
	if objective > 0 && objective <= 2*top {
		scale = max(scale, objective)
		v.HasObjective = true
		v.ObjectiveY = coord(y(objective, scale, h))
	}
	// From x = 2 to w-2, so a dot (r = 2) at either end is whole.
	step := float64(w-4) / float64(max(len(points)-1, 1))
	var seg []string
	flush := func() {
		switch len(seg) {
		case 0:
		case 1:
			xy := strings.SplitN(seg[0], ",", 2)
			v.Dots = append(v.Dots, sparkDot{X: xy[0], Y: xy[1]})
		default:
			v.Lines = append(v.Lines, strings.Join(seg, " "))
		}
		seg = seg[:0]
	}
	for i, p := range points {
		if p <= 0 {
			flush()
			continue
		}
		seg = append(seg, coord(2+float64(i)*step)+","+coord(y(p, scale, h)))
	}
	flush()
	return v
}

func y(d, scale time.Duration, h int) float64 {
	return float64(h) - 2 - float64(d)/float64(scale)*float64(h-4)
}

func coord(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }
