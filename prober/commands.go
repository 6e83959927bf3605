package prober

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Namespace builds the prober's key names. Every key the prober writes is
// Prefix + "{" + Tag + "}:" + kind: the prefix keeps us out of user data, the
// hash tag keeps one target's keys in one Cluster slot (and lets the engine
// choose a tag whose slot a given node owns).
type Namespace struct {
	Prefix string
	Tag    string
}

// Key returns the name of one probe key.
func (n Namespace) Key(kind string) string {
	return n.Prefix + "{" + n.Tag + "}:" + kind
}

// Pattern matches every key of this namespace and tag, for SCAN clean-ups.
func (n Namespace) Pattern() string {
	return escapeGlob(n.Prefix+"{"+n.Tag+"}:") + "*"
}

// PatternFor matches every key of this namespace whose name starts with
// n.Key(sub), for SCAN clean-ups of one part of it (a burst's keys).
func (n Namespace) PatternFor(sub string) string {
	return escapeGlob(n.Key(sub)) + "*"
}

// escapeGlob works byte by byte: the glob characters are ASCII, and ranging
// over runes would turn a byte that is not UTF-8 into U+FFFD, so the pattern
// would miss the very keys it must clean up.
func escapeGlob(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ValidatePrefix refuses prefixes that could reach user keys: a prefix must be
// non-empty, end in a separator and hold no glob or hash-tag characters.
func ValidatePrefix(p string) error {
	if p == "" {
		return fmt.Errorf("must not be empty")
	}
	if !strings.ContainsAny(p[len(p)-1:], ":/._-|") {
		return fmt.Errorf("%q must end in a separator such as ':'", p)
	}
	if strings.ContainsAny(p, "*?[]{}\\ \t\r\n") {
		return fmt.Errorf("%q must not contain glob characters, braces or white space", p)
	}
	return nil
}

// Command is one probe command template. A probe encodes its arguments
// once, so sending it allocates nothing.
type Command struct {
	Name  string
	Write bool
	args  func(k keySet, value string, ttl time.Duration) []any
}

// keysUsed is the set of probe keys the commands name in their arguments:
// the keeper seeds those alone.
func keysUsed(k keySet, cmds []Command) map[string]bool {
	used := map[string]bool{}
	for _, c := range cmds {
		for _, a := range c.args(k, "", 0) {
			if s, ok := a.(string); ok && slices.Contains(k.all(), s) {
				used[s] = true
			}
		}
	}
	return used
}

// keySet names the probe's own keys for one namespace.
type keySet struct {
	str, str2, counter, hash, list, zset string
}

func newKeySet(ns Namespace) keySet {
	return keySet{
		str:     ns.Key("string"),
		str2:    ns.Key("string2"),
		counter: ns.Key("counter"),
		hash:    ns.Key("hash"),
		list:    ns.Key("list"),
		zset:    ns.Key("zset"),
	}
}

func (k keySet) all() []string {
	return []string{k.str, k.str2, k.counter, k.hash, k.list, k.zset}
}

// EvalScript is a tiny read-only script: it exercises the scripting path
// (EVAL, script cache lookup, one redis.call) without doing real work.
const EvalScript = "return redis.call('GET', KEYS[1])"

// seedFields is how many elements the hash, list and sorted set hold, so
// HGETALL, LRANGE and ZREVRANGE return a small but real reply.
const seedFields = 8

var commandTable = []Command{
	{Name: "ping", args: func(keySet, string, time.Duration) []any { return []any{"ping"} }},
	{Name: "get", args: func(k keySet, _ string, _ time.Duration) []any { return []any{"get", k.str} }},
	{Name: "set", Write: true, args: func(k keySet, v string, ttl time.Duration) []any {
		return []any{"set", k.str, v, "px", ttl.Milliseconds()}
	}},
	{Name: "incr", Write: true, args: func(k keySet, _ string, _ time.Duration) []any { return []any{"incr", k.counter} }},
	{Name: "hset", Write: true, args: func(k keySet, v string, _ time.Duration) []any { return []any{"hset", k.hash, "f0", v} }},
	{Name: "hgetall", args: func(k keySet, _ string, _ time.Duration) []any { return []any{"hgetall", k.hash} }},
	{Name: "lpush", Write: true, args: func(k keySet, v string, _ time.Duration) []any { return []any{"lpush", k.list, v} }},
	{Name: "lrange", args: func(k keySet, _ string, _ time.Duration) []any {
		return []any{"lrange", k.list, 0, seedFields - 1}
	}},
	{Name: "zadd", Write: true, args: func(k keySet, _ string, _ time.Duration) []any { return []any{"zadd", k.zset, 1, "m0"} }},
	{Name: "zrevrange", args: func(k keySet, _ string, _ time.Duration) []any {
		return []any{"zrevrange", k.zset, 0, seedFields - 1, "withscores"}
	}},
	{Name: "eval", args: func(k keySet, _ string, _ time.Duration) []any { return []any{"eval", EvalScript, 1, k.str} }},
	{Name: "mget", args: func(k keySet, _ string, _ time.Duration) []any { return []any{"mget", k.str, k.str2} }},
}

// CommandNames lists the commands --probe.commands accepts.
func CommandNames() []string {
	names := make([]string, len(commandTable))
	for i, c := range commandTable {
		names[i] = c.Name
	}
	return names
}

// ParseCommands turns "ping,get,set" into command templates. Names are case
// insensitive; an unknown or repeated name is an error.
func ParseCommands(list string) ([]Command, error) {
	var out []Command
	for _, raw := range strings.Split(list, ",") {
		name := strings.ToLower(strings.TrimSpace(raw))
		if name == "" {
			continue
		}
		i := slices.IndexFunc(commandTable, func(c Command) bool { return c.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("unknown command %q (known: %s)", raw, strings.Join(CommandNames(), ", "))
		}
		if slices.ContainsFunc(out, func(c Command) bool { return c.Name == name }) {
			return nil, fmt.Errorf("command %q listed twice", name)
		}
		out = append(out, commandTable[i])
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no command given")
	}
	return out, nil
}

// seedCommands returns the commands that (re)create the probe keys in use
// with their TTL and bounded size: a key no probed command touches is not
// written (at the default ping,get,set, one SET where there were ten
// commands). A write probe on a missing key would create it without a TTL,
// and LPUSH grows its list, hence the seeding. They run on the control
// connection, never on a probe connection.
func seedCommands(k keySet, used map[string]bool, value string, ttl time.Duration) [][]any {
	px := ttl.Milliseconds()
	var cmds [][]any
	for _, str := range []struct {
		key   string
		value any
	}{{k.str, value}, {k.str2, value}, {k.counter, 0}} {
		if used[str.key] {
			cmds = append(cmds, []any{"set", str.key, str.value, "px", px})
		}
	}
	// A collection is replaced whole, so LPUSH's list stays bounded.
	hset := []any{"hset", k.hash}
	rpush := []any{"rpush", k.list}
	zadd := []any{"zadd", k.zset}
	for i := range seedFields {
		hset = append(hset, "f"+strconv.Itoa(i), value)
		rpush = append(rpush, value)
		zadd = append(zadd, i, "m"+strconv.Itoa(i))
	}
	for _, fill := range [][]any{hset, rpush, zadd} {
		if key := fill[1].(string); used[key] {
			cmds = append(cmds, []any{"del", key}, fill, []any{"pexpire", key, px})
		}
	}
	return cmds
}

// ProbeValue returns the value written by SET, HSET and LPUSH: size bytes of a
// fixed printable pattern.
func ProbeValue(size int) string {
	const pattern = "redis-prober-0123456789abcdefghijklmnopqrstuvwxyz"
	var b strings.Builder
	b.Grow(size)
	for b.Len() < size {
		b.WriteString(pattern[:min(len(pattern), size-b.Len())])
	}
	return b.String()
}
