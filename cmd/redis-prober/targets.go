package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/redis-prober/redis-prober/config"
	"github.com/redis-prober/redis-prober/engine"
	"github.com/redis-prober/redis-prober/internal/smallfile"
	"github.com/redis-prober/redis-prober/prober"
)

// targetSource builds the engine's target list from the flags, or from the
// config file when one is given (the flags then act as global defaults). It is
// called again on every reload.
type targetSource struct {
	redis     *redisFlags
	probe     *probeFlags
	discovery *discoveryFlags
	file      string
	addrSet   bool // --redis.addr given explicitly
	tag       string
	// shardIndex is --config.shard-index (-1: not given).
	shardIndex int
}

// loaded is one successful read of the targets: the engine config and, for
// a config file, the file and the watcher of its target sources.
type loaded struct {
	cfg     engine.Config
	file    *config.File
	sources *engine.SourceWatcher[discovered]
}

// discovered is what one target source holds: its groups and the settings
// of their targets.
type discovered struct {
	name     string
	template config.TargetTemplate
	groups   []config.Group
}

// sources are the file_sd and http_sd blocks of l.file. What each reads is
// checked to make valid targets before it replaces the last good read.
func (s *targetSource) sources(l loaded) []engine.Source[discovered] {
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
	var out []engine.Source[discovered]
	for i, sd := range f.FileSD {
		name := fmt.Sprintf("file_sd_configs[%d]", i)
		out = append(out, engine.Source[discovered]{Name: name, Interval: sd.Refresh(),
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
		out = append(out, engine.Source[discovered]{Name: name, Interval: sd.Refresh(),
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

// load reads the targets: from the flags, or from the config file and a
// first read of each of its target sources (file_sd, http_sd). A source
// that fails to read does not fail the load: it shows in
// l.sources.Healthy() and the reload gauge.
func (s *targetSource) load(ctx context.Context, log *slog.Logger) (loaded, error) {
	cfg := engine.Config{
		IntrinsicWindow:   *s.probe.intrinsicWindow,
		IntrinsicInterval: *s.probe.intrinsicInterval,
		CleanupTimeout:    3 * time.Second,
	}
	defaults, err := s.probe.config(s.tag)
	if err != nil {
		return loaded{cfg: cfg}, err
	}
	if s.file == "" {
		if s.shardIndex >= 0 {
			return loaded{cfg: cfg}, usagef("--config.shard-index: needs --config.file with sharding:")
		}
		names, eps, err := s.redis.endpoints(log)
		if err != nil {
			return loaded{cfg: cfg}, err
		}
		disc, err := s.discovery.options()
		if err != nil {
			return loaded{cfg: cfg}, err
		}
		for i, name := range names {
			t := s.target(name, eps[i], defaults, *s.probe.connectInterval, *s.probe.objective)
			t.Discovery = disc
			cfg.Targets = append(cfg.Targets, t)
		}
		return loaded{cfg: cfg}, nil
	}
	if s.addrSet {
		return loaded{cfg: cfg}, usagef("--redis.addr: give targets either with --redis.addr or in --config.file, not both")
	}
	f, err := config.Load(s.file)
	if err != nil {
		return loaded{cfg: cfg}, usagef("--config.file: %v", err)
	}
	if s.shardIndex >= 0 {
		if err := f.SetShardIndex(s.shardIndex); err != nil {
			return loaded{cfg: cfg}, usagef("--config.shard-index: %v", err)
		}
	}
	l := loaded{cfg: cfg, file: f}
	static, err := s.fileTargets(l, f.StaticTargets, log)
	if err != nil {
		return l, err
	}
	l.sources = engine.NewSourceWatcher(log, s.sources(l)...)
	l.sources.Poll(ctx)
	l.cfg.Targets, err = s.withDiscovered(l, static, log)
	return l, err
}

// rebuild is the engine config of l with what its sources hold now.
func (s *targetSource) rebuild(l loaded, log *slog.Logger) (engine.Config, error) {
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
func (s *targetSource) withDiscovered(l loaded, static []engine.Target, log *slog.Logger) ([]engine.Target, error) {
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
		return nil, usagef("--config.file: %d targets with the discovered ones, more than the %d one prober should carry (shard them: see docs/scaling.md)", len(out), config.MaxTargets)
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

// fileTargets turns the config targets list() gives into engine targets,
// with the flags and global: of l.file as defaults.
func (s *targetSource) fileTargets(l loaded, list func() ([]config.Target, error), log *slog.Logger) ([]engine.Target, error) {
	f := l.file
	fts, err := list()
	if err != nil {
		return nil, usagef("--config.file: %v", err)
	}
	defaults, err := s.probe.config(s.tag)
	if err != nil {
		return nil, err
	}
	global, err := s.redis.password(log)
	if err != nil {
		return nil, err
	}
	base, connect, objective, err := applyProbe(defaults, *s.probe.connectInterval, f.Global.Probe)
	if err != nil {
		return nil, usagef("--config.file: global.probe: %v", err)
	}
	if f.Global.Objective != nil {
		objective = time.Duration(*f.Global.Objective)
	}
	if objective == 0 {
		objective = *s.probe.objective
	}
	var out []engine.Target
	for i, ft := range fts {
		t, err := s.fileTarget(ft, base, connect, objective, global, log)
		if err != nil {
			return nil, usagef("--config.file: targets[%d] (%s): %v", i, ft.Name, err)
		}
		if t.Discovery, err = s.discovery.options(f.Global.Discovery, ft.Discovery); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func (s *targetSource) target(name string, ep prober.Endpoint, p prober.ProbeConfig, connect, objective time.Duration) engine.Target {
	// Two targets may name the same server; each gets its own keys.
	p.Namespace.Tag = fmt.Sprintf("%s-%08x", s.tag, crc32.ChecksumIEEE([]byte(name)))
	return engine.Target{
		Name:            name,
		Endpoint:        ep,
		Probe:           p,
		ConnectInterval: connect,
		SeedInterval:    min(10*time.Second, p.KeyTTL/3),
		Objective:       objective,
	}
}

func (s *targetSource) fileTarget(ft config.Target, base prober.ProbeConfig, connect, objective time.Duration, globalPassword string, log *slog.Logger) (engine.Target, error) {
	p, connect, _, err := applyProbe(base, connect, ft.Probe)
	if err != nil {
		return engine.Target{}, err
	}
	if ft.Objective != nil {
		objective = time.Duration(*ft.Objective)
	}
	password := globalPassword
	if ft.PasswordFile != "" {
		if password, err = readPassword(ft.PasswordFile, log); err != nil {
			return engine.Target{}, err
		}
	}
	addr := ft.Addr
	if ft.Cluster != nil {
		addr = ft.Cluster.Addrs[0]
	}
	var ep prober.Endpoint
	if ft.Sentinel != nil {
		// The Sentinels tell the primary's address; the endpoint carries
		// the credentials and TLS for it.
		ep = prober.Endpoint{Network: "tcp"}
	} else if _, ep, err = engine.ParseAddr(addr); err != nil {
		return engine.Target{}, fmt.Errorf("addr: %v", err)
	}
	switch {
	case ft.Username != "":
		ep.Username = ft.Username
	case ep.Username == "" && *s.redis.user != "":
		ep.Username = *s.redis.user // --redis.user is the default user
	}
	ep.Password = password
	var fingerprint string
	if ft.TLS != nil {
		if ep.TLS, err = ft.TLS.Config(); err != nil {
			return engine.Target{}, fmt.Errorf("tls: %v", err)
		}
		fingerprint = filesFingerprint(ft.TLS.CAFile, ft.TLS.CertFile, ft.TLS.KeyFile)
	}
	t := s.target(ft.Name, ep, p, connect, objective)
	t.Labels, t.Fingerprint = ft.Labels, fingerprint
	if ft.Cluster != nil {
		t.Cluster.Replicas = ft.Cluster.Replicas == nil || *ft.Cluster.Replicas
		if ft.Cluster.RefreshInterval != nil {
			t.Cluster.Refresh = time.Duration(*ft.Cluster.RefreshInterval)
		}
		for _, a := range ft.Cluster.Addrs[1:] {
			_, seed, err := engine.ParseAddr(a)
			if err != nil {
				return engine.Target{}, fmt.Errorf("cluster.addrs: %v", err)
			}
			seed.Username, seed.Password, seed.TLS = ep.Username, ep.Password, ep.TLS
			t.Cluster.Seeds = append(t.Cluster.Seeds, seed)
		}
	}
	if sc := ft.Sentinel; sc != nil {
		so := &engine.SentinelOptions{MasterName: sc.MasterName, ProbeReplicas: sc.ProbeReplicas}
		if sc.RefreshInterval != nil {
			so.Refresh = time.Duration(*sc.RefreshInterval)
		}
		spw := ""
		if sc.PasswordFile != "" {
			if spw, err = readPassword(sc.PasswordFile, log); err != nil {
				return engine.Target{}, err
			}
		}
		for _, a := range sc.Addrs {
			_, sep, err := engine.ParseAddr(a)
			if err != nil {
				return engine.Target{}, fmt.Errorf("sentinel.addrs: %v", err)
			}
			if sc.Username != "" {
				sep.Username = sc.Username
			}
			sep.Password = spw
			if sep.TLS != nil && ep.TLS != nil {
				// rediss:// Sentinel: trust what the target's tls: trusts.
				sep.TLS = ep.TLS
			}
			so.Sentinels = append(so.Sentinels, sep)
		}
		t.Sentinel = so
	}
	return t, nil
}

// applyProbe lays the set fields of a config probe block over base.
func applyProbe(base prober.ProbeConfig, connect time.Duration, c config.Probe) (prober.ProbeConfig, time.Duration, time.Duration, error) {
	p := base
	if c.Rate != nil {
		p.Rate = *c.Rate
	}
	if c.Timeout != nil {
		p.Timeout = time.Duration(*c.Timeout)
	}
	if c.Connections != nil {
		p.Connections = *c.Connections
	}
	if c.DataSize != nil {
		p.DataSize = *c.DataSize
	}
	if c.KeyTTL != nil {
		p.KeyTTL = time.Duration(*c.KeyTTL)
	}
	if c.ConnectInterval != nil {
		connect = time.Duration(*c.ConnectInterval)
	}
	if c.KeyPrefix != nil {
		if err := prober.ValidatePrefix(*c.KeyPrefix); err != nil {
			return p, 0, 0, fmt.Errorf("key_prefix: %v", err)
		}
		p.Namespace.Prefix = *c.KeyPrefix
	}
	if len(c.Commands) > 0 {
		list := ""
		for i, n := range c.Commands {
			if i > 0 {
				list += ","
			}
			list += n
		}
		cmds, err := prober.ParseCommands(list)
		if err != nil {
			return p, 0, 0, fmt.Errorf("commands: %v", err)
		}
		p.Commands = cmds
	}
	return p, connect, 0, nil
}

// filesFingerprint hashes the content of files, so a rotated certificate
// restarts the target on reload.
func filesFingerprint(paths ...string) string {
	h := sha256.New()
	for _, p := range paths {
		if p == "" {
			continue
		}
		b, err := smallfile.Read(p, smallfile.MaxPEM)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			continue
		}
		h.Write([]byte(p))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
