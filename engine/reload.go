package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Reloader re-reads the targets when asked (SIGHUP, POST /-/reload) and
// applies what the target sources of the config file (file_sd, http_sd)
// discover while it runs. A bad new config, or a source that fails to
// read, keeps what runs and shows in the reload gauges. One goroutine,
// Run, does every reload and every source change in turn; Reload hands it
// a request over a channel, as blackbox_exporter does.
type Reloader struct {
	src      *TargetSource
	eng      *Engine
	log      *slog.Logger
	requests chan chan error
	stopped  chan struct{} // closed when Run returns
	ok       prometheus.Gauge
	okTime   prometheus.Gauge
}

// NewReloader registers the reload gauges on reg.
func NewReloader(src *TargetSource, eng *Engine, log *slog.Logger, reg prometheus.Registerer) *Reloader {
	r := &Reloader{
		src: src, eng: eng, log: log,
		requests: make(chan chan error),
		stopped:  make(chan struct{}),
		ok: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "redis_prober_config_last_reload_successful",
			Help: "1 when the last (re)load of the configuration, and the last read of each of its target sources (file_sd, http_sd), worked.",
		}),
		okTime: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "redis_prober_config_last_reload_success_timestamp_seconds",
			Help: "Unix time of the last successful (re)load of the configuration.",
		}),
	}
	reg.MustRegister(r.ok, r.okTime)
	return r
}

// Reload asks Run to read the targets again and apply them, and waits for
// the outcome. It fails at once when Run is not running any more.
func (r *Reloader) Reload(ctx context.Context) error {
	done := make(chan error, 1)
	select {
	case r.requests <- done:
		return <-done
	case <-r.stopped:
		return context.Canceled
	case <-ctx.Done():
		return ctx.Err()
	}
}

// reloadState is what Run knows between requests.
type reloadState struct {
	cur         Loaded
	changed     chan struct{} // a source of cur changed (nil: no sources)
	stopSources context.CancelFunc
	configOK    bool // the last load of the config file worked
	buildOK     bool // the last change of a source made a valid target list
}

// Run records the initial load, watches its target sources and serves
// reload requests until ctx is done; targets started by a reload or a
// source live under ctx.
func (r *Reloader) Run(ctx context.Context, initial Loaded) {
	defer close(r.stopped)
	st := &reloadState{configOK: true, buildOK: true, stopSources: func() {}}
	defer func() { st.stopSources() }()
	r.okTime.Set(float64(time.Now().Unix()))
	r.watch(ctx, st, initial)
	for {
		select {
		case <-ctx.Done():
			return
		case done := <-r.requests:
			if ctx.Err() != nil { // both were ready: stopping wins
				done <- ctx.Err()
				return
			}
			done <- r.reload(ctx, st)
		case <-st.changed:
			if ctx.Err() != nil {
				return
			}
			r.sourcesChanged(ctx, st)
		}
	}
}

// watch makes l the current load and runs its source watcher in place of
// the previous one.
func (r *Reloader) watch(ctx context.Context, st *reloadState, l Loaded) {
	st.stopSources()
	st.stopSources, st.changed = func() {}, nil
	st.cur = l
	if w := l.sources; w != nil {
		wctx, cancel := context.WithCancel(ctx)
		// One pending change is enough: the rebuild reads what every
		// source holds at that time.
		changed := make(chan struct{}, 1)
		st.stopSources, st.changed = cancel, changed
		go w.Run(wctx, func() {
			select {
			case changed <- struct{}{}:
			default:
			}
		})
	}
	r.setGauge(st)
}

func (r *Reloader) setGauge(st *reloadState) {
	if st.configOK && st.buildOK && st.cur.Healthy() {
		r.ok.Set(1)
	} else {
		r.ok.Set(0)
	}
}

// sourcesChanged applies what a source discovered: the same path as a
// reload, without reading the config file again.
func (r *Reloader) sourcesChanged(ctx context.Context, st *reloadState) {
	cfg, err := r.src.rebuild(st.cur, r.log)
	if err != nil {
		st.buildOK = false
		r.setGauge(st)
		r.log.Error("discovered targets not applied; the running ones stay", "err", err)
		return
	}
	// The gauge first: a scrape that sees the new targets must see the
	// read that made them as good (Apply takes a while, stopping the
	// targets that went).
	st.buildOK = true
	r.setGauge(st)
	r.eng.Apply(ctx, cfg)
	r.log.Info("discovered targets applied", "targets", len(cfg.Targets))
}

func (r *Reloader) reload(ctx context.Context, st *reloadState) error {
	l, err := r.src.Load(ctx, r.log)
	if err != nil {
		st.configOK = false
		r.setGauge(st)
		r.log.Error("reload failed; the running configuration stays", "err", err)
		return err
	}
	// The gauges first, as in sourcesChanged; the new sources' watch
	// reports to Run, which serves it after this returns.
	st.configOK, st.buildOK = true, true
	r.okTime.Set(float64(time.Now().Unix()))
	r.watch(ctx, st, l)
	r.eng.Apply(ctx, l.cfg)
	r.log.Info("configuration reloaded", "targets", len(l.cfg.Targets))
	return nil
}
