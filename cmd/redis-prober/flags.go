package main

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/redis-prober/redis-prober/config"
	"github.com/redis-prober/redis-prober/engine"
	"github.com/redis-prober/redis-prober/internal/usage"
)

// flagGroup is what kingpin's Application and CmdClause have in common.
type flagGroup interface {
	Flag(name, help string) *kingpin.FlagClause
	GetFlag(name string) *kingpin.FlagClause
}

// typed is a kingpin value whose parse errors name the flag, so a bad value
// exits with one line that says which flag and why.
type typed[T any] struct {
	name  string
	dst   *T
	parse func(string) (T, error)
}

func (v *typed[T]) Set(s string) error {
	x, err := v.parse(s)
	if err != nil {
		return fmt.Errorf("--%s: %w", v.name, err)
	}
	*v.dst = x
	return nil
}

func (v *typed[T]) String() string { return fmt.Sprint(*v.dst) }

func typedFlag[T any](g flagGroup, name, help, def string, parse func(string) (T, error)) *T {
	dst := new(T)
	typedVar(g, name, help, def, dst, parse)
	return dst
}

// typedVar is typedFlag into dst.
func typedVar[T any](g flagGroup, name, help, def string, dst *T, parse func(string) (T, error)) {
	g.Flag(name, help).Default(def).SetValue(&typed[T]{name: name, dst: dst, parse: parse})
}

func floatFlag(g flagGroup, name, help, def string) *float64 {
	return typedFlag(g, name, help, def, parseFloat)
}

func intFlag(g flagGroup, name, help, def string) *int {
	return typedFlag(g, name, help, def, parseInt)
}

func durationFlag(g flagGroup, name, help, def string) *time.Duration {
	return typedFlag(g, name, help, def, parseDuration)
}

func parseFloat(s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	// NaN and infinities would slip through every range check.
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a finite number", s)
	}
	return f, nil
}

func parseInt(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a whole number", s)
	}
	return n, nil
}

func parseInt64(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a whole number", s)
	}
	return n, nil
}

func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (examples: 500ms, 10s, 15m)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q must not be negative", s)
	}
	return d, nil
}

// parseSeconds takes a Go duration or, as memtier does, plain seconds.
func parseSeconds(s string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
			return 0, fmt.Errorf("%q must not be negative", s)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not seconds or a duration (examples: 10, 500ms, 2m)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q must not be negative", s)
	}
	return d, nil
}

// usageError is a bad flag or config value: exit code 2.
type usageError = usage.Error

func usagef(format string, args ...any) error { return usage.Errorf(format, args...) }

// discoveryFlags bound what Cluster and Sentinel discovery may add to a
// target; the config file's discovery: blocks override them.
type discoveryFlags struct {
	maxNodes *int
}

func addDiscoveryFlags(g flagGroup) *discoveryFlags {
	return &discoveryFlags{
		maxNodes: intFlag(g, "discovery.max-nodes",
			"Most nodes probed per Cluster or Sentinel target; the others are refused, logged once and counted in redis_prober_discovery_nodes.",
			strconv.Itoa(engine.DefaultMaxNodes)),
	}
}

// options lays the config's discovery blocks (global:, then the target's)
// over the flags.
func (f *discoveryFlags) options(layers ...config.Discovery) (engine.DiscoveryOptions, error) {
	return engine.DiscoveryFrom(*f.maxNodes, layers...)
}
