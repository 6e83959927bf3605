package config

import (
	"fmt"
	"strings"
	"testing"
)

func TestDiscoveryFields(t *testing.T) {
	f, err := Parse([]byte(`global:
  discovery:
    max_nodes: 200
    allowed_networks: [10.0.0.0/8, "fd00::/8", 192.168.1.7/24]
    allowed_hostnames: [.redis.internal]
targets:
  - name: a
    cluster: {addrs: [10.0.0.1:7000]}
  - name: b
    cluster: {addrs: [10.0.0.2:7000]}
    discovery:
      max_nodes: 5
      allowed_networks: []
`))
	if err != nil {
		t.Fatal(err)
	}
	a := f.Targets[0].Discovery.Over(f.Global.Discovery)
	b := f.Targets[1].Discovery.Over(f.Global.Discovery)
	nets, err := a.Networks()
	if err != nil || fmt.Sprint(nets) != "[10.0.0.0/8 fd00::/8 192.168.1.0/24]" || *a.MaxNodes != 200 {
		t.Errorf("a: %v %v max %v", nets, err, *a.MaxNodes)
	}
	if *b.MaxNodes != 5 || len(b.AllowedNetworks) != 0 || fmt.Sprint(b.AllowedHostnames) != "[.redis.internal]" {
		t.Errorf("b: max %v, networks %v (an empty list replaces the global one), hostnames %v", *b.MaxNodes, b.AllowedNetworks, b.AllowedHostnames)
	}
}

func TestDiscoveryErrors(t *testing.T) {
	for _, tc := range []struct{ field, want string }{
		{"max_nodes: 0", "targets[0].discovery.max_nodes (line 5): must be from 1 to 100000"},
		{"max_nodes: 1000000", "must be from 1 to 100000"},
		{"allowed_networks: [10.0.0.0]", `targets[0].discovery.allowed_networks (line 5): "10.0.0.0" is not a network in CIDR notation`},
		{"allowed_networks: [everywhere]", "not a network"},
		{`allowed_hostnames: ["evil.example:7000"]`, "targets[0].discovery.allowed_hostnames (line 5): \"evil.example:7000\" is not a host name"},
		{`allowed_hostnames: ["*.example"]`, "is not a host name"},
	} {
		text := "targets:\n  - name: a\n    addr: x\n    discovery:\n      " + tc.field + "\n"
		_, err := Parse([]byte(text))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to contain %q", tc.field, err, tc.want)
		}
	}
	if _, err := Parse([]byte("global:\n  discovery: {max_nodes: -1}\ntargets:\n  - {name: a, addr: x}\n")); err == nil ||
		!strings.Contains(err.Error(), "global.discovery.max_nodes") {
		t.Errorf("global max_nodes -1: %v", err)
	}
}
