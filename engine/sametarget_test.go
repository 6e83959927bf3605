package engine

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/redistest"
	"github.com/redis-prober/redis-prober/prober"
)

// notRestarting are the fields of Target (by path) whose change must NOT
// restart a target on reload, each with its reason. Every other field
// must: TestSameTargetSeesEveryField changes each one in turn.
var notRestarting = map[string]string{
	"Probe.Offset":  "set by Apply from the target's place in the list: a target added before it must not restart it",
	"Probe.OnError": "set per node by runNode, never by a config",
	"Probe.Poller":  "set per node by runNode, never by a config",
	// Unexported fields cannot be changed from here; they are listed so
	// that a new one is looked at.
	"Probe.Commands[0].args": "a command's template function, named by Name",
}

// opaque are types compared as a whole, with the changes that must count:
// their insides are not config (a TLS config's functions and pools, an
// address's representation).
var opaque = map[reflect.Type]map[string]func(v reflect.Value){
	reflect.TypeFor[*tls.Config](): {
		"nil": func(v reflect.Value) { v.Set(reflect.Zero(v.Type())) },
		"ServerName": func(v reflect.Value) {
			c := v.Interface().(*tls.Config).Clone()
			c.ServerName += "x"
			v.Set(reflect.ValueOf(c))
		},
		"InsecureSkipVerify": func(v reflect.Value) {
			c := v.Interface().(*tls.Config).Clone()
			c.InsecureSkipVerify = !c.InsecureSkipVerify
			v.Set(reflect.ValueOf(c))
		},
		"MinVersion": func(v reflect.Value) {
			c := v.Interface().(*tls.Config).Clone()
			c.MinVersion++
			v.Set(reflect.ValueOf(c))
		},
	},
	reflect.TypeFor[netip.Prefix](): {
		"other": func(v reflect.Value) { v.Set(reflect.ValueOf(netip.MustParsePrefix("192.0.2.0/24"))) },
	},
}

// fullTarget has every slice, map and pointer of Target filled, so that
// every field can be changed; two calls share no pointer (as two loads of
// one config).
func fullTarget(t *testing.T) Target {
	t.Helper()
	cmds, err := prober.ParseCommands("get,set")
	if err != nil {
		t.Fatal(err)
	}
	tlsConfig := func() *tls.Config {
		return &tls.Config{MinVersion: tls.VersionTLS12, ServerName: "redis.example", RootCAs: x509.NewCertPool()}
	}
	ep := func(addr string) prober.Endpoint {
		return prober.Endpoint{Network: "tcp", Addr: addr, TLS: tlsConfig(), Username: "u", Password: "p", DB: 1}
	}
	return Target{
		Name:     "a",
		Endpoint: ep("10.0.0.1:6379"),
		Probe: prober.ProbeConfig{Rate: 10, Timeout: time.Second, Commands: cmds, Connections: 2, DataSize: 16,
			KeyTTL: time.Minute, Namespace: prober.Namespace{Prefix: "redis-prober:", Tag: "x"}, Offset: time.Millisecond,
			OnError: func(error) {}, Poller: &prober.Poller{}},
		ConnectInterval: 10 * time.Second, SeedInterval: time.Minute, Objective: 5 * time.Millisecond,
		Node: "n", ReadOnly: true,
		Cluster:     ClusterOptions{Replicas: true, Refresh: time.Minute, Seeds: []prober.Endpoint{ep("10.0.0.2:6379")}},
		Sentinel:    &SentinelOptions{MasterName: "m", Sentinels: []prober.Endpoint{ep("10.0.0.3:26379")}, ProbeReplicas: true, Refresh: time.Second},
		Discovery:   DiscoveryOptions{MaxNodes: 3, AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, AllowedHostnames: []string{"example"}},
		Labels:      map[string]string{"team": "a"},
		Fingerprint: "f",
	}
}

// mutation changes one field of a Target, found by its path.
type mutation struct {
	path   string
	change func(v reflect.Value)
	steps  []step
}

// step is a field index, or -1 for a slice's first element or a pointer's
// target.
type step int

// mutations lists a change of every field reachable from v (the value of
// fullTarget at steps).
func mutations(t *testing.T, v reflect.Value, path string, steps []step) []mutation {
	at := func(p string, f func(reflect.Value)) mutation {
		return mutation{path: p, change: f, steps: append([]step(nil), steps...)}
	}
	if m, ok := opaque[v.Type()]; ok {
		var out []mutation
		for name, f := range m {
			out = append(out, at(path+"("+name+")", f))
		}
		return out
	}
	switch v.Kind() {
	case reflect.String:
		return []mutation{at(path, func(v reflect.Value) { v.SetString(v.String() + "x") })}
	case reflect.Bool:
		return []mutation{at(path, func(v reflect.Value) { v.SetBool(!v.Bool()) })}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return []mutation{at(path, func(v reflect.Value) { v.SetInt(v.Int() + 1) })}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return []mutation{at(path, func(v reflect.Value) { v.SetUint(v.Uint() + 1) })}
	case reflect.Float32, reflect.Float64:
		return []mutation{at(path, func(v reflect.Value) { v.SetFloat(v.Float() + 1) })}
	case reflect.Func:
		return []mutation{at(path, func(v reflect.Value) {
			v.Set(reflect.MakeFunc(v.Type(), func([]reflect.Value) []reflect.Value { return nil }))
		})}
	case reflect.Map:
		if v.Len() == 0 || v.Type().Key().Kind() != reflect.String || v.Type().Elem().Kind() != reflect.String {
			t.Fatalf("%s: fill it in fullTarget (a map of strings) or give its type a rule in opaque", path)
		}
		return []mutation{at(path, func(v reflect.Value) {
			m := reflect.MakeMap(v.Type())
			for _, k := range v.MapKeys() {
				m.SetMapIndex(k, v.MapIndex(k))
			}
			m.SetMapIndex(reflect.ValueOf("new"), reflect.ValueOf("x"))
			v.Set(m)
		})}
	case reflect.Pointer:
		if v.IsNil() {
			t.Fatalf("%s: fill it in fullTarget", path)
		}
		out := []mutation{at(path+"(nil)", func(v reflect.Value) { v.Set(reflect.Zero(v.Type())) })}
		if v.Elem().Kind() == reflect.Struct && v.Type() != reflect.TypeFor[*prober.Poller]() {
			out = append(out, mutations(t, v.Elem(), path, append(steps, -1))...)
		}
		return out
	case reflect.Slice:
		if v.Len() == 0 {
			t.Fatalf("%s: fill it in fullTarget", path)
		}
		out := []mutation{
			at(path+"(nil)", func(v reflect.Value) { v.Set(reflect.Zero(v.Type())) }),
			at(path+"(longer)", func(v reflect.Value) { v.Set(reflect.Append(v, v.Index(0))) }),
		}
		return append(out, mutations(t, v.Index(0), path+"[0]", append(steps, -1))...)
	case reflect.Struct:
		var out []mutation
		for i := range v.NumField() {
			f := v.Type().Field(i)
			p := strings.TrimPrefix(path+"."+f.Name, ".")
			if !f.IsExported() {
				if _, ok := notRestarting[p]; !ok {
					t.Errorf("%s: an unexported field; say in notRestarting why it needs no restart, or give its type a rule in opaque", p)
				}
				continue
			}
			out = append(out, mutations(t, v.Field(i), p, append(steps, step(i)))...)
		}
		return out
	}
	t.Fatalf("%s: no change known for kind %s; add one", path, v.Kind())
	return nil
}

// follow returns the field of v at steps, settable.
func follow(v reflect.Value, steps []step) reflect.Value {
	for _, s := range steps {
		switch {
		case s >= 0:
			v = v.Field(int(s))
		case v.Kind() == reflect.Pointer:
			v = v.Elem()
		default:
			v = v.Index(0)
		}
	}
	return v
}

// A reload restarts a target when any field of its config changed, except
// those listed in notRestarting (whose change must not): a field added to
// Target, or to a type in it, is seen without being listed anywhere, and
// this fails when one is left out of the comparison.
func TestSameTargetSeesEveryField(t *testing.T) {
	if !sameTarget(fullTarget(t), fullTarget(t)) {
		t.Fatal("two loads of one config differ: a field compares something no two loads share (a pointer, a function)")
	}
	base := fullTarget(t)
	ms := mutations(t, reflect.ValueOf(&base).Elem(), "", nil)
	seen := map[string]bool{}
	for _, m := range ms {
		field := strings.SplitN(m.path, "(", 2)[0]
		seen[field] = true
		changed := fullTarget(t)
		m.change(follow(reflect.ValueOf(&changed).Elem(), m.steps))
		_, exempt := notRestarting[field]
		switch same := sameTarget(fullTarget(t), changed); {
		case exempt && !same:
			t.Errorf("a change of %s restarts the target; it must not (%s)", m.path, notRestarting[field])
		case !exempt && same:
			t.Errorf("a change of %s is not seen: the target would not restart on reload", m.path)
		}
	}
	for p := range notRestarting {
		if !seen[p] && !strings.HasSuffix(p, ".args") {
			t.Errorf("notRestarting lists %s, which Target no longer has", p)
		}
	}
	t.Logf("%d changes tried", len(ms))
	if len(ms) < 40 {
		t.Errorf("only %d changes tried; the walk missed fields", len(ms))
	}
}

// Two loads of one config file are the same targets, so a reload that
// changed nothing restarts nothing: every kind of target (TLS with its
// files, Cluster seeds, Sentinels, discovery limits, labels, a file_sd
// group), each load with its own TLS configs and parsed commands.
func TestReloadOfOneConfigIsTheSameTargets(t *testing.T) {
	dir := t.TempDir()
	certs := redistest.NewCerts(t)
	pw := filepath.Join(dir, "pw")
	sd := filepath.Join(dir, "sd.json")
	for path, content := range map[string]string{
		pw: "secret\n",
		sd: `[{"targets": ["10.0.9.1:6379", "10.0.9.2:6379"], "labels": {"team": "sd"}}]`,
		filepath.Join(dir, "prober.yml"): fmt.Sprintf(`global:
  discovery:
    allowed_networks: [10.0.0.0/8]
    allowed_hostnames: [.redis.internal]
targets:
  - name: cache
    addr: redis://10.0.0.5:6379
    username: prober
    password_file: %[1]s
    labels: {team: payments}
    probe: {rate: 20, commands: [ping, get, set, hgetall]}
  - name: sessions
    cluster: {addrs: [redis://10.0.1.1:7000, redis://10.0.1.2:7000], replicas: true}
    password_file: %[1]s
  - name: queue
    sentinel: {master_name: queue, addrs: [10.0.2.1:26379, 10.0.2.2:26379]}
  - name: secure
    addr: rediss://127.0.0.1:6380
    tls: {ca_file: %[2]s, cert_file: %[3]s, key_file: %[4]s, server_name: localhost}
file_sd_configs:
  - files: [%[5]s]
`, pw, certs.CAFile, certs.CertFile, certs.KeyFile, sd),
	} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	probe := prober.ProbeConfig{Rate: 10, Timeout: time.Second, Connections: 2, DataSize: 32, KeyTTL: time.Minute,
		Namespace: prober.Namespace{Prefix: "redis-prober:"}}
	probe.Commands, _ = prober.ParseCommands("ping,get,set")
	src := &TargetSource{File: filepath.Join(dir, "prober.yml"), ShardIndex: -1, MaxNodes: DefaultMaxNodes, Probe: probe,
		Objective: 5 * time.Millisecond, ConnectInterval: 10 * time.Second,
		Password: func(*slog.Logger) (string, error) { return "", nil }}
	load := func() []Target {
		l, err := src.Load(t.Context(), quietLogger())
		if err != nil {
			t.Fatal(err)
		}
		return l.Config().Targets
	}
	first, second := load(), load()
	if len(first) != 6 || len(second) != len(first) {
		t.Fatalf("%d and %d targets, want 6", len(first), len(second))
	}
	for i := range first {
		if !sameTarget(first[i], second[i]) {
			t.Errorf("target %s: two loads of one config differ; a reload would restart it", first[i].Name)
		}
	}
	// And a changed file is seen: the certificate's content.
	if err := os.WriteFile(certs.CAFile, append(mustRead(t, certs.CAFile), '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, tgt := range load() {
		if same := sameTarget(first[i], tgt); same == (tgt.Name == "secure") {
			t.Errorf("target %s: same %v after its CA file changed", tgt.Name, same)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
