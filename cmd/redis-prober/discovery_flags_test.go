package main

import (
	"fmt"
	"testing"

	"github.com/alecthomas/kingpin/v2"

	"github.com/redis-prober/redis-prober/config"
)

func TestDiscoveryFlagsAndConfigLayers(t *testing.T) {
	parse := func(args ...string) *discoveryFlags {
		app := kingpin.New("test", "")
		f := addDiscoveryFlags(app)
		if _, err := app.Parse(args); err != nil {
			t.Fatal(err)
		}
		return f
	}
	d, err := parse().options()
	if err != nil || d.MaxNodes != 1000 || d.AllowedNetworks != nil {
		t.Errorf("defaults: %+v %v, want max 1000 and no allow-list", d, err)
	}
	five, three := 5, 3
	d, err = parse("--discovery.max-nodes=50").options(
		config.Discovery{MaxNodes: &five, AllowedNetworks: []string{"10.0.0.0/8"}},
		config.Discovery{MaxNodes: &three, AllowedHostnames: []string{".redis.internal"}})
	if err != nil || d.MaxNodes != 3 || fmt.Sprint(d.AllowedNetworks) != "[10.0.0.0/8]" || fmt.Sprint(d.AllowedHostnames) != "[.redis.internal]" {
		t.Errorf("layers: %+v %v", d, err)
	}
	if _, err := parse("--discovery.max-nodes=0").options(); err == nil {
		t.Error("--discovery.max-nodes=0 accepted")
	} else if _, ok := err.(usageError); !ok {
		t.Errorf("not a usage error (exit 2): %v", err)
	}
}
