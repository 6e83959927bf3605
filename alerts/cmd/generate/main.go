// Command generate writes alerts/burnrate.yml, the burn-rate rules with
// one rule group per latency objective, from alerts/burnrate.yml.tmpl (run
// from the repository root, or `go generate ./alerts`):
//
//	go run ./alerts/cmd/generate [-objectives 1ms,2ms,5ms,10ms,25ms,100ms] [-out alerts/burnrate.yml]
//
// The committed file serves alerts.DefaultObjectives; a test fails when it
// is stale. Write a file of your own objectives elsewhere with -out.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/redis-prober/redis-prober/alerts"
)

func main() {
	var def []string
	for _, o := range alerts.DefaultObjectives {
		def = append(def, o.String())
	}
	objectives := flag.String("objectives", strings.Join(def, ","), "comma-separated p99 latency objectives (Go durations), one rule group each")
	out := flag.String("out", "alerts/"+alerts.BurnRateFile, "file to write")
	flag.Parse()
	if err := generate(*objectives, *out); err != nil {
		fmt.Fprintln(os.Stderr, "generate:", err)
		os.Exit(1)
	}
}

func generate(objectives, out string) error {
	objs, err := alerts.ParseObjectives(objectives)
	if err != nil {
		return err
	}
	b, err := alerts.RenderBurnRate(objs)
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	fmt.Println("wrote", out)
	return nil
}
