package collector

import "testing"

// A target collector runs when it is enabled or a later enabled one reads
// what it reads (checks evaluate the process and INFO).
func TestTargetPartNeeded(t *testing.T) {
	def := func(name string) Definition {
		for _, d := range definitions {
			if d.Name == name {
				return d
			}
		}
		t.Fatalf("no collector %q", name)
		return Definition{}
	}
	for _, tc := range []struct {
		on   []string
		name string
		want bool
	}{
		{[]string{"info"}, "info", true},
		{[]string{"checks"}, "info", true},
		{[]string{"checks"}, "process", true},
		{[]string{"latency"}, "info", true},
		{[]string{"latency"}, "process", false},
		{[]string{"process"}, "checks", false},
		{nil, "info", false},
	} {
		on := Enabled{}
		for _, n := range tc.on {
			on[n] = true
		}
		if got := needed(def(tc.name), on); got != tc.want {
			t.Errorf("enabled %v: %s runs %v, want %v", tc.on, tc.name, got, tc.want)
		}
	}
}

// Every target collector has its part, every host collector its source.
func TestEveryCollectorHasItsCode(t *testing.T) {
	for _, d := range definitions {
		if (d.Kind == KindTarget) != (d.part != nil) || (d.Kind == KindHost) != (d.newHost != nil) {
			t.Errorf("collector %q: kind %v, part %v, host source %v", d.Name, d.Kind, d.part != nil, d.newHost != nil)
		}
	}
}
