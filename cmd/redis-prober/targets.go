package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
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
}

func (s *targetSource) load(log *slog.Logger) (engine.Config, error) {
	cfg := engine.Config{
		IntrinsicWindow:   *s.probe.intrinsicWindow,
		IntrinsicInterval: *s.probe.intrinsicInterval,
		CleanupTimeout:    3 * time.Second,
	}
	defaults, err := s.probe.config(s.tag)
	if err != nil {
		return cfg, err
	}
	if s.file == "" {
		names, eps, err := s.redis.endpoints(log)
		if err != nil {
			return cfg, err
		}
		disc, err := s.discovery.options()
		if err != nil {
			return cfg, err
		}
		for i, name := range names {
			t := s.target(name, eps[i], defaults, *s.probe.connectInterval, *s.probe.objective)
			t.Discovery = disc
			cfg.Targets = append(cfg.Targets, t)
		}
		return cfg, nil
	}
	if s.addrSet {
		return cfg, usagef("--redis.addr: give targets either with --redis.addr or in --config.file, not both")
	}
	f, err := config.Load(s.file)
	if err != nil {
		return cfg, usagef("--config.file: %v", err)
	}
	global, err := s.redis.password(log)
	if err != nil {
		return cfg, err
	}
	base, connect, objective, err := applyProbe(defaults, *s.probe.connectInterval, f.Global.Probe)
	if err != nil {
		return cfg, usagef("--config.file: global.probe: %v", err)
	}
	if f.Global.Objective != nil {
		objective = time.Duration(*f.Global.Objective)
	}
	if objective == 0 {
		objective = *s.probe.objective
	}
	for i, ft := range f.Targets {
		t, err := s.fileTarget(ft, base, connect, objective, global, log)
		if err != nil {
			return cfg, usagef("--config.file: targets[%d] (%s): %v", i, ft.Name, err)
		}
		if t.Discovery, err = s.discovery.options(f.Global.Discovery, ft.Discovery); err != nil {
			return cfg, err
		}
		cfg.Targets = append(cfg.Targets, t)
	}
	return cfg, nil
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
