package main

import (
	"log/slog"
	"strings"
)

// deprecatedFlag is a flag of run that moved to the config file: hidden
// from --help, it still works for one release and says so at start.
type deprecatedFlag struct {
	name string // without --
	// replacement is the config file's field; <plan> stands for the
	// periodic bursts' plan.
	replacement string
	given       *bool
}

// deprecateFlag hides the declared flag name of g and returns what warns
// when it is given.
func deprecateFlag(g flagGroup, name, replacement string) *deprecatedFlag {
	d := &deprecatedFlag{name: name, replacement: replacement, given: new(bool)}
	g.GetFlag(name).Hidden().IsSetByUser(d.given).Help(deprecatedHelp(replacement))
	return d
}

// warnDeprecated logs one line for each deprecated flag given.
func warnDeprecated(log *slog.Logger, plan string, flags []*deprecatedFlag) {
	for _, d := range flags {
		if !*d.given {
			continue
		}
		repl := strings.ReplaceAll(d.replacement, "<plan>", plan)
		log.Warn("deprecated flag --"+d.name+" goes in the next release: set "+repl+" in --config.file instead",
			"flag", "--"+d.name, "replacement", repl)
	}
}

// deprecateRunFlags hides the flags of run, other than the burst plan's,
// whose setting has a field in the config file's global: block, which a
// prober of many targets uses anyway.
func deprecateRunFlags(g flagGroup) []*deprecatedFlag {
	return []*deprecatedFlag{
		deprecateFlag(g, "probe.connections", "global.probe.connections"),
		deprecateFlag(g, "probe.data-size", "global.probe.data_size"),
		deprecateFlag(g, "probe.key-ttl", "global.probe.key_ttl"),
		deprecateFlag(g, "probe.connect-interval", "global.probe.connect_interval"),
		deprecateFlag(g, "discovery.max-nodes", "global.discovery.max_nodes"),
	}
}
