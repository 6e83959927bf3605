// Package nativebucket is the bucket arithmetic of Prometheus native
// histograms, in one place for every histogram the prober keeps: which
// bucket a value falls in and where a bucket ends, for a schema.
//
// Bucket i of schema s holds (2^((i-1)·2^-s), 2^(i·2^-s)]. The bounds are
// Prometheus's own rounded constants, not math.Exp2's (which is off by an
// ulp on a third of them), so a value on a boundary lands in the bucket
// Prometheus and client_golang put it in, and a bound read here is the one
// Prometheus computes for the same index.
package nativebucket

import "math"

// MaxSchema is the finest schema supported here: 16 buckets per power of
// two, a factor of about 1.044. The prober counts at schemas 0 to 3.
const MaxSchema = 4

// fracs are the upper bounds of the 2^MaxSchema buckets of a power of two,
// as fractions of it (the form math.Frexp returns): 2^((j-16)/16), rounded
// as Prometheus's table for schema 4 is. Schema s uses every 2^(4-s)-th.
var fracs = [1 << MaxSchema]float64{
	0.5, 0.5221368912137069, 0.5452538663326288, 0.5693943173783458,
	0.5946035575013605, 0.620928906036742, 0.6484197773255048, 0.6771277734684463,
	0.7071067811865475, 0.7384130729697496, 0.7711054127039704, 0.805245165974627,
	0.8408964152537144, 0.8781260801866495, 0.9170040432046711, 0.9576032806985735,
}

// Index is the bucket of schema s that holds v: the smallest i with
// v <= 2^(i·2^-s). v must be positive and finite; s in [0, MaxSchema]
// (it panics otherwise: schemas are constants of the callers).
func Index(v float64, s int32) int {
	checkSchema(s)
	b := math.Float64bits(v)
	e := int(b >> 52 & 0x7ff)
	if e == 0 {
		// Subnormal: no latency is, so the slow way.
		return indexSearch(v, s)
	}
	// v = frac·2^exp with frac in [0.5, 1), as math.Frexp, from the bits.
	// The top 5 bits of the mantissa cut [0.5, 1) into 32 cells, each
	// holding at most one of the schema's fractions; a cell's table says
	// how many fractions lie below it and which one lies in it.
	exp := e - 1022
	frac := math.Float64frombits(b&(1<<52-1) | 1022<<52)
	c := cells[s][b>>47&31]
	i := int(c.below)
	if c.next < frac {
		i++
	}
	return i + (exp-1)<<s
}

// indexSearch is Index by binary search over the schema's fractions,
// as client_golang finds a bucket.
func indexSearch(v float64, s int32) int {
	frac, exp := math.Frexp(v)
	stride := 1 << (MaxSchema - s)
	lo, hi := 0, 1<<s
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if fracs[mid*stride] < frac {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo + (exp-1)<<s
}

// cell is one 64th of [0.5, 1): how many of a schema's fractions lie
// below it, and the one in it (1 when none, which no frac is below).
type cell struct {
	below uint8
	next  float64
}

// cells are every schema's 32 cells, built once from fracs (read-only
// after).
var cells = func() (t [MaxSchema + 1][32]cell) {
	for s := range t {
		stride := 1 << (MaxSchema - s)
		for c := range t[s] {
			lo, hi := 0.5+float64(c)/64, 0.5+float64(c+1)/64
			t[s][c].next = 1
			for j := range 1 << s {
				f := fracs[j*stride]
				switch {
				case f < lo:
					t[s][c].below++
				case f < hi:
					t[s][c].next = f
				}
			}
		}
	}
	return t
}()

// UpperBound is the upper bound of bucket i of schema s, 2^(i·2^-s), as
// Prometheus computes it (the lower bound is UpperBound(i-1, s)).
func UpperBound(i int, s int32) float64 {
	checkSchema(s)
	n := 1 << s
	frac := fracs[(i&(n-1))<<(MaxSchema-s)]
	return math.Ldexp(frac, i>>s+1)
}

func checkSchema(s int32) {
	if s < 0 || s > MaxSchema {
		panic("nativebucket: schema out of [0, MaxSchema]")
	}
}
