package prober

import (
	"strings"
	"testing"
)

func TestParseCommands(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "ping,get,set", want: []string{"ping", "get", "set"}},
		{in: " PING , Get ", want: []string{"ping", "get"}},
		{in: "incr,hset,hgetall,lpush,lrange,zadd,zrevrange,eval,mget", want: []string{"incr", "hset", "hgetall", "lpush", "lrange", "zadd", "zrevrange", "eval", "mget"}},
		{in: "ping,flushall", wantErr: `unknown command "flushall"`},
		{in: "ping,ping", wantErr: "listed twice"},
		{in: " , ", wantErr: "no command"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			cmds, err := ParseCommands(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range cmds {
				got = append(got, c.Name)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestValidatePrefix(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"redis-prober:", true},
		{"team/probe/", true},
		{"", false},
		{"redis-prober", false},
		{"*:", false},
		{"a{b}:", false},
		{"a b:", false},
	} {
		if err := ValidatePrefix(tc.in); (err == nil) != tc.ok {
			t.Errorf("ValidatePrefix(%q) = %v, want ok=%v", tc.in, err, tc.ok)
		}
	}
}

// Every key a command template touches must sit in the namespace, under the
// one hash tag: the no-stray-key guarantee starts here.
func TestCommandKeysStayInNamespace(t *testing.T) {
	ns := Namespace{Prefix: "redis-prober:", Tag: "host-1"}
	keys := newKeySet(ns)
	inNS := func(s string) bool { return strings.HasPrefix(s, "redis-prober:{host-1}:") }
	isKey := map[string]bool{}
	for _, k := range keys.all() {
		if !inNS(k) {
			t.Fatalf("key %q outside the namespace", k)
		}
		isKey[k] = true
	}
	for _, c := range commandTable {
		for _, a := range c.args(keys, "v", 60e9) {
			if s, ok := a.(string); ok && strings.Contains(s, ":") && !isKey[s] && s != EvalScript {
				t.Errorf("%s: argument %q looks like a key outside the probe's key set", c.Name, s)
			}
		}
	}
	for _, args := range seedCommands(keys, isKey, "v", 60e9) {
		if len(args) > 1 {
			if s, ok := args[1].(string); !ok || !isKey[s] {
				t.Errorf("seed %v writes %v, not a probe key", args[0], args[1])
			}
		}
	}
	if got, want := ns.Pattern(), `redis-prober:{host-1}:*`; got != want {
		t.Errorf("Pattern() = %q, want %q", got, want)
	}
}

func TestProbeValue(t *testing.T) {
	for _, n := range []int{1, 32, 100, 4096} {
		if got := len(ProbeValue(n)); got != n {
			t.Errorf("len(ProbeValue(%d)) = %d", n, got)
		}
	}
}
