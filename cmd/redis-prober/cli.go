package main

import "github.com/alecthomas/kingpin/v2"

// addCommands declares every sub-command on app and returns them by name;
// realMain runs them and docs/flags.md is generated from them.
func addCommands(app *kingpin.Application) map[string]command {
	return map[string]command{
		"run":     addRunCommand(app.Command("run", "Run the prober and serve /metrics (the default).").Default()),
		"doctor":  addDoctorCommand(app.Command("doctor", "One-shot host and Redis tuning report: every check with its value, why it matters and the fix, plus a short live latency measurement. Exit 1 when something critical fails.")),
		"burst":   addBurstCommand(app.Command("burst", "Run one bounded load burst (or a step-load capacity search) with memtier_benchmark's option names; --plan takes a plan of the config file.")),
		"compare": addCompareCommand(app.Command("compare", "Compare two burst reports (before and after a change): per command p50/p99/p99.9 and throughput with intervals and a verdict. Exit 1 when something regressed, 3 when the trials are too noisy to tell (inconclusive), 2 on bad input.")),
	}
}
