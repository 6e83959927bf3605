package burst

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestParseKeyPattern(t *testing.T) {
	for _, tc := range []struct {
		in       string
		set, get byte
		ok       bool
	}{
		{"R:R", 'R', 'R', true},
		{"s:r", 'S', 'R', true},
		{"G", 'G', 'G', true},
		{"Z:Z", 'Z', 'Z', true},
		{"P:R", 0, 0, false},
		{"R:R:R", 0, 0, false},
		{"", 0, 0, false},
	} {
		set, get, err := ParseKeyPattern(tc.in)
		if (err == nil) != tc.ok || set != tc.set || get != tc.get {
			t.Errorf("ParseKeyPattern(%q) = %c %c %v, want %c %c ok=%v", tc.in, set, get, err, tc.set, tc.get, tc.ok)
		}
	}
}

// draw returns how often each key of spec came out of n draws of pattern.
func draw(t *testing.T, spec KeySpec, pattern byte, n int) []int {
	t.Helper()
	gen := spec.Gen(pattern)
	rng := rand.New(rand.NewPCG(1, 2))
	counts := make([]int, spec.Size())
	for range n {
		k := gen.Next(rng)
		if k < spec.Min || k > spec.Max {
			t.Fatalf("pattern %c drew %d outside %d..%d", pattern, k, spec.Min, spec.Max)
		}
		counts[k-spec.Min]++
	}
	return counts
}

func TestUniformCoversRangeEvenly(t *testing.T) {
	spec := KeySpec{Min: 100, Max: 199}
	counts := draw(t, spec, 'R', 100000)
	for i, c := range counts {
		if c < 700 || c > 1300 { // 1000 expected, sd about 31
			t.Fatalf("key %d drawn %d times of an expected 1000", i+100, c)
		}
	}
}

func TestGaussianConcentratesAroundMedian(t *testing.T) {
	spec := KeySpec{Min: 0, Max: 9999, Median: 3000, Stddev: 200}
	counts := draw(t, spec, 'G', 100000)
	within := 0
	for k := 2800; k <= 3200; k++ {
		within += counts[k]
	}
	// One standard deviation either side holds about 68%.
	if f := float64(within) / 100000; f < 0.64 || f > 0.72 {
		t.Fatalf("%.3f of draws within one stddev of the median, want about 0.68", f)
	}
	if counts[9000] != 0 || counts[0] != 0 {
		t.Fatalf("draws far in the tails: %d at 9000, %d at 0", counts[9000], counts[0])
	}
	// Defaults: the middle of the range, a sixth of it.
	def := KeySpec{Min: 0, Max: 599}
	dc := draw(t, def, 'G', 60000)
	mid := 0
	for k := 200; k < 400; k++ {
		mid += dc[k]
	}
	if f := float64(mid) / 60000; f < 0.64 || f > 0.72 {
		t.Fatalf("default gaussian: %.3f within one stddev of the middle", f)
	}
}

// zipfShare is the exact probability of rank 1 under zipf(s) over n ranks.
func zipfShare(n int, s float64) float64 {
	h := 0.0
	for k := 1; k <= n; k++ {
		h += math.Pow(float64(k), -s)
	}
	return 1 / h
}

func TestZipfIsSkewed(t *testing.T) {
	for _, s := range []float64{0.5, 0.99, 1, 1.5, 3} {
		spec := KeySpec{Min: 0, Max: 999, ZipfExp: s}
		const n = 200000
		counts := draw(t, spec, 'Z', n)
		want := zipfShare(1000, s)
		got := float64(counts[0]) / n
		if math.Abs(got-want) > 0.05*want+0.002 {
			t.Errorf("s=%v: key 0 drawn %.4f of the time, want %.4f", s, got, want)
		}
		if counts[0] <= counts[1] || counts[1] <= counts[10] || counts[10] <= counts[500] {
			t.Errorf("s=%v: frequencies do not fall with rank: %d %d %d %d", s, counts[0], counts[1], counts[10], counts[500])
		}
	}
}

func TestSequentialCoversRangeInOrder(t *testing.T) {
	spec := KeySpec{Min: 5, Max: 14}
	gen := spec.Gen('S')
	for round := range 3 {
		for want := int64(5); want <= 14; want++ {
			if got := gen.Next(nil); got != want {
				t.Fatalf("round %d: got %d, want %d", round, got, want)
			}
		}
	}
}

func TestKeySpecValidate(t *testing.T) {
	for _, tc := range []struct {
		spec  KeySpec
		field string
	}{
		{KeySpec{SetPattern: 'R', GetPattern: 'R', Min: -1, Max: 5}, "key-minimum"},
		{KeySpec{SetPattern: 'R', GetPattern: 'R', Min: 6, Max: 5}, "key-maximum"},
		{KeySpec{SetPattern: 'Z', GetPattern: 'R', Max: 5}, "key-zipf-exp"},
		{KeySpec{SetPattern: 'G', GetPattern: 'G', Max: 5, Median: 9}, "key-median"},
		{KeySpec{SetPattern: 'X', GetPattern: 'R', Max: 5}, "key-pattern"},
	} {
		err := tc.spec.Validate()
		fe, ok := err.(*FieldError)
		if !ok || fe.Field != tc.field {
			t.Errorf("%+v: got %v, want an error about %s", tc.spec, err, tc.field)
		}
	}
	if err := (KeySpec{SetPattern: 'Z', GetPattern: 'S', Max: 9, ZipfExp: 1}).Validate(); err != nil {
		t.Fatal(err)
	}
}
