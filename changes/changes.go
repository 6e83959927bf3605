package changes

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/engine"
	"github.com/redis-prober/redis-prober/internal/host"
	"github.com/redis-prober/redis-prober/internal/nodeid"
	"github.com/redis-prober/redis-prober/prober"
	"github.com/redis-prober/redis-prober/prober/history"
)

// Config tunes change detection.
type Config struct {
	// Interval is how often every node's INFO and CONFIG, and the host's
	// kernel, THP and sysctls, are read.
	Interval time.Duration
	// Window is the length of the probe latency windows before the last
	// change and since it.
	Window time.Duration
	// MinSamples is the fewest samples of a command a window needs before
	// its quantiles are exported.
	MinSamples uint64
	// Paths are the host's procfs and sysfs roots.
	Paths host.Paths
}

// Changes is the engine service that notices changes on every target node
// (restart, Redis version, config, role, maxmemory) and on the host
// (kernel, THP, sysctls), counts them, logs what changed, and keeps the
// probe latency before the last change and since it.
//
// Host changes are read, logged and counted once per process
// (redis_prober_host_changes_total{kind}: the host is the prober's, not a
// target's), and every target's windows restart at them, since every
// target's latency may move with them. Redis changes are counted per node
// event (Metrics.Change): a CONFIG SET on three Cluster shards counts three
// config changes of the target.
type Detector struct {
	cfg     Config
	log     *slog.Logger
	metrics *prober.Metrics
	host    *hostCache

	infoDesc, latencyDesc *prometheus.Desc

	mu      sync.Mutex
	nodes   map[nodeid.ID]*nodeWatch
	targets map[string]*targetHost
}

var (
	_ engine.Service       = (*Detector)(nil)
	_ prometheus.Collector = (*Detector)(nil)
)

// nodeWatch is the exported state of one node; the fields after window are
// guarded by Changes.mu.
type nodeWatch struct {
	target, node  string
	window        *history.ChangeWindow
	version, role string
	// lastKinds are the kinds of the last change round (Redis and host),
	// at lastAt: what the status page shows beside the window.
	lastKinds []string
	lastAt    time.Time

	// checks of this node done, so tests can wait for each node (a
	// pointer: Collect copies the struct under mu, the node's check adds
	// without it).
	checks *atomic.Int64
}

func newNodeWatch(t engine.Target, commands []string, window time.Duration) *nodeWatch {
	return &nodeWatch{target: t.Name, node: t.Node, window: history.NewChangeWindow(commands, window, time.Now()), checks: new(atomic.Int64)}
}

// targetHost is the host as one target last saw it, shared by the target's
// nodes so a host change is counted once per target.
type targetHost struct {
	state hostState
	have  bool
	gen   uint64
	refs  int
	// kinds are the host change kinds of generation gen, so every node of
	// the target can say what its window restarted at.
	kinds []string
}

// New returns the service. It is also the collector of
// redis_prober_server_info and redis_prober_change_latency_seconds: register
// it once.
func New(cfg Config, log *slog.Logger, metrics *prober.Metrics) *Detector {
	if cfg.MinSamples == 0 {
		cfg.MinSamples = 300
	}
	if cfg.Interval > 0 {
		metrics.InitHostChanges(hostKinds...)
	}
	return &Detector{
		cfg:     cfg,
		log:     log,
		metrics: metrics,
		host:    &hostCache{paths: cfg.Paths, interval: cfg.Interval, log: log, metrics: metrics},
		infoDesc: prometheus.NewDesc("redis_prober_server_info",
			"The Redis (or Valkey) version and the replication role of each target node, as INFO said last.",
			[]string{"target", "node", "version", "role"}, nil),
		// A summary, so the quantile label is what Prometheus expects of
		// it; _count says how many samples each window holds.
		latencyDesc: prometheus.NewDesc("redis_prober_change_latency_seconds",
			"Probe latency over a window before the last detected change and since it (at most one window), per command; a window shows once it holds enough samples.",
			[]string{"target", "node", "command", "window"}, nil),
		nodes:   map[nodeid.ID]*nodeWatch{},
		targets: map[string]*targetHost{},
	}
}

// Name names the service in logs.
func (c *Detector) Name() string { return "changes" }

// attach creates the node's watch, its latency window over commands, and
// joins the target's host view.
func (c *Detector) attach(t engine.Target, commands []string) (*nodeWatch, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	nw := newNodeWatch(t, commands, c.cfg.Window)
	c.nodes[t.ID()] = nw
	th := c.targets[t.Name]
	if th == nil {
		th = &targetHost{}
		c.targets[t.Name] = th
	}
	th.refs++
	return nw, th.gen
}

func (c *Detector) detach(t engine.Target, nw *nodeWatch) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if key := t.ID(); c.nodes[key] == nw {
		delete(c.nodes, key)
	}
	if th := c.targets[t.Name]; th != nil {
		if th.refs--; th.refs <= 0 {
			delete(c.targets, t.Name)
		}
	}
}

// nodeWatcher is the loop state of one node.
type nodeWatcher struct {
	c       *Detector
	t       engine.Target
	control redis.Cmdable
	nw      *nodeWatch
	log     *slog.Logger

	last      serverState
	have      bool
	configOff bool
	lastErr   string
	hostGen   uint64
}

func (w *nodeWatcher) check(ctx context.Context, now time.Time) {
	defer w.nw.checks.Add(1)
	kinds := append(w.checkServer(ctx, now), w.checkHost(now)...)
	if len(kinds) == 0 {
		w.nw.window.Advance(now)
		return
	}
	w.nw.window.Mark(now)
	w.c.mu.Lock()
	w.nw.lastKinds, w.nw.lastAt = kinds, now
	w.c.mu.Unlock()
}

// checkServer reads the server, counts what changed since last time and
// returns the kinds that did.
func (w *nodeWatcher) checkServer(ctx context.Context, now time.Time) []string {
	st, err := readServer(ctx, w.control, w.configOff, w.last)
	if errors.Is(err, errConfigRefused) {
		w.configOff = true
		w.log.Debug("CONFIG GET is not allowed; config changes of this server are not watched", "err", err)
		err = nil
	}
	if err != nil {
		if ctx.Err() == nil && err.Error() != w.lastErr {
			// The probe reports an unreachable server; this only says
			// why the watcher skipped a round.
			w.log.Debug("change check failed; trying again next round", "err", err)
			w.lastErr = err.Error()
		}
		return nil
	}
	w.lastErr = ""
	if st.config == nil && w.have {
		st.config, st.configHash = w.last.config, w.last.configHash
	}
	var kinds []string
	if w.have {
		for _, ch := range diffServer(w.last, st) {
			w.c.metrics.Change(w.t.Name, ch.kind, now)
			attrs := []any{"kind", ch.kind}
			if len(ch.details) > 0 {
				attrs = append(attrs, "changed", strings.Join(ch.details, ", "))
			}
			w.log.Info("change detected", attrs...)
			kinds = append(kinds, ch.kind)
		}
	}
	w.last, w.have = st, true
	w.c.mu.Lock()
	w.nw.version, w.nw.role = st.version, st.role
	w.c.mu.Unlock()
	return kinds
}

// checkHost compares the process-wide host reading with what this target
// saw last (the host cache counts the change, once for the process). It
// returns the kinds of a host change this node has not seen yet, so every
// node's windows restart at it.
func (w *nodeWatcher) checkHost(now time.Time) []string {
	hs := w.c.host.get(now)
	w.c.mu.Lock()
	th := w.c.targets[w.t.Name]
	switch {
	case !th.have:
		th.state, th.have = hs, true
	default:
		if chs := diffHost(th.state, hs); len(chs) > 0 {
			th.kinds = make([]string, 0, len(chs))
			for _, ch := range chs {
				th.kinds = append(th.kinds, ch.kind)
			}
			th.gen++
		}
		th.state = th.state.merge(hs)
	}
	gen, kinds := th.gen, th.kinds
	w.c.mu.Unlock()
	if gen == w.hostGen {
		return nil
	}
	w.hostGen = gen
	return kinds
}

// LastChange is the last change a running node saw; false before its
// first one or when change detection is off.
func (c *Detector) LastChange(id nodeid.ID) (engine.LastChange, bool) {
	c.mu.Lock()
	nw := c.nodes[id]
	if nw == nil || len(nw.lastKinds) == 0 {
		c.mu.Unlock()
		return engine.LastChange{}, false
	}
	lc := engine.LastChange{Kinds: nw.lastKinds, At: nw.lastAt, MinSamples: c.cfg.MinSamples}
	window := nw.window
	c.mu.Unlock()
	// The window has its own lock; its quantiles are read outside ours.
	lc.Before, lc.After = window.Before(), window.After()
	return lc, true
}

// Describe sends the two descriptors.
func (c *Detector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.infoDesc
	ch <- c.latencyDesc
}

// Collect emits the info series of every node and the latency windows of
// the nodes that saw a change.
func (c *Detector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	nodes := make([]nodeWatch, 0, len(c.nodes))
	for _, nw := range c.nodes {
		nodes = append(nodes, *nw)
	}
	c.mu.Unlock()
	for _, nw := range nodes {
		if nw.version != "" || nw.role != "" {
			// The values went through collector.LabelValue; a node
			// label client_golang still refuses costs this series,
			// not a panic in every scrape.
			if m, err := prometheus.NewConstMetric(c.infoDesc, prometheus.GaugeValue, 1, nw.target, nw.node, nw.version, nw.role); err == nil {
				ch <- m
			}
		}
		if _, ok := nw.window.Changed(); !ok {
			continue
		}
		c.emitWindow(ch, nw, "before", nw.window.Before())
		c.emitWindow(ch, nw, "after", nw.window.After())
	}
}

func (c *Detector) emitWindow(ch chan<- prometheus.Metric, nw nodeWatch, window string, qs []history.WindowQuantiles) {
	for _, q := range qs {
		if q.Count < c.cfg.MinSamples {
			continue
		}
		ch <- prometheus.MustNewConstSummary(c.latencyDesc, q.Count, q.Sum.Seconds(),
			map[float64]float64{0.5: q.P50.Seconds(), 0.99: q.P99.Seconds(), 0.999: q.P999.Seconds()},
			nw.target, nw.node, q.Command, window)
	}
}
