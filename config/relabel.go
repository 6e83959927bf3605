package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/relabel"
)

// Labels a target has while relabel_configs run, as in Prometheus: every
// label whose name starts with __ is dropped afterwards.
const (
	// AddressLabel is the address (a discovered one, or a static target's
	// addr, first cluster seed or first Sentinel).
	AddressLabel = model.AddressLabel
	// NameLabel is the target's name; a discovered target gets its address
	// (without redis://) unless relabelling sets it.
	NameLabel = "target"
	// SentinelMasterLabel, set on a discovered address, makes it a
	// Sentinel and the value the master name to follow.
	SentinelMasterLabel = "__redis_sentinel_master__"
	// FilePathLabel and URLLabel name where a discovered target came from.
	FilePathLabel = "__meta_filepath"
	URLLabel      = "__meta_url"
	// shardLabel carries the hashmod of sharding.
	shardLabel = "__tmp_redis_prober_shard"
)

// DefaultShardLabels are what sharding hashes when source_labels is unset.
var DefaultShardLabels = []string{AddressLabel}

// SetShardIndex sets this prober's share (from --config.shard-index): it
// needs sharding in the file, and an index below sharding.shards.
func (f *File) SetShardIndex(i int) error {
	if f.Sharding == nil {
		return fmt.Errorf("a shard index needs sharding: in the config file")
	}
	if i < 0 || i >= f.Sharding.Shards {
		return fmt.Errorf("shard index %d is not from 0 to %d (sharding.shards - 1)", i, f.Sharding.Shards-1)
	}
	f.Sharding.Index = &i
	return nil
}

// rules are relabel_configs, then the two rules sharding stands for:
//
//   - {source_labels: [__address__], modulus: N, target_label: __tmp_redis_prober_shard, action: hashmod}
//   - {source_labels: [__tmp_redis_prober_shard], regex: INDEX, action: keep}
func (f *File) rules() ([]*relabel.Config, error) {
	rules := slices.Clone(f.Relabel)
	if s := f.Sharding; s != nil {
		if s.Index == nil {
			return nil, fmt.Errorf("sharding: needs index, or --config.shard-index")
		}
		src := s.SourceLabels
		if len(src) == 0 {
			src = DefaultShardLabels
		}
		var names model.LabelNames
		for _, l := range src {
			names = append(names, model.LabelName(l))
		}
		hash := relabel.DefaultRelabelConfig
		hash.SourceLabels, hash.Modulus, hash.TargetLabel, hash.Action = names, uint64(s.Shards), shardLabel, relabel.HashMod
		keep := relabel.DefaultRelabelConfig
		keep.SourceLabels, keep.Regex, keep.Action = model.LabelNames{shardLabel}, relabel.MustNewRegexp(strconv.Itoa(*s.Index)), relabel.Keep
		for _, r := range []*relabel.Config{&hash, &keep} {
			if err := r.Validate(model.LegacyValidation); err != nil {
				return nil, fmt.Errorf("sharding: %v", err)
			}
		}
		rules = append(rules, &hash, &keep)
	}
	return rules, nil
}

// relabelOne runs the rules over one target's labels; it returns the
// labels that remain (those starting with __ dropped, target kept) and
// false when a rule dropped the target.
func relabelOne(rules []*relabel.Config, in map[string]string) (map[string]string, bool) {
	lb := labels.NewBuilder(labels.FromMap(in))
	if !relabel.ProcessBuilder(lb, rules...) {
		return nil, false
	}
	out := map[string]string{}
	lb.Labels().Range(func(l labels.Label) {
		if l.Value != "" {
			out[l.Name] = l.Value
		}
	})
	return out, true
}

// checkLabels applies to relabelled labels the bounds of a static target's
// labels.
func checkLabels(ls map[string]string) error {
	n := 0
	for k := range ls {
		if strings.HasPrefix(k, "__") || k == NameLabel {
			continue
		}
		n++
		if !labelName.MatchString(k) {
			return fmt.Errorf("%q is not a valid label name", k)
		}
		if slices.Contains(reservedLabels, k) {
			return fmt.Errorf("label %q is one the prober sets itself", k)
		}
	}
	if n > MaxLabels {
		return fmt.Errorf("%d labels, at most %d", n, MaxLabels)
	}
	return nil
}

func userLabels(ls map[string]string) map[string]string {
	var out map[string]string
	for k, v := range ls {
		if strings.HasPrefix(k, "__") || k == NameLabel {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out
}

// StaticTargets is targets: after relabel_configs and sharding: a target
// may be dropped, renamed (target), relabelled, or given another first
// address (__address__).
func (f *File) StaticTargets() ([]Target, error) {
	rules, err := f.rules()
	if err != nil {
		return nil, err
	}
	var out []Target
	names := map[string]bool{}
	for i, t := range f.Targets {
		in := map[string]string{NameLabel: t.Name, AddressLabel: firstAddr(t)}
		for k, v := range t.Labels {
			in[k] = v
		}
		ls, keep := relabelOne(rules, in)
		if !keep {
			continue
		}
		if err := checkLabels(ls); err != nil {
			return nil, fmt.Errorf("targets[%d] (%s) after relabel_configs: %v", i, t.Name, err)
		}
		t.Name, t.Labels = ls[NameLabel], userLabels(ls)
		if t.Name == "" {
			return nil, fmt.Errorf("targets[%d] after relabel_configs: no target name left", i)
		}
		if names[t.Name] {
			return nil, fmt.Errorf("targets[%d] after relabel_configs: name %q used twice", i, t.Name)
		}
		names[t.Name] = true
		if addr := ls[AddressLabel]; addr != firstAddr(t) {
			if addr == "" {
				return nil, fmt.Errorf("targets[%d] (%s) after relabel_configs: no __address__ left", i, t.Name)
			}
			t = withFirstAddr(t, addr)
		}
		out = append(out, t)
	}
	return out, nil
}

// DiscoveredTargets turns the groups of one source into targets with the
// source's template, after relabel_configs and sharding. An error names the
// group's source (the file or URL).
func (f *File) DiscoveredTargets(tpl TargetTemplate, groups []Group) ([]Target, error) {
	rules, err := f.rules()
	if err != nil {
		return nil, err
	}
	var out []Target
	addrOf := map[string]string{}
	for _, g := range groups {
		for _, addr := range g.Targets {
			in := map[string]string{}
			for k, v := range g.Labels {
				in[k] = v
			}
			in[AddressLabel] = addr
			if strings.Contains(g.Source, "://") {
				in[URLLabel] = g.Source
			} else if g.Source != "" {
				in[FilePathLabel] = g.Source
			}
			ls, keep := relabelOne(rules, in)
			if !keep {
				continue
			}
			where := RedactURL(g.Source)
			if !strings.Contains(g.Source, "://") {
				where = g.Source
			}
			if err := checkLabels(ls); err != nil {
				return nil, fmt.Errorf("%s: target %q: %v", where, addr, err)
			}
			a := ls[AddressLabel]
			if a == "" {
				return nil, fmt.Errorf("%s: target %q: no __address__ left after relabel_configs", where, addr)
			}
			name := ls[NameLabel]
			if name == "" {
				name = strings.TrimPrefix(strings.TrimPrefix(a, "redis://"), "rediss://")
			}
			if prev, ok := addrOf[name]; ok {
				if prev == a {
					continue // the same address twice: one target, as in Prometheus
				}
				return nil, fmt.Errorf("%s: target name %q stands for two addresses, %q and %q", where, name, prev, a)
			}
			addrOf[name] = a
			t := Target{
				Name: name, Username: tpl.Username, PasswordFile: tpl.PasswordFile, TLS: tpl.TLS,
				Labels: userLabels(ls), Probe: tpl.Probe, Objective: tpl.Objective, Discovery: tpl.Discovery,
			}
			if m := ls[SentinelMasterLabel]; m != "" {
				t.Sentinel = &Sentinel{MasterName: m, Addrs: []string{a}}
			} else {
				t.Addr = a
			}
			out = append(out, t)
		}
	}
	return out, nil
}

func firstAddr(t Target) string {
	switch {
	case t.Cluster != nil && len(t.Cluster.Addrs) > 0:
		return t.Cluster.Addrs[0]
	case t.Sentinel != nil && len(t.Sentinel.Addrs) > 0:
		return t.Sentinel.Addrs[0]
	}
	return t.Addr
}

func withFirstAddr(t Target, addr string) Target {
	switch {
	case t.Cluster != nil:
		c := *t.Cluster
		c.Addrs = append([]string{addr}, c.Addrs[1:]...)
		t.Cluster = &c
	case t.Sentinel != nil:
		s := *t.Sentinel
		s.Addrs = append([]string{addr}, s.Addrs[1:]...)
		t.Sentinel = &s
	default:
		t.Addr = addr
	}
	return t
}
