package engine

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis-prober/redis-prober/config"
	"github.com/redis-prober/redis-prober/internal/usage"
	"github.com/redis-prober/redis-prober/prober"
)

// TargetSource builds the engine's target list from the command line, or
// from the config file when one is given (the command line then gives its
// defaults). Load is called again on every reload. The fields are the
// flags' values, already parsed; the functions read what may change
// between loads (a password file).
type TargetSource struct {
	// File is --config.file ("": the targets are Endpoints').
	File string
	// AddrSet is true when --redis.addr was given explicitly.
	AddrSet bool
	// ShardIndex is --config.shard-index (-1: not given).
	ShardIndex int
	// Tag names this prober in the key namespace (see Target.Probe).
	Tag string
	// Probe holds the probe flags' defaults, validated.
	Probe prober.ProbeConfig
	// ConnectInterval and Objective are --probe.connect-interval and
	// --probe.objective; IntrinsicWindow and IntrinsicInterval are
	// --probe.intrinsic-*.
	ConnectInterval, Objective         time.Duration
	IntrinsicWindow, IntrinsicInterval time.Duration
	// User is --redis.user, the user of a target that names none.
	User string
	// MaxNodes is --discovery.max-nodes, under the config's discovery: blocks.
	MaxNodes int
	// Endpoints are the --redis.addr targets with their credentials, read
	// now; Password is the password of a config target without a
	// password_file (--redis.password-file or REDIS_PASSWORD), read now.
	Endpoints func(*slog.Logger) ([]string, []prober.Endpoint, error)
	Password  func(*slog.Logger) (string, error)
}

// Loaded is one successful read of the targets: the engine config and, for
// a config file, the file and the watcher of its target sources.
type Loaded struct {
	cfg     Config
	file    *config.File
	sources *SourceWatcher[discovered]
}

// Config is the engine config of the load.
func (l Loaded) Config() Config { return l.cfg }

// Healthy is false when a target source of the config file did not read.
func (l Loaded) Healthy() bool { return l.sources == nil || l.sources.Healthy() }

// discovered is what one target source holds: its groups and the settings
// of their targets.
type discovered struct {
	name     string
	template config.TargetTemplate
	groups   []config.Group
}

// sources are the file_sd and http_sd blocks of l.file. What each reads is
// checked to make valid targets before it replaces the last good read.
func (s *TargetSource) sources(l Loaded) []Source[discovered] {
	f := l.file
	check := func(name string, tpl config.TargetTemplate, groups []config.Group, err error) (discovered, error) {
		d := discovered{name: name, template: tpl, groups: groups}
		if err != nil {
			return d, err
		}
		if _, err := f.DiscoveredTargets(tpl, groups); err != nil {
			return d, err // names the file or URL
		}
		for _, g := range groups {
			one := []config.Group{g}
			if _, err := s.fileTargets(l, func() ([]config.Target, error) { return f.DiscoveredTargets(tpl, one) }, nil); err != nil {
				return d, fmt.Errorf("%s: %w", sourceName(g.Source), err)
			}
		}
		return d, nil
	}
	var out []Source[discovered]
	for i, sd := range f.FileSD {
		name := fmt.Sprintf("file_sd_configs[%d]", i)
		out = append(out, Source[discovered]{Name: name, Interval: sd.Refresh(),
			Read: func(context.Context) (discovered, error) {
				groups, err := config.ReadFileSD(sd)
				return check(name, sd.Target, groups, err)
			}})
	}
	for i, sd := range f.HTTPSD {
		name := fmt.Sprintf("http_sd_configs[%d]", i)
		// The client of the source's HTTP client fields, made once a load;
		// it reads its credential files again on every fetch.
		client, clientErr := sd.Client()
		out = append(out, Source[discovered]{Name: name, Interval: sd.Refresh(),
			Read: func(ctx context.Context) (discovered, error) {
				if clientErr != nil {
					return check(name, sd.Target, nil, fmt.Errorf("%s: %w", config.RedactURL(sd.URL), clientErr))
				}
				groups, err := config.FetchHTTPSD(ctx, client, sd)
				return check(name, sd.Target, groups, err)
			}})
	}
	return out
}

// Load reads the targets: from the flags, or from the config file and a
// first read of each of its target sources (file_sd, http_sd). A source
// that fails to read does not fail the load: it shows in
// l.sources.Healthy() and the reload gauge.
func (s *TargetSource) Load(ctx context.Context, log *slog.Logger) (Loaded, error) {
	cfg := Config{
		IntrinsicWindow:   s.IntrinsicWindow,
		IntrinsicInterval: s.IntrinsicInterval,
		CleanupTimeout:    3 * time.Second,
	}
	defaults := s.Probe
	if s.File == "" {
		if s.ShardIndex >= 0 {
			return Loaded{cfg: cfg}, usage.Errorf("--config.shard-index: needs --config.file with sharding:")
		}
		names, eps, err := s.Endpoints(log)
		if err != nil {
			return Loaded{cfg: cfg}, err
		}
		disc, err := DiscoveryFrom(s.MaxNodes)
		if err != nil {
			return Loaded{cfg: cfg}, err
		}
		for i, name := range names {
			t := s.target(name, eps[i], defaults, s.ConnectInterval, s.Objective)
			t.Discovery = disc
			cfg.Targets = append(cfg.Targets, t)
		}
		return Loaded{cfg: cfg}, nil
	}
	if s.AddrSet {
		return Loaded{cfg: cfg}, usage.Errorf("--redis.addr: give targets either with --redis.addr or in --config.file, not both")
	}
	f, err := config.Load(s.File)
	if err != nil {
		return Loaded{cfg: cfg}, usage.Errorf("--config.file: %v", err)
	}
	if s.ShardIndex >= 0 {
		if err := f.SetShardIndex(s.ShardIndex); err != nil {
			return Loaded{cfg: cfg}, usage.Errorf("--config.shard-index: %v", err)
		}
	}
	l := Loaded{cfg: cfg, file: f}
	static, err := s.fileTargets(l, f.StaticTargets, log)
	if err != nil {
		return l, err
	}
	l.sources = NewSourceWatcher(log, s.sources(l)...)
	l.sources.Poll(ctx)
	l.cfg.Targets, err = s.withDiscovered(l, static, log)
	return l, err
}

// rebuild is the engine config of l with what its sources hold now.
func (s *TargetSource) rebuild(l Loaded, log *slog.Logger) (Config, error) {
	static, err := s.fileTargets(l, l.file.StaticTargets, log)
	if err != nil {
		return l.cfg, err
	}
	cfg := l.cfg
	cfg.Targets, err = s.withDiscovered(l, static, log)
	return cfg, err
}

// withDiscovered adds the targets of every source to the static ones. A
// name already taken (by a static target or an earlier source) keeps its
// first holder; the later one is left out with a warning.
func (s *TargetSource) withDiscovered(l Loaded, static []Target, log *slog.Logger) ([]Target, error) {
	out := static
	taken := map[string]bool{}
	for _, t := range static {
		taken[t.Name] = true
	}
	for _, src := range l.sources.Snapshot() {
		// No log: this runs on every change of a source, and the warning
		// about a loose password file would repeat each time.
		ts, err := s.fileTargets(l, func() ([]config.Target, error) { return l.file.DiscoveredTargets(src.template, src.groups) }, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src.name, err)
		}
		for _, t := range ts {
			if taken[t.Name] {
				log.Warn("a discovered target has the name of another target; the first one is kept", "source", src.name, "target", t.Name)
				continue
			}
			taken[t.Name] = true
			out = append(out, t)
		}
	}
	if len(out) > config.MaxTargets {
		return nil, usage.Errorf("--config.file: %d targets with the discovered ones, more than the %d one prober should carry (shard them: see docs/scaling.md)", len(out), config.MaxTargets)
	}
	return out, nil
}

// sourceName is a file path, or a URL without its query.
func sourceName(src string) string {
	if strings.Contains(src, "://") {
		return config.RedactURL(src)
	}
	return src
}
