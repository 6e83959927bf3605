package main

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/redis-prober/redis-prober/engine"
	"github.com/redis-prober/redis-prober/internal/exposition"
	"github.com/redis-prober/redis-prober/prober"
)

// redisFlags say how to reach Redis; run, burst and doctor share them.
type redisFlags struct {
	addrs        *[]string
	user         *string
	passwordFile *string
}

func addRedisFlags(g flagGroup) *redisFlags {
	return &redisFlags{
		addrs: g.Flag("redis.addr", "Redis to probe: redis://host:port[/db], rediss://host:port, unix:///path or host:port. Repeatable. A password in the address is refused.").
			Default("redis://127.0.0.1:6379").Strings(),
		user: g.Flag("redis.user", "ACL user name.").String(),
		passwordFile: g.Flag("redis.password-file", "File holding the Redis password (first line). Falls back to the REDIS_PASSWORD environment variable.").
			String(),
	}
}

// endpoints resolves the addresses and the secret. The password never comes
// from argv.
func (f *redisFlags) endpoints(log *slog.Logger) ([]string, []prober.Endpoint, error) {
	password, err := f.password(log)
	if err != nil {
		return nil, nil, err
	}
	var names []string
	var eps []prober.Endpoint
	seen := map[string]bool{}
	for _, a := range *f.addrs {
		name, ep, err := engine.ParseAddr(a)
		if err != nil {
			return nil, nil, usagef("--redis.addr: %v", err)
		}
		if seen[name] {
			return nil, nil, usagef("--redis.addr: %s given twice", name)
		}
		seen[name] = true
		if *f.user != "" {
			ep.Username = *f.user
		}
		ep.Password = password
		names, eps = append(names, name), append(eps, ep)
	}
	return names, eps, nil
}

// password is the secret from --redis.password-file, else REDIS_PASSWORD.
func (f *redisFlags) password(log *slog.Logger) (string, error) {
	if *f.passwordFile == "" {
		return os.Getenv("REDIS_PASSWORD"), nil
	}
	pw, err := engine.ReadPassword(*f.passwordFile, log)
	if err != nil {
		return "", usagef("--redis.password-file: %v", err)
	}
	return pw, nil
}

// probeFlags shape the steady trickle.
type probeFlags struct {
	rate              *float64
	timeout           *time.Duration
	commands          *string
	connections       *int
	dataSize          *int
	keyPrefix         *string
	keyTTL            *time.Duration
	connectInterval   *time.Duration
	objective         *time.Duration
	intrinsicInterval *time.Duration
	intrinsicWindow   *time.Duration
	classicBuckets    *string
}

func addProbeFlags(g flagGroup) *probeFlags {
	return &probeFlags{
		rate:     floatFlag(g, "probe.rate", "Probe requests per second per target, spread over --probe.commands.", "10"),
		timeout:  durationFlag(g, "probe.timeout", "Timeout of one probe request, counted from its intended start.", "1s"),
		commands: g.Flag("probe.commands", "Commands to probe, in turn: "+strings.Join(prober.CommandNames(), ", ")+".").Default("ping,get,set").String(),
		connections: intFlag(g, "probe.connections",
			"Probe connections per target: while one waits for a slow reply the schedule goes on over the others.", "2"),
		dataSize:  intFlag(g, "probe.data-size", "Bytes of each value the probe writes.", "32"),
		keyPrefix: g.Flag("probe.key-prefix", "Namespace of every key the prober writes; must end in a separator.").Default("redis-prober:").String(),
		keyTTL:    durationFlag(g, "probe.key-ttl", "TTL of the probe keys; they are refreshed while the prober runs and deleted when it stops.", "60s"),
		connectInterval: durationFlag(g, "probe.connect-interval",
			"How often to measure dial + AUTH + PING on a fresh connection (0 disables).", "10s"),
		objective: durationFlag(g, "probe.objective", "The p99 latency objective exported as redis_prober_objective_seconds.", "5ms"),
		intrinsicInterval: durationFlag(g, "probe.intrinsic-interval",
			"How often to sample the host's scheduling jitter (0 disables).", "1s"),
		intrinsicWindow: durationFlag(g, "probe.intrinsic-window",
			"Length of each busy-loop jitter sample; window/interval is its CPU cost.", "1ms"),
		classicBuckets: g.Flag("probe.classic-buckets",
			"Upper bounds of the classic buckets of the probe's latency histogram, beside its native ones: increasing durations, comma-separated, or none (native buckets only). Each bound is a series per command and node; the shipped classic-bucket alert rules read the default bounds at 1, 2, 5, 10, 25 and 100 ms.").
			Default(formatBuckets(prober.LatencyBuckets)).String(),
	}
}

// maxClassicBuckets bounds --probe.classic-buckets: every bound is a series
// per command and node.
const maxClassicBuckets = 30

// classic validates --probe.classic-buckets into bounds in seconds; none is
// an empty list.
func (f *probeFlags) classic() ([]float64, error) {
	s := strings.TrimSpace(*f.classicBuckets)
	if s == "none" {
		return []float64{}, nil
	}
	var out []float64
	for _, part := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(part))
		switch {
		case err != nil:
			return nil, usagef("--probe.classic-buckets: %q is not a duration (or give none)", part)
		case d <= 0:
			return nil, usagef("--probe.classic-buckets: %v must be above 0", d)
		case len(out) > 0 && d.Seconds() <= out[len(out)-1]:
			return nil, usagef("--probe.classic-buckets: %v is not above the bound before it", d)
		}
		out = append(out, d.Seconds())
	}
	if len(out) > maxClassicBuckets {
		return nil, usagef("--probe.classic-buckets: %d bounds, at most %d", len(out), maxClassicBuckets)
	}
	return out, nil
}

// formatBuckets writes bounds in seconds as the flag takes them.
func formatBuckets(bounds []float64) string {
	parts := make([]string, len(bounds))
	for i, b := range bounds {
		parts[i] = strings.ReplaceAll(time.Duration(math.Round(b*1e9)).String(), "µ", "u")
	}
	return strings.Join(parts, ",")
}

// config validates the probe flags into a prober config.
func (f *probeFlags) config(tag string) (prober.ProbeConfig, error) {
	var cfg prober.ProbeConfig
	switch {
	case *f.rate <= 0 || *f.rate > 10000:
		return cfg, usagef("--probe.rate: %v must be above 0 and at most 10000", *f.rate)
	case *f.timeout <= 0:
		return cfg, usagef("--probe.timeout: must be above 0")
	case *f.connections < 1 || *f.connections > 64:
		return cfg, usagef("--probe.connections: %d must be from 1 to 64", *f.connections)
	case *f.dataSize < 1 || *f.dataSize > 1<<20:
		return cfg, usagef("--probe.data-size: %d must be from 1 to 1048576", *f.dataSize)
	case *f.keyTTL < time.Second:
		return cfg, usagef("--probe.key-ttl: %v must be at least 1s", *f.keyTTL)
	case *f.objective <= 0:
		return cfg, usagef("--probe.objective: must be above 0")
	case *f.intrinsicInterval > 0 && *f.intrinsicWindow*10 > *f.intrinsicInterval:
		return cfg, usagef("--probe.intrinsic-window: %v is more than a tenth of --probe.intrinsic-interval", *f.intrinsicWindow)
	}
	if err := prober.ValidatePrefix(*f.keyPrefix); err != nil {
		return cfg, usagef("--probe.key-prefix: %v", err)
	}
	cmds, err := prober.ParseCommands(*f.commands)
	if err != nil {
		return cfg, usagef("--probe.commands: %v", err)
	}
	return prober.ProbeConfig{
		Rate:        *f.rate,
		Timeout:     *f.timeout,
		Commands:    cmds,
		Connections: *f.connections,
		DataSize:    *f.dataSize,
		KeyTTL:      *f.keyTTL,
		Namespace:   prober.Namespace{Prefix: *f.keyPrefix, Tag: tag},
	}, nil
}

// source fills in the flags' part of src: the probe defaults, validated,
// and how to read the addresses and secrets on every load.
func (f *probeFlags) source(src *engine.TargetSource, redisF *redisFlags, discoveryF *discoveryFlags) error {
	defaults, err := f.config(src.Tag)
	if err != nil {
		return err
	}
	src.Probe, src.ConnectInterval, src.Objective = defaults, *f.connectInterval, *f.objective
	src.IntrinsicWindow, src.IntrinsicInterval = *f.intrinsicWindow, *f.intrinsicInterval
	src.User, src.MaxNodes = *redisF.user, *discoveryF.maxNodes
	src.Endpoints, src.Password = redisF.endpoints, redisF.password
	return nil
}

// extensionEnv is what a feature gets to build its services.
type extensionEnv struct {
	log     *slog.Logger
	reg     prometheus.Registerer
	metrics *prober.Metrics
	// status is where an extension names the service the status page
	// reads of it.
	status *engine.StatusSources
}

// extension validates its flags and returns the services to run per target.
// A bad flag value is a usageError.
type extension func(env extensionEnv) ([]engine.Service, error)

func addRunCommand(cmd *kingpin.CmdClause) command {
	redisF := addRedisFlags(cmd)
	probeF := addProbeFlags(cmd)
	src := &engine.TargetSource{}
	// Each feature beyond the probe declares its own flags and hands back
	// the per-target services it wants the engine to run.
	// --path.procfs and --path.sysfs are declared once: the collectors and
	// the change watch read the same host.
	paths := addPathFlags(cmd)
	bursts := addBurstRunFlags(cmd, &src.File)
	extensions := []extension{
		addCollectorRunFlags(cmd, paths),
		bursts.extension,
		addChangeRunFlags(cmd, paths),
		addExplainRunFlags(cmd, paths),
	}
	discoveryF := addDiscoveryFlags(cmd)
	cmd.Flag("config.file", "YAML file listing targets and burst plans (see docs/configuration.md); flags give its defaults. Reloaded on SIGHUP (and POST /-/reload with --web.enable-lifecycle).").
		StringVar(&src.File)
	cmd.GetFlag("redis.addr").IsSetByUser(&src.AddrSet)
	cmd.Flag("config.shard-index", "This prober's share of the targets when the config file has sharding: (0 to shards-1; a StatefulSet passes its pod ordinal). Overrides sharding.index.").
		Default("-1").IntVar(&src.ShardIndex)
	configCheck := cmd.Flag("config.check", "Validate the configuration, print a summary and exit.").Bool()
	webF := kingpinflag.AddFlags(cmd, ":9379")
	telemetryPath := cmd.Flag("web.telemetry-path", "Path under which to expose metrics.").Default("/metrics").String()
	lifecycle := cmd.Flag("web.enable-lifecycle", "Serve POST /-/reload (off: 403). SIGHUP reloads either way.").Bool()
	maxRequests := intFlag(cmd, "web.max-requests", "Most concurrent scrapes served at once; more are refused with 503 (0: no limit).", "40")
	deprecated := append(deprecateRunFlags(cmd), bursts.deprecated()...)

	return func(ctx context.Context, env *cliEnv) error {
		if err := checkWebFlags(webF); err != nil {
			return err
		}
		log := promslog.New(env.logConfig)
		warnDeprecated(log, *bursts.planName, deprecated)
		src.Tag = instanceTag()
		if err := probeF.source(src, redisF, discoveryF); err != nil {
			return err
		}
		classic, err := probeF.classic()
		if err != nil {
			return err
		}
		if !strings.HasPrefix(*telemetryPath, "/") {
			return usagef("--web.telemetry-path: %q must start with /", *telemetryPath)
		}
		// The port before anything connects (Redis, an http_sd server):
		// a prober that cannot serve its metrics must not load anyone.
		var listeners []net.Listener
		if !*configCheck {
			if listeners, err = listen(webF); err != nil {
				return err
			}
			defer closeAll(listeners)
		}
		initial, err := src.Load(ctx, log)
		if err != nil {
			return err
		}
		cfg := initial.Config()
		if *configCheck {
			if !initial.Healthy() {
				return usagef("--config.file: a target source did not read (see the log above)")
			}
			if err := bursts.check(); err != nil {
				return err
			}
			fmt.Fprintf(env.stdout, "config OK: %d targets\n", len(cfg.Targets))
			return nil
		}

		// exposition.Registry gathers the Redis-side series of every target
		// directly (sorted, without a registry's checks per series): the
		// longest part of a scrape at 1,000 targets (docs/performance.md, "The hand-written parts").
		reg := exposition.NewRegistry()
		registerProcessCollectors(reg)
		metrics := prober.NewMetricsWith(reg, prober.MetricsOptions{ProbeBuckets: classic})
		var (
			services []engine.Service
			sources  engine.StatusSources
		)
		for _, ext := range extensions {
			svcs, err := ext(extensionEnv{log: log, reg: reg, metrics: metrics, status: &sources})
			if err != nil {
				return err
			}
			services = append(services, svcs...)
		}
		// The status page reads the other services' last burst, change
		// and checks of each node.
		status := engine.NewStatus(sources)
		services = append(services, status)
		eng := engine.NewWithMetrics(metrics, log, services...)
		reg.MustRegister(eng)
		reloads := engine.NewReloader(src, eng, log, reg)

		log.Info("starting "+exporterName, "version", version.Info(), "build_context", version.BuildContext())
		srv := newWebServer(webConfig{
			telemetryPath: *telemetryPath,
			maxRequests:   *maxRequests,
			ready:         eng.Ready,
			reload:        reloadHandler(reloads, *lifecycle),
			status:        status,
		}, reg, log)
		engineDone := make(chan struct{})
		runCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			defer close(engineDone)
			eng.Run(runCtx, cfg)
		}()
		go reloads.Run(runCtx, initial)
		// Before the server: a SIGHUP sent once /-/ready answers must
		// reload, not end the process (the signal's default action).
		reloadOnSIGHUP(runCtx, reloads)
		serveErr := make(chan error, 1)
		go func() { serveErr <- serve(listeners, srv, webF, log) }()

		var result error
		select {
		case <-ctx.Done():
			log.Info("stopping", "reason", "signal")
		case err := <-serveErr:
			result = fmt.Errorf("web server: %w", err)
		}
		cancel()
		<-engineDone
		shutdownCtx, stop := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer stop()
		_ = srv.Shutdown(shutdownCtx)
		log.Info("stopped")
		return result
	}
}

// instanceTag names this prober process inside the key namespace, so several
// probers (or a restarted one) never share probe keys.
func instanceTag() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "prober"
	}
	host = strings.NewReplacer("{", "", "}", "", " ", "").Replace(host)
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}
