package engine

import (
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
	"github.com/redis-prober/redis-prober/internal/smallfile"
	"github.com/redis-prober/redis-prober/internal/usage"
	"github.com/redis-prober/redis-prober/prober"
)

// fileTargets turns the config targets list() gives into engine targets,
// with the flags and global: of l.file as defaults.
func (s *TargetSource) fileTargets(l Loaded, list func() ([]config.Target, error), log *slog.Logger) ([]Target, error) {
	f := l.file
	fts, err := list()
	if err != nil {
		return nil, usage.Errorf("--config.file: %v", err)
	}
	defaults := s.Probe
	global, err := s.Password(log)
	if err != nil {
		return nil, err
	}
	base, connect, err := applyProbe(defaults, s.ConnectInterval, f.Global.Probe)
	if err != nil {
		return nil, usage.Errorf("--config.file: global.probe: %v", err)
	}
	objective := s.Objective
	if f.Global.Objective != nil {
		objective = time.Duration(*f.Global.Objective)
	}
	var out []Target
	for i, ft := range fts {
		t, err := s.fileTarget(ft, base, connect, objective, global, log)
		if err != nil {
			return nil, usage.Errorf("--config.file: targets[%d] (%s): %v", i, ft.Name, err)
		}
		if t.Discovery, err = DiscoveryFrom(s.MaxNodes, f.Global.Discovery, ft.Discovery); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func (s *TargetSource) target(name string, ep prober.Endpoint, p prober.ProbeConfig, connect, objective time.Duration) Target {
	// Two targets may name the same server; each gets its own keys.
	p.Namespace.Tag = fmt.Sprintf("%s-%08x", s.Tag, crc32.ChecksumIEEE([]byte(name)))
	return Target{
		Name:            name,
		Endpoint:        ep,
		Probe:           p,
		ConnectInterval: connect,
		SeedInterval:    min(10*time.Second, p.KeyTTL/3),
		Objective:       objective,
	}
}

func (s *TargetSource) fileTarget(ft config.Target, base prober.ProbeConfig, connect, objective time.Duration, globalPassword string, log *slog.Logger) (Target, error) {
	p, connect, err := applyProbe(base, connect, ft.Probe)
	if err != nil {
		return Target{}, err
	}
	if ft.Objective != nil {
		objective = time.Duration(*ft.Objective)
	}
	password := globalPassword
	if ft.PasswordFile != "" {
		if password, err = ReadPassword(ft.PasswordFile, log); err != nil {
			return Target{}, err
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
	} else if _, ep, err = ParseAddr(addr); err != nil {
		return Target{}, fmt.Errorf("addr: %v", err)
	}
	switch {
	case ft.Username != "":
		ep.Username = ft.Username
	case ep.Username == "" && s.User != "":
		ep.Username = s.User // --redis.user is the default user
	}
	ep.Password = password
	var fingerprint string
	if ft.TLS != nil {
		if ep.TLS, err = ft.TLS.Config(); err != nil {
			return Target{}, fmt.Errorf("tls: %v", err)
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
			_, seed, err := ParseAddr(a)
			if err != nil {
				return Target{}, fmt.Errorf("cluster.addrs: %v", err)
			}
			seed.Username, seed.Password, seed.TLS = ep.Username, ep.Password, ep.TLS
			t.Cluster.Seeds = append(t.Cluster.Seeds, seed)
		}
	}
	if sc := ft.Sentinel; sc != nil {
		so := &SentinelOptions{MasterName: sc.MasterName, ProbeReplicas: sc.ProbeReplicas}
		if sc.RefreshInterval != nil {
			so.Refresh = time.Duration(*sc.RefreshInterval)
		}
		spw := ""
		if sc.PasswordFile != "" {
			if spw, err = ReadPassword(sc.PasswordFile, log); err != nil {
				return Target{}, err
			}
		}
		for _, a := range sc.Addrs {
			_, sep, err := ParseAddr(a)
			if err != nil {
				return Target{}, fmt.Errorf("sentinel.addrs: %v", err)
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
func applyProbe(base prober.ProbeConfig, connect time.Duration, c config.Probe) (prober.ProbeConfig, time.Duration, error) {
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
			return p, 0, fmt.Errorf("key_prefix: %v", err)
		}
		p.Namespace.Prefix = *c.KeyPrefix
	}
	if len(c.Commands) > 0 {
		cmds, err := prober.ParseCommands(strings.Join(c.Commands, ","))
		if err != nil {
			return p, 0, fmt.Errorf("commands: %v", err)
		}
		p.Commands = cmds
	}
	return p, connect, nil
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

// ReadPassword reads the first line of a password file (a small regular
// file, see config.ReadSecret), warning when other users may read it.
func ReadPassword(file string, log *slog.Logger) (string, error) {
	pw, err := config.ReadSecret(file)
	if err != nil {
		return "", err
	}
	if st, err := os.Stat(file); err == nil && st.Mode().Perm()&0o007 != 0 && log != nil {
		log.Warn("password file is readable by other users; chmod 600 it", "file", file)
	}
	return pw, nil
}

// DiscoveryFrom lays the config's discovery blocks (global:, then the
// target's) over --discovery.max-nodes.
func DiscoveryFrom(maxNodes int, layers ...config.Discovery) (DiscoveryOptions, error) {
	if maxNodes < 1 || maxNodes > config.MaxDiscoveryNodes {
		return DiscoveryOptions{}, usage.Errorf("--discovery.max-nodes: %d must be from 1 to %d", maxNodes, config.MaxDiscoveryNodes)
	}
	d := config.Discovery{MaxNodes: &maxNodes}
	for _, l := range layers {
		d = l.Over(d)
	}
	nets, err := d.Networks()
	if err != nil {
		return DiscoveryOptions{}, usage.Errorf("--config.file: discovery.allowed_networks: %v", err)
	}
	return DiscoveryOptions{MaxNodes: *d.MaxNodes, AllowedNetworks: nets, AllowedHostnames: d.AllowedHostnames}, nil
}
