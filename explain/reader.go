package explain

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/internal/host"
	"github.com/redis-prober/redis-prober/internal/redisinfo"
)

// Client is what the Reader sends its commands through: the node's control
// client (whose INFO the engine answers from the one shared read).
type Client interface {
	Info(ctx context.Context, sections ...string) *redis.StringCmd
	Do(ctx context.Context, args ...any) *redis.Cmd
}

const (
	// TickInterval is how often the Reader reads INFO and settles: the
	// engine's one INFO read a node a second.
	TickInterval = time.Second
	// ProcInterval is how often /proc of a local redis-server is sampled
	// (its resolution for redis_cpu and swap).
	ProcInterval = 100 * time.Millisecond
	// slowlogCount bounds one SLOWLOG GET: only entries since the last id
	// are kept, and more than this in the second after a slow request
	// would be one slow command after another.
	slowlogCount = 16
	// refusedRetry is how long a refused command (an ACL, renamed away)
	// is not sent again: asking every second would fill the ACL LOG.
	refusedRetry = 10 * time.Minute
	// offsetReads is how many INFO reads the clock offset is taken over.
	offsetReads = 32
)

// ReaderConfig wires a Reader.
type ReaderConfig struct {
	Node   *Node
	Client Client
	Log    *slog.Logger
	// Paths are /proc and /sys (the --path flags): /proc of a local
	// redis-server is read there.
	Paths host.Paths
	// NoProc turns the /proc sampler off (a remote Redis never has one).
	NoProc bool
	// Share is shared by the Readers of one prober (NewShare): their
	// servers' /proc samples and a budget of log reads. Nil: the node
	// reads alone, unbounded.
	Share *Share
	// Cached, when set, is the node's last INFO reply while it is fresh
	// (the engine's INFO cache, read without asking Redis). A healthy
	// node then takes INFO from the reads the collectors make anyway and
	// reads it itself only every IdleInfoInterval without one; once it
	// has had slow requests lately (procHot) it reads every tick. Nil:
	// every tick reads.
	Cached func() (string, bool)
}

// Reader feeds one node's timeline: every Tick it reads INFO (shared with
// the collectors; a healthy node only as often as they read it, see
// ReaderConfig.Cached), and, only when slow requests wait, SLOWLOG (or
// COMMANDLOG) since the last id and LATENCY LATEST (with the HISTORY of the
// classes that moved); then it settles what its reads cover. SampleProc
// reads /proc of a local redis-server. Tick and SampleProc run on the
// node's housekeeping loop, one at a time.
type Reader struct {
	cfg ReaderConfig
	now func() time.Time

	prev    infoSnap
	hasPrev bool
	// offsets are server_time_usec minus the reply's arrival, over the
	// last reads: the largest is the closest to the true clock offset
	// (a reply from the engine's INFO cache is older, so smaller).
	offsets    [offsetReads]int64
	nOffsets   int
	commandlog bool

	// logs are where each command log was read up to: the slow log, and
	// on COMMANDLOG servers its large-request and large-reply logs.
	logs    [numLogs]logCursor
	latest  map[string]latencySpike
	refused map[string]time.Time // command → not before
	logged  map[string]bool

	proc    procSampler
	procCur procCursor
	// lastRead is when INFO was last read (Unix ns; 0: never).
	lastRead int64
	// lastStamp is the server_time_usec of the last INFO parsed: the
	// cache serves one reply for a second, and a tick that finds the one
	// it already took has nothing new to parse (at 1,000 targets such
	// second parses were much of what fed the GC: docs/performance.md,
	// "Measured reasons").
	lastStamp int64
}

// NewReader returns the reader of cfg.
func NewReader(cfg ReaderConfig) *Reader {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	r := &Reader{cfg: cfg, now: time.Now, refused: map[string]time.Time{}, logged: map[string]bool{},
		proc: procSampler{paths: cfg.Paths, off: cfg.NoProc}}
	if cfg.Share != nil {
		// A node's first slow request starts the Share's sampling of
		// its server at once, not at the node's next tick.
		cfg.Node.onHot = func(at int64) { cfg.Share.kick(&r.procCur, at+int64(procHot)) }
	}
	return r
}

// offset is the server's clock minus the prober's, in ns.
func (r *Reader) offset() int64 {
	if r.nOffsets == 0 {
		return 0
	}
	best := r.offsets[0]
	for _, o := range r.offsets[1:min(r.nOffsets, offsetReads)] {
		best = max(best, o)
	}
	return best
}

// Tick is the reader's periodic work.
func (r *Reader) Tick(ctx context.Context) {
	n := r.cfg.Node
	text, cached := r.cachedInfo()
	if cached && r.lastStamp != 0 && infoStamp(text) == r.lastStamp {
		cached = false
	}
	if !cached && r.idle() {
		// Nothing fresh to take and no reason to ask: the node has no
		// slow request to explain, and the /proc of its server is
		// sampled at the tick's resolution still.
		r.takeProc(r.now().UnixNano())
		n.Settle(0)
		return
	}
	var err error
	if !cached {
		text, err = r.cfg.Client.Info(ctx).Result()
	}
	replied := r.now().UnixNano()
	if err != nil {
		r.fault("info", err)
		n.Settle(0) // only what waited past decideBy
		return
	}
	r.lastRead = replied
	info, err := redisinfo.ParseKeys(text, infoField)
	if err != nil {
		r.fault("info", err)
		n.Settle(0)
		return
	}
	r.lastStamp = serverMicros(info)
	through := r.dateInfo(info, replied)
	r.commandlog = redisinfo.CommandlogSupported(info)
	cur := snapOf(info, through)
	if r.hasPrev && cur.runID != r.prev.runID {
		// A restart: the logs' ids and times start over.
		r.logs, r.latest = [numLogs]logCursor{}, nil
	}
	if r.hasPrev && cur.at > r.prev.at {
		n.addEvidence(infoEvidence(r.prev, cur)...)
		if !r.proc.attached() {
			n.addEvidence(offCPUEvidence(r.prev, cur)...)
			n.addEvidence(ioOffCPUEvidence(r.prev, cur)...)
		}
	}
	if !r.hasPrev || cur.at > r.prev.at {
		r.prev, r.hasPrev = cur, true
	}
	r.proc.attach(info)
	r.takeProc(replied)
	if n.Pending() {
		// Redis 8's default INFO has the Keysizes section (8.0.2 and
		// 8.0.6 both), so the shared read carries it: no command of its
		// own, and parsed only in the seconds slow requests wait.
		n.setKeySizes(parseKeySizes(info))
	}
	if (n.Pending() || !r.logs[slowLog].seen) && r.cfg.Share.allowLogRead(r.now()) {
		r.readLogs(ctx)
	}
	n.Settle(min(r.prev.at, replied))
}

// IdleInfoInterval is how often a healthy node with an INFO cache reads
// INFO itself when the cache had nothing fresh (the collectors read every
// 5 s by default, so it seldom does).
const IdleInfoInterval = 5 * time.Second

// cachedInfo is the engine's fresh INFO, when there is one and the node
// may take it: a node with slow requests lately reads its own every tick,
// so what it is given is never a second older than its tick.
func (r *Reader) cachedInfo() (string, bool) {
	if r.cfg.Cached == nil || r.hot() {
		return "", false
	}
	return r.cfg.Cached()
}

// hot says the node had slow requests lately, or has some waiting.
func (r *Reader) hot() bool {
	n := r.cfg.Node
	last := n.LastSlow()
	return n.Pending() || !last.IsZero() && r.now().Sub(last) <= procHot
}

// idle says the node need not read INFO this tick: it has a cache, no
// slow request lately, and read INFO (its own or the cache's) within
// IdleInfoInterval.
func (r *Reader) idle() bool {
	return r.cfg.Cached != nil && !r.hot() && r.lastRead != 0 &&
		r.now().UnixNano()-r.lastRead < int64(IdleInfoInterval)
}

// dateInfo says when the server wrote info, on the prober's clock: its
// server_time_usec moved by the clock offset, or, without one, the reply's
// arrival less the engine's INFO cache age.
func (r *Reader) dateInfo(info redisinfo.Info, replied int64) int64 {
	us := serverMicros(info)
	if us == 0 {
		return replied - int64(time.Second)
	}
	r.offsets[r.nOffsets%offsetReads] = us*1000 - replied
	r.nOffsets++
	return us*1000 - r.offset()
}

// readLogs reads the slow log since the last id and the latency events
// that moved, as evidence.
func (r *Reader) readLogs(ctx context.Context) {
	n := r.cfg.Node
	off := r.offset()
	if !r.commandlog {
		r.readLog(ctx, slowLog, "slowlog", []any{"slowlog", "get", slowlogCount}, off)
	} else {
		for kind := range numLogs {
			r.readLog(ctx, kind, "commandlog", []any{"commandlog", "get", slowlogCount, logTypes[kind]}, off)
		}
	}
	reply, ok := r.do(ctx, "latency", "latest")
	if !ok {
		return
	}
	spikes, err := parseLatencyLatest(reply)
	if err != nil {
		r.fault("latency", err)
		return
	}
	first := r.latest == nil
	prev := r.latest
	r.latest = make(map[string]latencySpike, len(spikes))
	for _, s := range spikes {
		r.latest[s.event] = s
		p, seen := prev[s.event]
		if first || seen && p.unix == s.unix && p.ms == s.ms {
			continue
		}
		// The class moved: its history has every spike since.
		hist, ok := r.do(ctx, "latency", "history", s.event)
		var got []latencySpike
		if ok {
			got, err = parseLatencyHistory(s.event, hist)
		}
		if !ok || err != nil {
			got = []latencySpike{s}
		}
		for _, h := range got {
			if !seen || h.unix >= p.unix {
				n.addEvidence(spikeEvidence(h, off))
			}
		}
	}
}

// logKind is one of the command logs: SLOWLOG (COMMANDLOG slow), and
// COMMANDLOG's large-request and large-reply (Valkey 8.1+).
type logKind int

const (
	slowLog logKind = iota
	largeRequestLog
	largeReplyLog
	numLogs
)

// logTypes are COMMANDLOG GET's names of the logs.
var logTypes = [numLogs]string{slowLog: "slow", largeRequestLog: "large-request", largeReplyLog: "large-reply"}

// logCursor is how far a log was read: next is the first id not yet
// known (ids count from 0); seen says the log was read once (what it held
// then is older than the node's first slow request, never evidence).
type logCursor struct {
	next int64
	seen bool
}

// readLog reads one command log since its cursor, as evidence.
func (r *Reader) readLog(ctx context.Context, kind logKind, source string, args []any, off int64) {
	reply, ok := r.do(ctx, args...)
	if !ok {
		return
	}
	entries, err := parseSlowlog(reply)
	if err != nil {
		r.fault(source, err)
		return
	}
	cur := &r.logs[kind]
	var ev []Evidence
	next := cur.next
	for _, e := range entries {
		if e.id >= cur.next && cur.seen {
			if kind == slowLog {
				ev = append(ev, slowEvidence(e, off))
			} else {
				ev = append(ev, largeEvidence(e, off))
			}
		}
		next = max(next, e.id+1)
	}
	cur.next, cur.seen = next, true
	r.cfg.Node.addEvidence(ev...)
}

// do sends one command, unless it was refused lately; ok is false on any
// failure (logged once).
func (r *Reader) do(ctx context.Context, args ...any) (any, bool) {
	name := strings.ToLower(args[0].(string))
	if until, ok := r.refused[name]; ok && r.now().Before(until) {
		return nil, false
	}
	reply, err := r.cfg.Client.Do(ctx, args...).Result()
	if err != nil {
		var rerr redis.Error
		if errors.As(err, &rerr) {
			// An ACL or a renamed command: not asked again for a while,
			// and said once at info level, never as an error.
			r.refused[name] = r.now().Add(refusedRetry)
			if !r.logged[name] {
				r.logged[name] = true
				r.cfg.Log.Info("a source of slow-request attribution is refused; its causes go unexplained",
					"command", strings.ToUpper(name), "reply", firstWord(rerr.Error()))
			}
			return nil, false
		}
		r.fault(name, err)
		return nil, false
	}
	return reply, true
}

// fault logs a source's failure once, at debug level: the probe's own
// fault log says when the node does not answer.
func (r *Reader) fault(source string, err error) {
	if r.logged["fault:"+source] {
		return
	}
	r.logged["fault:"+source] = true
	r.cfg.Log.Debug("slow-request attribution could not read a source", "source", source, "err", err)
}

func firstWord(s string) string {
	w, _, _ := strings.Cut(s, " ")
	return w
}

// takeProc gives the node the evidence of its server's /proc samples, a
// sample taken now if the last is half an interval old: copied into the
// node's own timeline without a Share, and as the Share keeps it for all
// the nodes of the server with one. While the node had slow requests
// lately (procHot) the Share's loop samples the server every ProcInterval
// between the ticks.
func (r *Reader) takeProc(now int64) {
	n := r.cfg.Node
	if r.cfg.Share == nil {
		n.addEvidence(r.proc.sample(now)...)
		return
	}
	n.setShared(r.cfg.Share.take(&r.proc, &r.procCur, now, int64(n.cfg.keepEvidence())))
	if last := n.lastSlow.Load(); last != 0 && now-last <= int64(procHot) {
		r.cfg.Share.want(&r.procCur, last+int64(procHot))
	}
}

// SampleProc reads /proc of a local redis-server (nothing when there is
// none, or it is not ours to read), while the node has had slow requests
// lately (procHot): a healthy node's /proc is read by Tick alone, once a
// second, and a fault's first slow requests are seen at that resolution.
// It is for a Reader without a Share (the doctor's, the tests'), on a
// task of its own every ProcInterval; with one, the Share samples.
func (r *Reader) SampleProc(context.Context) {
	now := r.now()
	if last := r.cfg.Node.LastSlow(); last.IsZero() || now.Sub(last) > procHot {
		return
	}
	r.takeProc(now.UnixNano())
}

// procHot is how long after a slow request /proc is sampled every
// ProcInterval.
const procHot = 30 * time.Second
