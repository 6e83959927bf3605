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
// POST /-/reload. A bad new
// config keeps the running one and shows in the reload gauges.
type reloader struct {
	src *targetSource
	eng *engine.Engine
	log *slog.Logger

	mu     sync.Mutex // one reload at a time
	ctx    context.Context
	ok     prometheus.Gauge
	okTime prometheus.Gauge
}

func newReloader(src *targetSource, eng *engine.Engine, log *slog.Logger, reg prometheus.Registerer) *reloader {
	r := &reloader{
		src: src, eng: eng, log: log,
		ok: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "redis_prober_config_last_reload_successful",
			Help: "1 when the last (re)load of the configuration worked.",
		}),
		okTime: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "redis_prober_config_last_reload_success_timestamp_seconds",
			Help: "Unix time of the last successful (re)load of the configuration.",
		}),
	}
	reg.MustRegister(r.ok, r.okTime)
	return r
}

// succeeded records the initial load.
func (r *reloader) succeeded() {
	r.ok.Set(1)
	r.okTime.Set(float64(time.Now().Unix()))
}

// start listens for SIGHUP until ctx is done; targets started by a reload
// live under ctx.
func (r *reloader) start(ctx context.Context) {
	r.mu.Lock()
	r.ctx = ctx
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

func (r *reloader) reload() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ctx == nil || r.ctx.Err() != nil {
		return context.Canceled
	}
	cfg, err := r.src.load(r.log)
	if err != nil {
		r.ok.Set(0)
		r.log.Error("reload failed; the running configuration stays", "err", err)
		return err
	}
	r.eng.Apply(r.ctx, cfg)
	r.succeeded()
	r.log.Info("configuration reloaded", "targets", len(cfg.Targets))
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
