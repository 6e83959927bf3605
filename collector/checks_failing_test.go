package collector

import (
	"fmt"
	"strings"
	"testing"
)

// Failing is what the status page lists: the 0s of
// redis_prober_check_passed, with the severity of that series.
func TestFailing(t *testing.T) {
	crit := Check{ID: "thp_enabled", Severity: SeverityCritical}
	warns := Check{ID: "vm_swappiness", Severity: SeverityCritical, Warns: true}
	for _, tc := range []struct {
		name    string
		results []Result
		want    string
	}{
		{"none", nil, "[]"},
		{"pass and unknown", []Result{{Check: crit, Status: StatusPass}, {Check: warns, Status: StatusUnknown}}, "[]"},
		{"fail", []Result{{Check: crit, Status: StatusFail, Value: "enabled = always"}}, "[{thp_enabled critical enabled = always}]"},
		{"warn level", []Result{{Check: warns, Status: StatusWarn, Value: "10 (want <= 1)"}}, "[{vm_swappiness warning 10 (want <= 1)}]"},
		{"unprintable, long", []Result{{Check: crit, Status: StatusFail, Value: "a\x1bb" + strings.Repeat("x", 500)}},
			"[{thp_enabled critical a\ufffdb" + strings.Repeat("x", maxFailedValue-len("a\ufffdb")) + "}]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fmt.Sprint(Failing(tc.results)); got != tc.want {
				t.Errorf("Failing = %s, want %s", got, tc.want)
			}
		})
	}
}
