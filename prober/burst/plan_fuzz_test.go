package burst

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/prober"
)

// Burst key generators: a valid KeySpec only ever yields indices inside
// [Min, Max], for every pattern and any float the flags let through.
func FuzzKeySpec(f *testing.F) {
	f.Add(int64(0), int64(9999), 0.0, 0.0, 1.0, uint64(1))
	f.Add(int64(5), int64(5), 0.0, 0.0, 0.5, uint64(2))
	f.Add(int64(0), int64(1<<40-1), 1e300, 0.0, 5.0, uint64(3))
	f.Add(int64(0), int64(100), math.NaN(), math.NaN(), math.NaN(), uint64(4))
	f.Add(int64(0), int64(100), math.Inf(1), 50.0, 1e-300, uint64(5))
	f.Fuzz(func(t *testing.T, lo, hi int64, stddev, median, zipf float64, seed uint64) {
		for _, pattern := range []byte("RGZS") {
			k := KeySpec{SetPattern: pattern, GetPattern: pattern, Min: lo, Max: hi, Stddev: stddev, Median: median, ZipfExp: zipf}
			if k.Validate() != nil {
				continue
			}
			g := k.Gen(pattern)
			r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
			for range 64 {
				if v := g.Next(r); v < lo || v > hi {
					t.Fatalf("%+v pattern %c: key %d outside %d..%d", k, pattern, v, lo, hi)
				}
			}
		}
	})
}

// Burst command lists and ratios: refused, or known commands with positive
// weights, each once.
func FuzzParseMix(f *testing.F) {
	for _, s := range []string{"get:10,set:1,hgetall", "1:10", "0:0", "get:0", "set:-1", "GET:2,get:1", ":", "get:99999999999999999999", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		check := func(what string, mix []MixEntry, err error) {
			if err != nil {
				return
			}
			if len(mix) == 0 {
				t.Fatalf("%s(%q): empty mix and no error", what, s)
			}
			seen := map[string]bool{}
			for _, m := range mix {
				if m.Weight < 1 || burstOpIndex(m.Op) < 0 || seen[m.Op] {
					t.Fatalf("%s(%q): bad entry %+v in %v", what, s, m, mix)
				}
				seen[m.Op] = true
			}
		}
		mix, err := ParseMix(s)
		check("ParseMix", mix, err)
		if err == nil {
			// A mix the plan accepts must give a usable request cycle.
			plan := Plan{Name: "f", Clients: 1, Pipeline: 1, Mix: mix, Keys: KeySpec{SetPattern: 'R', GetPattern: 'R', Max: 9},
				DataSize: 8, TestTime: time.Second, MaxBytes: 1 << 20, Timeout: time.Second, KeyTTL: time.Minute,
				Namespace: prober.Namespace{Prefix: "redis-prober:", Tag: "f"}}
			if plan.Validate(CLILimits) == nil {
				total := 0
				for _, m := range mix {
					total += m.Weight
				}
				if seq := mixSequence(mix); len(seq) == 0 || len(seq) != total {
					t.Fatalf("ParseMix(%q) validated, but its cycle has %d requests for weights adding up to %d", s, len(seq), total)
				}
			}
		}
		mix, err = ParseRatio(s)
		check("ParseRatio", mix, err)
		if set, get, err := ParseKeyPattern(s); err == nil && (!strings.ContainsRune("RGZS", rune(set)) || !strings.ContainsRune("RGZS", rune(get))) {
			t.Fatalf("ParseKeyPattern(%q) = %c, %c", s, set, get)
		}
	})
}
