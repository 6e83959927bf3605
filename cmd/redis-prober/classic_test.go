package main

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/redis-prober/redis-prober/internal/redistest"
)

// --probe.classic-buckets chooses the probe latency histogram's classic
// bounds, or none; a bad list exits 2 before anything runs.
func TestProbeClassicBucketsFlag(t *testing.T) {
	srv := redistest.Start(t)
	// probeBounds are the le values of the probe's ping histogram of srv.
	probeBounds := func(m string) []string {
		re := regexp.MustCompile(`(?m)^redis_prober_latency_seconds_bucket\{([^}]*)\} `)
		var les []string
		for _, l := range re.FindAllStringSubmatch(m, -1) {
			if strings.Contains(l[1], `command="ping"`) && strings.Contains(l[1], `phase="probe"`) && strings.Contains(l[1], `target="`+srv.Addr()+`"`) {
				les = append(les, regexp.MustCompile(`le="([^"]*)"`).FindStringSubmatch(l[1])[1])
			}
		}
		return les
	}
	for _, tc := range []struct {
		flag string
		want []string
	}{
		{"", []string{"5e-05", "0.0001", "0.0002", "0.0003", "0.0005", "0.00075", "0.001", "0.002", "0.005", "0.01", "0.025", "0.1", "1", "+Inf"}},
		{"--probe.classic-buckets=1ms, 5ms,25ms", []string{"0.001", "0.005", "0.025", "+Inf"}},
		{"--probe.classic-buckets=none", []string{"+Inf"}},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			args := []string{"--redis.addr=" + srv.URL(), "--probe.rate=50", "--burst.interval=0s", "--probe.connect-interval=0s"}
			if tc.flag != "" {
				args = append(args, tc.flag)
			}
			p := startProber(t, nil, args...)
			m := p.waitMetric(t, "probe histogram", func(m string) bool { return len(probeBounds(m)) > 0 })
			if got := probeBounds(m); !slices.Equal(got, tc.want) {
				t.Errorf("probe bounds %v, want %v", got, tc.want)
			}
			if _, err := p.stop(t); err != nil {
				t.Errorf("exit: %v", err)
			}
		})
	}
	var many []string
	for i := range 31 {
		many = append(many, fmt.Sprintf("%dms", i+1))
	}
	for _, bad := range []string{"5ms,1ms", "1ms,1ms", "0s", "1ms,fast", "", strings.Join(many, ",")} {
		var stdout, stderr bytes.Buffer
		code := realMain([]string{"--redis.addr=" + srv.URL(), "--probe.classic-buckets=" + bad, "--config.check"}, &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), "--probe.classic-buckets") {
			t.Errorf("%q: exit %d, stderr %q; want 2 naming the flag", bad, code, stderr.String())
		}
	}
}
