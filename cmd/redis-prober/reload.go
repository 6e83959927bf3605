package main

import (
	"context"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis-prober/redis-prober/engine"
)

// reloadOnSIGHUP asks r to reload on every SIGHUP until ctx is done.
func reloadOnSIGHUP(ctx context.Context, r *engine.Reloader) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				_ = r.Reload(ctx)
			}
		}
	}()
}

// reloadHandler serves POST /-/reload. Unless lifecycle is on
// (--web.enable-lifecycle) it answers 403: anyone who reaches the port
// could otherwise make the prober re-read files. The caller never sees why
// a reload failed (paths, YAML): that goes to the log.
func reloadHandler(r *engine.Reloader, lifecycle bool) http.HandlerFunc {
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
		if err := r.Reload(req.Context()); err != nil {
			http.Error(w, "reload failed, see the prober's log", http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte("reloaded\n"))
	}
}
