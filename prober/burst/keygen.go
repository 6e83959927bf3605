package burst

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync/atomic"
)

// KeyGen picks the index of the next key a burst request touches, inside
// [Min, Max]. Generators are shared by every client of a burst: Next is safe
// for concurrent use when each caller passes its own rand source.
type KeyGen interface {
	Next(r *rand.Rand) int64
}

// KeySpec is how a burst picks keys, in memtier_benchmark's terms: one
// pattern for writes and one for reads (--key-pattern=SET:GET), over the
// range key-minimum..key-maximum.
type KeySpec struct {
	SetPattern byte // 'R' uniform, 'G' gaussian, 'Z' zipf, 'S' sequential
	GetPattern byte
	Min, Max   int64
	// Stddev and Median shape the gaussian; zero means memtier's defaults
	// (a sixth of the range, the middle of the range).
	Stddev, Median float64
	// ZipfExp is the zipf exponent (memtier --key-zipf-exp), above 0 and at most 5.
	ZipfExp float64
}

// Size is the number of distinct keys in the range.
func (k KeySpec) Size() int64 { return k.Max - k.Min + 1 }

// ParseKeyPattern reads memtier's "SET:GET" form ("R:R", "S:R", "G:G") or a
// single letter used for both.
func ParseKeyPattern(s string) (set, get byte, err error) {
	s = strings.ToUpper(strings.TrimSpace(s))
	parts := strings.Split(s, ":")
	if len(parts) == 1 {
		parts = append(parts, parts[0])
	}
	if len(parts) != 2 {
		return 0, 0, fmt.Errorf("%q is not SET:GET (for example R:R, S:R, G:G, Z:Z)", s)
	}
	for _, p := range parts {
		if len(p) != 1 || !strings.Contains("RGZS", p) {
			return 0, 0, fmt.Errorf("%q: each pattern is one of R (uniform), G (gaussian), Z (zipf), S (sequential)", s)
		}
	}
	return parts[0][0], parts[1][0], nil
}

// Validate checks the range and the distribution parameters.
func (k KeySpec) Validate() error {
	switch {
	case k.Min < 0:
		return fieldErr("key-minimum", "%d must not be negative", k.Min)
	case k.Max < k.Min:
		return fieldErr("key-maximum", "%d is below key-minimum %d", k.Max, k.Min)
	case k.Max-k.Min >= 1<<40:
		return fieldErr("key-maximum", "the key range must hold fewer than 2^40 keys")
	case !(k.Stddev >= 0) || math.IsInf(k.Stddev, 0): // also refuses NaN
		return fieldErr("key-stddev", "%v must be a finite number, not negative", k.Stddev)
	case k.Median != 0 && !(k.Median >= float64(k.Min) && k.Median <= float64(k.Max)):
		return fieldErr("key-median", "%v is outside the key range %d..%d", k.Median, k.Min, k.Max)
	}
	for _, p := range []byte{k.SetPattern, k.GetPattern} {
		if !strings.ContainsRune("RGZS", rune(p)) {
			return fieldErr("key-pattern", "%q is not one of R, G, Z, S", p)
		}
		if p == 'Z' && !(k.ZipfExp > 0 && k.ZipfExp <= 5) {
			return fieldErr("key-zipf-exp", "%v must be above 0 and at most 5", k.ZipfExp)
		}
	}
	return nil
}

// Gen returns the generator of one pattern. Each call returns a fresh
// generator (a sequential one starts at Min again).
func (k KeySpec) Gen(pattern byte) KeyGen {
	switch pattern {
	case 'G':
		median := k.Median
		if median == 0 {
			median = float64(k.Min) + float64(k.Size()-1)/2
		}
		stddev := k.Stddev
		if stddev == 0 {
			stddev = float64(k.Size()) / 6
		}
		return gaussianGen{min: k.Min, max: k.Max, median: median, stddev: stddev}
	case 'Z':
		return newZipfGen(k.Min, k.Size(), k.ZipfExp)
	case 'S':
		return &sequentialGen{min: k.Min, size: k.Size()}
	default:
		return uniformGen{min: k.Min, size: k.Size()}
	}
}

type uniformGen struct{ min, size int64 }

func (g uniformGen) Next(r *rand.Rand) int64 { return g.min + r.Int64N(g.size) }

// gaussianGen draws around the median and redraws what falls outside the
// range, so the range bounds hold without piling mass onto its ends.
type gaussianGen struct {
	min, max       int64
	median, stddev float64
}

func (g gaussianGen) Next(r *rand.Rand) int64 {
	for range 64 {
		v := int64(math.Round(r.NormFloat64()*g.stddev + g.median))
		if v >= g.min && v <= g.max {
			return v
		}
	}
	return int64(math.Round(g.median))
}

// sequentialGen walks the range in order, shared by all clients so together
// they cover it once before wrapping.
type sequentialGen struct {
	min, size int64
	next      atomic.Int64
}

func (g *sequentialGen) Next(*rand.Rand) int64 {
	return g.min + (g.next.Add(1)-1)%g.size
}

// zipfGen draws rank k in 1..n with probability proportional to k^-s by
// rejection-inversion (Hörmann and Derflinger, 1996), which needs no table
// and, unlike math/rand's Zipf, accepts exponents at or below 1 as memtier
// does. Rank 1 maps to the first key of the range, so low keys are hot.
type zipfGen struct {
	min            int64
	n              float64
	s              float64
	hIntegralX1    float64
	hIntegralN     float64
	squeezeBoundry float64
}

func newZipfGen(min, n int64, s float64) *zipfGen {
	g := &zipfGen{min: min, n: float64(n), s: s}
	g.hIntegralX1 = g.hIntegral(1.5) - 1
	g.hIntegralN = g.hIntegral(g.n + 0.5)
	g.squeezeBoundry = 2 - g.hIntegralInverse(g.hIntegral(2.5)-g.h(2))
	return g
}

func (g *zipfGen) Next(r *rand.Rand) int64 {
	for {
		u := g.hIntegralN + r.Float64()*(g.hIntegralX1-g.hIntegralN)
		x := g.hIntegralInverse(u)
		k := math.Floor(x + 0.5)
		k = max(1, min(k, g.n))
		if k-x <= g.squeezeBoundry || u >= g.hIntegral(k+0.5)-g.h(k) {
			return g.min + int64(k) - 1
		}
	}
}

// h is the unnormalised density x^-s.
func (g *zipfGen) h(x float64) float64 { return math.Exp(-g.s * math.Log(x)) }

// hIntegral is the antiderivative of h: (x^(1-s) - 1) / (1-s), log(x) at s = 1.
func (g *zipfGen) hIntegral(x float64) float64 {
	lx := math.Log(x)
	return expm1Over((1-g.s)*lx) * lx
}

// hIntegralInverse inverts hIntegral.
func (g *zipfGen) hIntegralInverse(x float64) float64 {
	t := x * (1 - g.s)
	if t < -1 {
		t = -1 // rounding at the far end of the range
	}
	return math.Exp(log1pOver(t) * x)
}

// expm1Over is (e^x - 1) / x, continuous at 0.
func expm1Over(x float64) float64 {
	if math.Abs(x) > 1e-8 {
		return math.Expm1(x) / x
	}
	return 1 + x/2*(1+x/3*(1+x/4))
}

// log1pOver is log(1+x) / x, continuous at 0.
func log1pOver(x float64) float64 {
	if math.Abs(x) > 1e-8 {
		return math.Log1p(x) / x
	}
	return 1 - x*(1.0/2-x*(1.0/3-x/4))
}
