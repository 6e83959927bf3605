package config

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"
)

// validate checks what the YAML types cannot (ranges, exclusive fields,
// names used twice) and names the field and line of the first problem, so
// a bad config exits with one clear line.
func (f *File) validate(root *yaml.Node) error {
	fail := failAt(root)
	if err := f.validatePlans(fail); err != nil {
		return err
	}
	if len(f.Targets) == 0 && len(f.FileSD) == 0 && len(f.HTTPSD) == 0 {
		return fail("at least one target (or file_sd_configs, http_sd_configs) is needed", "targets")
	}
	for i := range f.FileSD {
		if err := f.FileSD[i].validate(func(msg string, p ...any) error {
			return fail(msg, append([]any{"file_sd_configs", i}, p...)...)
		}); err != nil {
			return err
		}
	}
	for i := range f.HTTPSD {
		if err := f.HTTPSD[i].validate(func(msg string, p ...any) error {
			return fail(msg, append([]any{"http_sd_configs", i}, p...)...)
		}); err != nil {
			return err
		}
	}
	for i, r := range f.Relabel {
		if r == nil {
			return fail("is empty", "relabel_configs", i)
		}
		if err := r.Validate(model.LegacyValidation); err != nil {
			return fail(err.Error(), "relabel_configs", i)
		}
	}
	if f.Sharding != nil {
		if err := f.Sharding.validate(func(msg string, p ...any) error {
			return fail(msg, append([]any{"sharding"}, p...)...)
		}); err != nil {
			return err
		}
	}
	if len(f.Targets) > MaxTargets {
		return fail(fmt.Sprintf("%d targets, more than the %d one prober should carry (see docs/scaling.md)", len(f.Targets), MaxTargets), "targets")
	}
	if err := f.Global.Probe.validate(func(msg string, p ...any) error {
		return fail(msg, append([]any{"global", "probe"}, p...)...)
	}); err != nil {
		return err
	}
	if f.Global.Objective != nil && *f.Global.Objective <= 0 {
		return fail("must be above 0", "global", "objective")
	}
	if err := f.Global.Discovery.validate(func(msg string, p ...any) error {
		return fail(msg, append([]any{"global", "discovery"}, p...)...)
	}); err != nil {
		return err
	}
	names := map[string]bool{}
	labelKeys := map[string]bool{}
	for i := range f.Targets {
		t := &f.Targets[i]
		at := func(msg string, p ...any) error { return fail(msg, append([]any{"targets", i}, p...)...) }
		if t.Name == "" {
			return at("needs a name", "name")
		}
		if names[t.Name] {
			return at(fmt.Sprintf("name %q used twice", t.Name), "name")
		}
		names[t.Name] = true
		kinds := 0
		for _, set := range []bool{t.Addr != "", t.Cluster != nil, t.Sentinel != nil} {
			if set {
				kinds++
			}
		}
		if kinds != 1 {
			return at("needs exactly one of addr, cluster or sentinel", "name")
		}
		if t.Cluster != nil && len(t.Cluster.Addrs) == 0 {
			return at("needs at least one seed address", "cluster", "addrs")
		}
		if t.Sentinel != nil {
			if t.Sentinel.MasterName == "" {
				return at("is required", "sentinel", "master_name")
			}
			if len(t.Sentinel.Addrs) == 0 {
				return at("needs at least one sentinel address", "sentinel", "addrs")
			}
		}
		if len(t.Labels) > MaxLabels {
			return at(fmt.Sprintf("%d labels, at most %d", len(t.Labels), MaxLabels), "labels")
		}
		for k := range t.Labels {
			if !labelName.MatchString(k) || strings.HasPrefix(k, "__") {
				return at(fmt.Sprintf("%q is not a valid label name", k), "labels", k)
			}
			if slices.Contains(reservedLabels, k) {
				return at(fmt.Sprintf("%q is a label the prober sets itself", k), "labels", k)
			}
			labelKeys[k] = true
		}
		if err := t.Probe.validate(func(msg string, p ...any) error { return at(msg, append([]any{"probe"}, p...)...) }); err != nil {
			return err
		}
		if t.Objective != nil && *t.Objective <= 0 {
			return at("must be above 0", "objective")
		}
		if err := t.Discovery.validate(func(msg string, p ...any) error { return at(msg, append([]any{"discovery"}, p...)...) }); err != nil {
			return err
		}
		for _, file := range []struct {
			path  string
			field []any
		}{
			{t.PasswordFile, []any{"password_file"}},
			{sentinelPasswordFile(t.Sentinel), []any{"sentinel", "password_file"}},
		} {
			if file.path == "" {
				continue
			}
			if _, err := ReadSecret(file.path); err != nil {
				return at(fmt.Sprintf("cannot read: %v", err), file.field...)
			}
		}
		if t.TLS != nil {
			if _, err := t.TLS.Config(); err != nil {
				return at(err.Error(), "tls")
			}
		}
	}
	for k := range labelKeys {
		f.Global.Labels = append(f.Global.Labels, k)
	}
	slices.Sort(f.Global.Labels)
	return nil
}

func sentinelPasswordFile(s *Sentinel) string {
	if s == nil {
		return ""
	}
	return s.PasswordFile
}

func (p *Probe) validate(fail func(msg string, path ...any) error) error {
	switch {
	case p.Rate != nil && !(*p.Rate > 0 && *p.Rate <= 10000): // also refuses NaN
		return fail("must be above 0 and at most 10000", "rate")
	case p.Timeout != nil && *p.Timeout <= 0:
		return fail("must be above 0", "timeout")
	case p.Connections != nil && (*p.Connections < 1 || *p.Connections > 64):
		return fail("must be from 1 to 64", "connections")
	case p.DataSize != nil && (*p.DataSize < 1 || *p.DataSize > 1<<20):
		return fail("must be from 1 to 1048576", "data_size")
	case p.KeyTTL != nil && time.Duration(*p.KeyTTL) < time.Second:
		return fail("must be at least 1s", "key_ttl")
	}
	return nil
}
