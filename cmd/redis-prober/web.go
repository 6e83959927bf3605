package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/redis-prober/redis-prober/collector"
	"github.com/redis-prober/redis-prober/engine"
	"github.com/redis-prober/redis-prober/internal/exposition"
	"github.com/redis-prober/redis-prober/internal/host"
	"github.com/redis-prober/redis-prober/internal/statuspage"
)

// registerProcessCollectors registers the build info and the Go and
// process collectors, whose counters and summaries count since the
// process started: they carry that as their created timestamp (except
// the network counters, which count since the network namespace's
// interfaces came up).
func registerProcessCollectors(reg prometheus.Registerer) {
	started := collector.ProcessStarted(host.DefaultPaths(), os.Getpid())
	reg.MustRegister(
		versioncollector.NewCollector("redis_prober"),
		collector.SinceStart(collectors.NewGoCollector(), started),
		collector.SinceStart(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), started,
			"process_network_receive_bytes_total", "process_network_transmit_bytes_total"),
	)
}

type webConfig struct {
	telemetryPath string
	maxRequests   int
	ready         func() bool
	reload        http.HandlerFunc
	// status, when set, is served at / as the status page (unless
	// the metrics are there).
	status *engine.Status
}

// newWebServer serves /metrics, the landing page and the health endpoints.
// Every timeout is set so a slow or silent client cannot hold a connection.
func newWebServer(cfg webConfig, gatherer prometheus.Gatherer, log *slog.Logger) *http.Server {
	mux := http.NewServeMux()
	mux.Handle(cfg.telemetryPath, exposition.Handler(gatherer, promhttp.HandlerOpts{
		ErrorLog:            slog.NewLogLogger(log.Handler(), slog.LevelError),
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: cfg.maxRequests,
		Timeout:             10 * time.Second,
		EnableOpenMetrics:   true,
	}))
	mux.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("Healthy\n"))
	})
	mux.HandleFunc("/-/ready", func(w http.ResponseWriter, _ *http.Request) {
		if !cfg.ready() {
			http.Error(w, "Not ready", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("Ready\n"))
	})
	if cfg.reload != nil {
		mux.HandleFunc("/-/reload", cfg.reload)
	}
	switch {
	case cfg.telemetryPath == "/":
		// The metrics are the landing page.
	case cfg.status != nil:
		mux.Handle("/", statuspage.New(cfg.status, cfg.telemetryPath, log))
	default:
		landing, err := web.NewLandingPage(web.LandingConfig{
			Name:        "Redis Prober",
			Description: "Prometheus exporter and continuous synthetic prober for Redis latency",
			Version:     version.Info(),
			Links: []web.LandingLinks{
				{Address: cfg.telemetryPath, Text: "Metrics"},
				{Address: "/-/healthy", Text: "Health"},
				{Address: "/-/ready", Text: "Readiness"},
			},
		})
		if err != nil {
			log.Error("landing page", "err", err)
		} else {
			mux.Handle("/", landing)
		}
	}
	return &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
}

// checkWebFlags refuses, before anything starts, web flags that cannot
// work: an address that no listener could take (a port above 65535, no
// port) or a web config file that does not read. exporter-toolkit would
// only find them once the engine runs, and exit 1 after several log lines.
func checkWebFlags(f *web.FlagConfig) error {
	if f.WebSystemdSocket == nil || !*f.WebSystemdSocket {
		for _, addr := range *f.WebListenAddresses {
			_, port, err := net.SplitHostPort(addr)
			if err != nil {
				return usagef("--web.listen-address: %q: want host:port or :port (%v)", addr, err)
			}
			if _, err := net.LookupPort("tcp", port); err != nil {
				return usagef("--web.listen-address: %q: port %q is not a port number from 0 to 65535", addr, port)
			}
		}
	}
	if f.WebConfigFile != nil && *f.WebConfigFile != "" {
		if err := web.Validate(*f.WebConfigFile); err != nil {
			return usagef("--web.config.file: %v", err)
		}
	}
	return nil
}

// listen takes the --web.listen-address ports, so a busy one fails the
// start with one line before anything connects (exporter-toolkit would
// bind them only when serving, after the engine had started). nil with
// --web.systemd-socket: systemd holds the sockets.
func listen(f *web.FlagConfig) ([]net.Listener, error) {
	if f.WebSystemdSocket != nil && *f.WebSystemdSocket {
		return nil, nil
	}
	var out []net.Listener
	for _, addr := range *f.WebListenAddresses {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			closeAll(out)
			if errors.Is(err, syscall.EADDRINUSE) {
				return nil, fmt.Errorf("--web.listen-address: %s is already in use by another process (%w)", addr, err)
			}
			return nil, fmt.Errorf("--web.listen-address: cannot listen on %s: %w", addr, err)
		}
		out = append(out, l)
	}
	return out, nil
}

func closeAll(ls []net.Listener) {
	for _, l := range ls {
		_ = l.Close()
	}
}

// serve serves srv on the listeners listen took, or on systemd's.
func serve(listeners []net.Listener, srv *http.Server, f *web.FlagConfig, log *slog.Logger) error {
	if listeners == nil {
		return web.ListenAndServe(srv, f, log)
	}
	return web.ServeMultiple(listeners, srv, f, log)
}
