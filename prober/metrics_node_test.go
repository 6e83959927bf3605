package prober

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
)

// A node address comes from a Redis server: ForNode must not panic on one
// that is not valid UTF-8, and must keep the label printable and bounded.
func TestForNodeSanitisesTheNodeLabel(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	for _, node := range []string{
		"\xff\xfe:7000",
		"10.0.0.1:7000\x1b[2J",
		strings.Repeat("a", 5000) + ":7000",
		"10.0.0.1:7000",
	} {
		m.ForNode("t", node, []string{"ping"}, time.Millisecond).SetUp(true)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen, valid := 0, false
	for _, mf := range mfs {
		if mf.GetName() != "redis_prober_up" {
			continue
		}
		for _, s := range mf.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() != "node" {
					continue
				}
				seen++
				v := l.GetValue()
				valid = valid || v == "10.0.0.1:7000"
				if !utf8.ValidString(v) || len(v) > 300 || strings.ContainsAny(v, "\x1b\x00") {
					t.Errorf("node label %q is not a safe label value", v)
				}
			}
		}
	}
	if seen != 4 || !valid {
		t.Errorf("%d node series (want 4), the valid address kept as it is: %v", seen, valid)
	}
}
