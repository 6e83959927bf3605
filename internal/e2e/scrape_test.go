package e2e

import (
	"context"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/promtest"
)

// scrape is one /metrics body of the prober, in the text format.
type scrape string

// scrape takes /metrics; an answer other than 200 fails the test.
func (p *prober) scrape(t *testing.T) scrape {
	t.Helper()
	code, body := p.get("/metrics")
	if code != 200 {
		t.Fatalf("GET /metrics on %s: status %d", p.addr, code)
	}
	return scrape(body)
}

var (
	sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)`)
	labelPair  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
)

// sum adds the samples of name whose labels include every pair of match;
// false when no sample matched.
func (s scrape) sum(name string, match map[string]string) (float64, bool) {
	var total float64
	found := false
	for _, line := range strings.Split(string(s), "\n") {
		m := sampleLine.FindStringSubmatch(line)
		if m == nil || m[1] != name {
			continue
		}
		labels := map[string]string{}
		for _, l := range labelPair.FindAllStringSubmatch(m[2], -1) {
			labels[l[1]] = l[2]
		}
		ok := true
		for k, v := range match {
			ok = ok && labels[k] == v
		}
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			continue
		}
		total += v
		found = true
	}
	return total, found
}

// waitForScrape scrapes until cond holds of a scrape and returns that
// scrape, or fails the test after within, naming what it waited for.
func (p *prober) waitForScrape(t *testing.T, within time.Duration, what string, cond func(scrape) bool) scrape {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		s := p.scrape(t)
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// lintScrape runs `promtool check metrics` (the promtool of the Prometheus
// under test) on a scrape; when names a moment ("after a burst").
func lintScrape(t *testing.T, when string, s scrape) {
	t.Helper()
	promtool := promtest.Promtool(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(string(s))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("promtool check metrics %s (%s): %v\n%s", when, promtool, err, out)
		return
	}
	t.Logf("promtool check metrics %s: clean (%d lines)", when, strings.Count(string(s), "\n"))
}

// waitForQuery evaluates expr in Prometheus until ok holds of its result and
// returns that result, or fails the test after within.
func waitForQuery(ctx context.Context, t *testing.T, prom *promtest.Server, within time.Duration, expr string, ok func([]promtest.Sample) bool) []promtest.Sample {
	t.Helper()
	deadline := time.Now().Add(within)
	var last []promtest.Sample
	for {
		got, err := prom.Query(ctx, expr)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		if ok(got) {
			return got
		}
		last = got
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s; last result %v", within, expr, last)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v; last result %v", expr, ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
