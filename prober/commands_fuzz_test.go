package prober

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// Command templates: whatever the list, ParseCommands either refuses it or
// returns known, distinct commands whose names parse back to the same list.
func FuzzParseCommands(f *testing.F) {
	for _, s := range []string{"ping,get,set", "PING, Get ,sEt", "ping,ping", "", ",,,", "flushall", "eval,mget,zrevrange", "ping,\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, list string) {
		cmds, err := ParseCommands(list)
		if err != nil {
			if cmds != nil {
				t.Fatalf("commands %v beside error %v", cmds, err)
			}
			return
		}
		if len(cmds) == 0 {
			t.Fatal("no command and no error")
		}
		known := CommandNames()
		var names []string
		for _, c := range cmds {
			if !slices.Contains(known, c.Name) {
				t.Fatalf("unknown command %q accepted", c.Name)
			}
			if slices.Contains(names, c.Name) {
				t.Fatalf("command %q twice", c.Name)
			}
			names = append(names, c.Name)
			// Every template names only keys of its namespace.
			ks := newKeySet(Namespace{Prefix: "p:", Tag: "t"})
			for _, a := range c.args(ks, "v", 1000) {
				if s, ok := a.(string); ok && strings.Contains(s, "{t}") && !strings.HasPrefix(s, "p:{t}:") {
					t.Fatalf("%s: key %q outside the namespace", c.Name, s)
				}
			}
		}
		again, err := ParseCommands(strings.Join(names, ","))
		if err != nil || len(again) != len(cmds) {
			t.Fatalf("names %v do not parse back: %v", names, err)
		}
	})
}

// Probe key naming: an accepted prefix yields keys that start with it, and
// the SCAN pattern of a namespace matches its keys and only keys of that
// prefix and tag, whatever characters the tag holds.
func FuzzNamespace(f *testing.F) {
	for _, s := range [][2]string{
		{"redis-prober:", "host-1234-0a1b2c3d"},
		{"app/", "*"},
		{"x.", "a]b[c?d\\"},
		{"", "t"},
		{"nosep", "t"},
		{"a*:", "t"},
		{"redis-prober:", "{}"},
	} {
		f.Add(s[0], s[1], "string")
	}
	f.Fuzz(func(t *testing.T, prefix, tag, kind string) {
		if err := ValidatePrefix(prefix); err != nil {
			if prefix != "" && strings.ContainsAny(prefix[len(prefix)-1:], ":/._-|") && !strings.ContainsAny(prefix, "*?[]{}\\ \t\r\n") {
				t.Fatalf("prefix %q refused: %v", prefix, err)
			}
			return
		}
		if strings.ContainsAny(prefix, "*?[]{}\\") {
			t.Fatalf("prefix %q with glob or brace characters accepted", prefix)
		}
		ns := Namespace{Prefix: prefix, Tag: tag}
		key := ns.Key(kind)
		if !strings.HasPrefix(key, prefix) {
			t.Fatalf("key %q does not start with %q", key, prefix)
		}
		pattern := ns.Pattern()
		if !globMatch(pattern, key) {
			t.Fatalf("pattern %q does not match its key %q", pattern, key)
		}
		if !globMatch(BurstPattern(ns), ns.Key("burst:"+kind)) {
			t.Fatalf("burst pattern %q does not match %q", BurstPattern(ns), ns.Key("burst:"+kind))
		}
		// Whatever it matches belongs to this prefix and tag.
		own := prefix + "{" + tag + "}:"
		other := Namespace{Prefix: prefix, Tag: tag + "x"}
		for _, s := range []string{other.Key(kind), "user:" + kind, kind, prefix + kind, prefix + "{" + tag + "}"} {
			if globMatch(pattern, s) && !strings.HasPrefix(s, own) {
				t.Fatalf("pattern %q matches %q, outside %q", pattern, s, own)
			}
		}
	})
}

// globMatch is Redis's stringmatchlen for the subset a namespace pattern may
// use: literal characters, backslash escapes, '?' and '*'. An unescaped '['
// would be a character class, which a namespace pattern must never hold.
func globMatch(pattern, s string) bool {
	p := []byte(pattern)
	b := []byte(s)
	var match func(pi, si int) bool
	match = func(pi, si int) bool {
		for pi < len(p) {
			switch p[pi] {
			case '*':
				for k := si; k <= len(b); k++ {
					if match(pi+1, k) {
						return true
					}
				}
				return false
			case '?':
				if si >= len(b) {
					return false
				}
			case '[':
				return false // a class: not produced by escapeGlob
			case '\\':
				if pi+1 < len(p) {
					pi++
				}
				fallthrough
			default:
				if si >= len(b) || p[pi] != b[si] {
					return false
				}
			}
			pi++
			si++
		}
		return si == len(b)
	}
	return match(0, 0)
}

// Burst key generators: a valid KeySpec only ever yields indices inside
// [Min, Max], for every pattern and any float the flags let through.
func FuzzKeySpec(f *testing.F) {
	f.Add(int64(0), int64(9999), 0.0, 0.0, 1.0, uint64(1))
	f.Add(int64(5), int64(5), 0.0, 0.0, 0.5, uint64(2))
	f.Add(int64(0), int64(1<<40-1), 1e300, 0.0, 5.0, uint64(3))
	f.Add(int64(0), int64(100), math.NaN(), math.NaN(), math.NaN(), uint64(4))
	f.Add(int64(0), int64(100), math.Inf(1), 50.0, 1e-300, uint64(5))
	f.Fuzz(func(t *testing.T, lo, hi int64, stddev, median, zipf float64, seed uint64) {
		for _, pattern := range []byte("RGZS") {
			k := KeySpec{SetPattern: pattern, GetPattern: pattern, Min: lo, Max: hi, Stddev: stddev, Median: median, ZipfExp: zipf}
			if k.Validate() != nil {
				continue
			}
			g := k.Gen(pattern)
			r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
			for range 64 {
				if v := g.Next(r); v < lo || v > hi {
					t.Fatalf("%+v pattern %c: key %d outside %d..%d", k, pattern, v, lo, hi)
				}
			}
		}
	})
}

// Burst command lists and ratios: refused, or known commands with positive
// weights, each once.
func FuzzParseMix(f *testing.F) {
	for _, s := range []string{"get:10,set:1,hgetall", "1:10", "0:0", "get:0", "set:-1", "GET:2,get:1", ":", "get:99999999999999999999", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		check := func(what string, mix []MixEntry, err error) {
			if err != nil {
				return
			}
			if len(mix) == 0 {
				t.Fatalf("%s(%q): empty mix and no error", what, s)
			}
			seen := map[string]bool{}
			for _, m := range mix {
				if m.Weight < 1 || burstOpIndex(m.Op) < 0 || seen[m.Op] {
					t.Fatalf("%s(%q): bad entry %+v in %v", what, s, m, mix)
				}
				seen[m.Op] = true
			}
		}
		mix, err := ParseMix(s)
		check("ParseMix", mix, err)
		if err == nil {
			// A mix the plan accepts must give a usable request cycle.
			plan := BurstPlan{Name: "f", Clients: 1, Pipeline: 1, Mix: mix, Keys: KeySpec{SetPattern: 'R', GetPattern: 'R', Max: 9},
				DataSize: 8, TestTime: time.Second, MaxBytes: 1 << 20, Timeout: time.Second, KeyTTL: time.Minute,
				Namespace: Namespace{Prefix: "redis-prober:", Tag: "f"}}
			if plan.Validate(CLILimits) == nil {
				total := 0
				for _, m := range mix {
					total += m.Weight
				}
				if seq := mixSequence(mix); len(seq) == 0 || len(seq) != total {
					t.Fatalf("ParseMix(%q) validated, but its cycle has %d requests for weights adding up to %d", s, len(seq), total)
				}
			}
		}
		mix, err = ParseRatio(s)
		check("ParseRatio", mix, err)
		if set, get, err := ParseKeyPattern(s); err == nil && (!strings.ContainsRune("RGZS", rune(set)) || !strings.ContainsRune("RGZS", rune(get))) {
			t.Fatalf("ParseKeyPattern(%q) = %c, %c", s, set, get)
		}
	})
}
