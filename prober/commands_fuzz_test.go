package prober

import (
	"slices"
	"strings"
	"testing"
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
		if !globMatch(ns.PatternFor("burst:"), ns.Key("burst:"+kind)) {
			t.Fatalf("burst pattern %q does not match %q", ns.PatternFor("burst:"), ns.Key("burst:"+kind))
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
