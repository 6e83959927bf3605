package main

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redis-prober/redis-prober/engine"
)

// reloader re-reads the targets on SIGHUP and (with --web.enable-lifecycle)
// POST /-/reload, and applies what the target sources of the config file
// (file_sd, http_sd) discover while it runs. A bad new config, or a source
// that fails to read, keeps what runs and shows in the reload gauges.
type reloader struct {
	src *targetSource
	eng *engine.Engine
	log *slog.Logger

	mu          sync.Mutex // one reload or source change at a time
	ctx         context.Context
	cur         loaded
	stopSources context.CancelFunc
	configOK    bool // the last load of the config file worked
	buildOK     bool // the last change of a source made a valid target list
	ok          prometheus.Gauge
	okTime      prometheus.Gauge
}

func newReloader(src *targetSource, eng *engine.Engine, log *slog.Logger, reg prometheus.Registerer) *reloader {
	r := &reloader{
		src: src, eng: eng, log: log,
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

// start records the initial load, watches its target sources and listens
// for SIGHUP until ctx is done; targets started by a reload or a source
// live under ctx.
func (r *reloader) start(ctx context.Context, initial loaded) {
	r.mu.Lock()
	r.ctx = ctx
	r.configOK, r.buildOK = true, true
	r.okTime.Set(float64(time.Now().Unix()))
	r.watch(initial)
	r.mu.Unlock()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				_ = r.reload()
			}
		}
	}()
}

// watch makes l the current load and runs its source watcher in place of
// the previous one. r.mu is held.
func (r *reloader) watch(l loaded) {
	if r.stopSources != nil {
		r.stopSources()
		r.stopSources = nil
	}
	r.cur = l
	if l.sources != nil {
		ctx, cancel := context.WithCancel(r.ctx)
		r.stopSources = cancel
		go l.sources.Run(ctx, func() { r.sourcesChanged(l.sources) })
	}
	r.setGauge()
}

func (r *reloader) setGauge() {
	ok := r.configOK && r.buildOK && (r.cur.sources == nil || r.cur.sources.Healthy())
	if ok {
		r.ok.Set(1)
	} else {
		r.ok.Set(0)
	}
}

// sourcesChanged applies what a source discovered: the same path as a
// reload, without reading the config file again.
func (r *reloader) sourcesChanged(w *engine.SourceWatcher[discovered]) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur.sources != w || r.ctx.Err() != nil {
		return // a reload replaced the watcher meanwhile
	}
	cfg, err := r.src.rebuild(r.cur, r.log)
	if err != nil {
		r.buildOK = false
		r.setGauge()
		r.log.Error("discovered targets not applied; the running ones stay", "err", err)
		return
	}
	r.buildOK = true
	r.eng.Apply(r.ctx, cfg)
	r.setGauge()
	r.log.Info("discovered targets applied", "targets", len(cfg.Targets))
}

func (r *reloader) reload() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ctx == nil || r.ctx.Err() != nil {
		return context.Canceled
	}
	l, err := r.src.load(r.ctx, r.log)
	if err != nil {
		r.configOK = false
		r.setGauge()
		r.log.Error("reload failed; the running configuration stays", "err", err)
		return err
	}
	r.eng.Apply(r.ctx, l.cfg)
	r.configOK, r.buildOK = true, true
	r.okTime.Set(float64(time.Now().Unix()))
	r.watch(l)
	r.log.Info("configuration reloaded", "targets", len(l.cfg.Targets))
	return nil
}

// handler serves POST /-/reload. Unless lifecycle is on
// (--web.enable-lifecycle) it answers 403: anyone who reaches the port
// could otherwise make the prober re-read files. The caller never sees why
// a reload failed (paths, YAML): that goes to the log.
func (r *reloader) handler(lifecycle bool) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		if !lifecycle {
			http.Error(w, "lifecycle APIs are not enabled (--web.enable-lifecycle)", http.StatusForbidden)
			return
		}
		if req.Method != http.MethodPost && req.Method != http.MethodPut {
			w.Header().Set("Allow", "POST, PUT")
			http.Error(w, "use POST", http.StatusMethodNotAllowed)
			return
		}
		if err := r.reload(); err != nil {
			http.Error(w, "reload failed, see the prober's log", http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte("reloaded\n"))
	}
}
