package main

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redis-prober/redis-prober/collector"
	"github.com/redis-prober/redis-prober/engine"
	"github.com/redis-prober/redis-prober/internal/host"
)

// pathFlags are the roots of /proc and /sys; run and doctor share them.
type pathFlags struct {
	procfs, sysfs *string
}

func addPathFlags(g flagGroup) pathFlags {
	return pathFlags{
		procfs: g.Flag("path.procfs", "procfs mountpoint (the host's /proc mounted into a container, e.g. /host/proc).").Default("/proc").String(),
		sysfs:  g.Flag("path.sysfs", "sysfs mountpoint (the host's /sys mounted into a container, e.g. /host/sys).").Default("/sys").String(),
	}
}

func (p pathFlags) paths() host.Paths {
	return host.Paths{ProcFS: *p.procfs, SysFS: *p.sysfs}
}

// addCollectorRunFlags declares the collector flags of `run`: one
// --collector.<name> / --no-collector.<name> per entry of collector.All()
// and --collector.refresh-interval; the host is read under paths. Its
// extension registers the host collectors once and returns the service that
// runs the Redis-side collectors of each target.
func addCollectorRunFlags(g flagGroup, paths pathFlags) extension {
	enabled := map[string]*bool{}
	for _, d := range collector.All() {
		enabled[d.Name] = g.Flag("collector."+d.Name, d.Help+" Disable with --no-collector."+d.Name+".").Default("true").Bool()
	}
	interval := durationFlag(g, "collector.refresh-interval",
		"How often the Redis-side collectors read INFO, LATENCY and CONFIG; scrapes read the cache and never call Redis.", "5s")
	serverClassic := g.Flag("collector.server-latency.classic-buckets",
		"Add classic buckets (22 series a probed command) to redis_prober_server_latency_seconds beside its native ones, for a Prometheus that does not ingest native histograms.").Bool()
	perTargetDuration := g.Flag("collector.per-target-duration",
		"Export redis_prober_collector_duration_seconds for the Redis-side collectors of every target and node too (a series per collector and node); their redis_prober_collector_success is always exported, the host collectors' duration too.").Bool()

	return func(env extensionEnv) ([]engine.Service, error) {
		if *interval < 100*time.Millisecond {
			return nil, usagef("--collector.refresh-interval: %v must be at least 100ms", *interval)
		}
		on := collector.Enabled{}
		var host, target bool
		for _, d := range collector.All() {
			if !*enabled[d.Name] {
				continue
			}
			on[d.Name] = true
			host = host || d.Kind == collector.KindHost
			target = target || d.Kind == collector.KindTarget
		}
		if host {
			if err := env.reg.Register(collector.NewHost(paths.paths(), on, env.log)); err != nil {
				return nil, fmt.Errorf("register host collectors: %w", err)
			}
		}
		if !target {
			return nil, nil
		}
		cfg := engine.CollectorsConfig{
			Log: env.log, Registerer: env.reg, Paths: paths.paths(), Enabled: on,
			Interval: *interval, ServerClassicBuckets: *serverClassic, Duration: *perTargetDuration,
		}
		if env.metrics != nil {
			if m, ok := env.metrics.Intrinsic().(prometheus.Metric); ok {
				cfg.Intrinsic = m
			}
		}
		svc := engine.NewCollectors(cfg)
		env.status.Checks, env.status.Host = svc, svc
		return []engine.Service{svc}, nil
	}
}
