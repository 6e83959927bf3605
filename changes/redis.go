package changes

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/collector"
	"github.com/redis-prober/redis-prober/internal/redisinfo"
)

// Change kinds, the kind label of redis_prober_changes_total (the host's:
// of redis_prober_host_changes_total). failover is counted by the Sentinel
// discoverer.
const (
	KindRestart   = "restart"
	KindVersion   = "version"
	KindConfig    = "config"
	KindRole      = "role"
	KindMaxmemory = "maxmemory"
	KindKernel    = "kernel"
	KindTHP       = "thp"
	KindSysctl    = "sysctl"
)

// watchedKinds are the kinds the change watcher counts per target
// (failover is the Sentinel discoverer's); hostKinds once for the process.
var (
	watchedKinds = []string{KindRestart, KindVersion, KindConfig, KindRole, KindMaxmemory}
	hostKinds    = []string{KindKernel, KindTHP, KindSysctl}
)

// serverState is what the change watcher remembers of one Redis server.
type serverState struct {
	runID, version, role string
	maxmemory, policy    string
	// config is CONFIG GET * without the parameters other kinds watch;
	// nil when CONFIG is not allowed. Secret values are kept as a hash.
	config     *configSet
	configHash uint64
}

// notConfig are CONFIG parameters another kind covers (maxmemory, role),
// so one change is counted once.
var notConfig = map[string]bool{
	"maxmemory":        true,
	"maxmemory-policy": true,
	"replicaof":        true, // REPLICAOF changes it; that is a role change
	"slaveof":          true,
}

// readServer reads INFO and, unless configOff, CONFIG GET *. A CONFIG
// refused by the server (ACL, renamed command) comes back as errConfigRefused
// beside a state that has everything else.
// last is the state of the previous read, whose config snapshot is kept
// when the server's config has not changed.
func readServer(ctx context.Context, c redis.Cmdable, configOff bool, last serverState) (serverState, error) {
	info, err := redisinfo.ReadKeys(ctx, c, serverField) // its errors name INFO
	if err != nil {
		return serverState{}, err
	}
	st := serverStateOf(info)
	if configOff {
		return st, nil
	}
	all, err := c.ConfigGet(ctx, "*").Result()
	if err != nil {
		var rerr redis.Error
		if errors.As(err, &rerr) {
			return st, fmt.Errorf("%w: %w", errConfigRefused, err)
		}
		return serverState{}, fmt.Errorf("CONFIG GET *: %w", err)
	}
	st.config, st.configHash = configSnapshotSince(all, last.config, last.configHash)
	return st, nil
}

var errConfigRefused = errors.New("CONFIG GET refused")

// serverStateOf is the state of info, without the config snapshot.
// version and role become labels of redis_prober_server_info and go to
// the change log: made valid UTF-8, printable and short. Cloned: a
// substring would keep the whole INFO text alive as long as the state is
// remembered.
func serverStateOf(info redisinfo.Info) serverState {
	st := serverState{runID: strings.Clone(info["run_id"]), version: strings.Clone(collector.LabelValue(info["redis_version"])),
		role: strings.Clone(collector.LabelValue(info["role"])), maxmemory: strings.Clone(info["maxmemory"]),
		policy: strings.Clone(info["maxmemory_policy"])}
	if v := info["valkey_version"]; v != "" {
		st.version = strings.Clone(collector.LabelValue(v))
	}
	return st
}

// serverField says whether serverStateOf reads an INFO field: the change
// watch parses these six, not the whole reply, every --changes.interval
// (TestServerFieldsAreAllTheStateReads holds the list to serverStateOf).
func serverField(k string) bool {
	switch k {
	case "run_id", "redis_version", "valkey_version", "role", "maxmemory", "maxmemory_policy":
		return true
	}
	return false
}

// configSet is a CONFIG GET * snapshot packed into one string: its
// name/value pairs in name order, each length-prefixed. A map of the few
// hundred parameters cost every node its entries' overhead, kept only to
// name what changed in a log line (docs/performance.md, "Measured
// reasons"); the packed form is smaller, and is unpacked only then.
type configSet struct{ packed string }

// pairs unpacks the snapshot.
func (c *configSet) pairs() map[string]string {
	out := map[string]string{}
	s := c.packed
	next := func() string {
		n, k := binary.Uvarint([]byte(s[:min(len(s), binary.MaxVarintLen64)]))
		if k <= 0 || uint64(len(s)-k) < n {
			s = ""
			return ""
		}
		v := s[k : k+int(n)]
		s = s[k+int(n):]
		return v
	}
	for s != "" {
		name := next()
		out[name] = next()
	}
	return out
}

// configSnapshot drops the parameters other kinds watch, replaces secret
// values by a hash and packs the rest, with a hash of it all.
func configSnapshot(all map[string]string) (*configSet, uint64) {
	return configSnapshotSince(all, nil, 0)
}

// configSnapshotSince is configSnapshot that returns last again when
// nothing changed since it (its hash is lastHash): the config of a server
// nearly never changes, and packing a fresh copy of it at every check was
// much of what the prober allocated at 1,000 targets (docs/performance.md,
// "Measured reasons").
func configSnapshotSince(all map[string]string, last *configSet, lastHash uint64) (*configSet, uint64) {
	names := make([]string, 0, len(all))
	for k := range all {
		if !notConfig[k] {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	values := make([]string, len(names))
	h, size := fnvOffset, 0
	var n [binary.MaxVarintLen64]byte
	for i, k := range names {
		v := all[k]
		if redisinfo.SecretParam(k) && v != "" {
			v = fmt.Sprintf("secret:%x", fnvString(fnvOffset, v))
		}
		values[i] = v
		for _, s := range [2]string{k, v} {
			l := binary.PutUvarint(n[:], uint64(len(s)))
			h = fnvString(fnvBytes(h, n[:l]), s)
			size += l + len(s)
		}
	}
	if last != nil && h == lastHash {
		return last, h
	}
	b := make([]byte, 0, size)
	for i, k := range names {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		b = binary.AppendUvarint(b, uint64(len(values[i])))
		b = append(b, values[i]...)
	}
	return &configSet{packed: string(b)}, h
}

// FNV-1a, 64 bits (hash/fnv's New64a), over strings without copying them.
const (
	fnvOffset uint64 = 14695981039346656037
	fnvPrime  uint64 = 1099511628211
)

func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	return h
}

func fnvBytes(h uint64, b []byte) uint64 {
	for _, c := range b {
		h = (h ^ uint64(c)) * fnvPrime
	}
	return h
}

// change is one detected change of a kind, with what a log line says of it.
type change struct {
	kind    string
	details []string // "name: old → new"
}

// diffServer lists the changes from old to cur, each kind at most once.
// A value unknown on either side ("") is no change.
func diffServer(old, cur serverState) []change {
	var out []change
	if old.runID != "" && cur.runID != "" && old.runID != cur.runID {
		out = append(out, change{kind: KindRestart})
	}
	if d := arrow("redis_version", old.version, cur.version); d != "" {
		out = append(out, change{kind: KindVersion, details: []string{d}})
	}
	if d := arrow("role", old.role, cur.role); d != "" {
		out = append(out, change{kind: KindRole, details: []string{d}})
	}
	var mem []string
	for _, d := range []string{arrow("maxmemory", old.maxmemory, cur.maxmemory), arrow("maxmemory-policy", old.policy, cur.policy)} {
		if d != "" {
			mem = append(mem, d)
		}
	}
	if len(mem) > 0 {
		out = append(out, change{kind: KindMaxmemory, details: mem})
	}
	if old.config != nil && cur.config != nil && old.configHash != cur.configHash {
		out = append(out, change{kind: KindConfig, details: configDiff(old.config, cur.config)})
	}
	return out
}

func arrow(name, old, cur string) string {
	if old == "" || cur == "" || old == cur {
		return ""
	}
	return fmt.Sprintf("%s: %s → %s", name, old, cur)
}

// configDiff names every parameter that changed, appeared or went, old →
// new, in name order; secrets only say that they changed.
func configDiff(oldSet, curSet *configSet) []string {
	old, cur := oldSet.pairs(), curSet.pairs()
	var names []string
	for k, v := range cur {
		if ov, ok := old[k]; !ok || ov != v {
			names = append(names, k)
		}
	}
	for k := range old {
		if _, ok := cur[k]; !ok {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	out := make([]string, 0, len(names))
	for _, k := range names {
		ov, had := old[k]
		nv, has := cur[k]
		switch {
		case redisinfo.SecretParam(k):
			out = append(out, k+": (secret changed)")
		case !had:
			out = append(out, fmt.Sprintf("%s: (none) → %q", k, nv))
		case !has:
			out = append(out, fmt.Sprintf("%s: %q → (gone)", k, ov))
		default:
			out = append(out, fmt.Sprintf("%s: %q → %q", k, ov, nv))
		}
	}
	return out
}
