package compare

import "math"

// The statistics of compare: a Welch interval on the logarithms of the
// per-trial figures, so the interval is one of the ratio after/before.
// Latency and throughput spread multiplicatively from trial to trial, which
// the logarithm makes additive; Welch's form does not assume both reports
// are equally noisy.

// meanVar returns the mean and the sample variance of xs.
func meanVar(xs []float64) (mean, variance float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	for _, x := range xs {
		variance += (x - mean) * (x - mean)
	}
	return mean, variance / float64(len(xs)-1)
}

// logRatioInterval returns the estimate and the two-sided (1-alpha)
// interval of log(after/before), from per-trial figures (all > 0, at
// least two per side).
// Quantiles already found are kept in quantiles by degrees of freedom (nil:
// no memo); alpha is the same for every figure of a comparison.
func logRatioInterval(before, after []float64, alpha float64, quantiles map[float64]float64) (est, lo, hi float64) {
	lb, la := logs(before), logs(after)
	mb, vb := meanVar(lb)
	ma, va := meanVar(la)
	est = ma - mb
	sb, sa := vb/float64(len(lb)), va/float64(len(la))
	se := math.Sqrt(sb + sa)
	if se == 0 {
		return est, est, est
	}
	// Welch–Satterthwaite degrees of freedom.
	df := (sb + sa) * (sb + sa) / (sb*sb/float64(len(lb)-1) + sa*sa/float64(len(la)-1))
	// Tiny variances can underflow the squares to 0 (df +Inf or NaN);
	// df lies between the smaller sample's and the sum's, so clamp to it.
	df = clampDF(df, float64(min(len(lb), len(la))-1), float64(len(lb)+len(la)-2))
	t, ok := quantiles[df]
	if !ok {
		t = studentQuantile(1-alpha/2, df)
		if quantiles != nil {
			quantiles[df] = t
		}
	}
	return est, est - t*se, est + t*se
}

// power is the chance that a change of the minimum detectable size is
// detected: four times in five, as sample sizes are usually planned.
const power = 0.8

// MaxAdvisedTrials caps the trials a side compare works out and advises:
// past it the spread, not the count, is what to fix.
const MaxAdvisedTrials = 1000

// minDetectable is the minimum detectable effect, in logarithms, of nb and
// na trials whose logarithms have the variances v (before, after): a true
// change that large is detected with the given power at the two-sided
// level alpha. Quantiles already found are kept in memo by probability
// and degrees of freedom (nil: no memo).
func minDetectable(v [2]float64, nb, na int, alpha float64, memo map[[2]float64]float64) float64 {
	sb, sa := v[0]/float64(nb), v[1]/float64(na)
	se := math.Sqrt(sb + sa)
	if se == 0 {
		return 0
	}
	df := (sb + sa) * (sb + sa) / (sb*sb/float64(nb-1) + sa*sa/float64(na-1))
	df = clampDF(df, float64(min(nb, na)-1), float64(nb+na-2))
	q := func(p float64) float64 {
		t, ok := memo[[2]float64{p, df}]
		if !ok {
			t = studentQuantile(p, df)
			if memo != nil {
				memo[[2]float64{p, df}] = t
			}
		}
		return t
	}
	return (q(1-alpha/2) + q(power)) * se
}

// trialsToDetect is the fewest trials a side (at least MinTrials, at most
// MaxAdvisedTrials) whose minimum detectable effect is within change (in
// logarithms), if their spread stays v.
func trialsToDetect(v [2]float64, change, alpha float64) int {
	ok := func(n int) bool { return minDetectable(v, n, n, alpha, nil) <= change }
	if ok(MinTrials) {
		return MinTrials
	}
	lo, hi := MinTrials, MinTrials*2 // lo fails
	for !ok(hi) {
		if hi >= MaxAdvisedTrials {
			return MaxAdvisedTrials
		}
		lo, hi = hi, min(hi*2, MaxAdvisedTrials)
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

func clampDF(df, lo, hi float64) float64 {
	if math.IsNaN(df) || df > hi {
		return hi
	}
	return max(df, lo)
}

func logs(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = math.Log(x)
	}
	return out
}

// studentQuantile is the p-quantile (p > 0.5) of Student's t with df
// degrees of freedom, by bisection on the distribution function.
func studentQuantile(p, df float64) float64 {
	lo, hi := 0.0, 1.0
	for studentCDF(hi, df) < p && hi < 1e12 {
		hi *= 2
	}
	for range 200 {
		if hi-lo <= 1e-12*hi {
			break
		}
		mid := (lo + hi) / 2
		if studentCDF(mid, df) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// studentCDF is P(T <= t) for t >= 0.
func studentCDF(t, df float64) float64 {
	x := df / (df + t*t)
	return 1 - 0.5*regIncBeta(df/2, 0.5, x)
}

// regIncBeta is the regularized incomplete beta function I_x(a, b),
// evaluated by its continued fraction (modified Lentz's method).
func regIncBeta(a, b, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(lab - la - lb + a*math.Log(x) + b*math.Log(1-x))
	// The fraction converges fast for x below the mean; use the symmetry
	// I_x(a,b) = 1 - I_{1-x}(b,a) above it.
	if x > (a+1)/(a+b+2) {
		return 1 - front*betaFraction(b, a, 1-x)/b
	}
	return front * betaFraction(a, b, x) / a
}

func betaFraction(a, b, x float64) float64 {
	const tiny = 1e-300
	c, d := 1.0, 1-(a+b)*x/(a+1)
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	f := d
	for m := 1; m <= 300; m++ {
		fm := float64(m)
		// Even step.
		num := fm * (b - fm) * x / ((a + 2*fm - 1) * (a + 2*fm))
		d = 1 + num*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + num/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		f *= d * c
		// Odd step.
		num = -(a + fm) * (a + b + fm) * x / ((a + 2*fm) * (a + 2*fm + 1))
		d = 1 + num*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + num/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		delta := d * c
		f *= delta
		if math.Abs(delta-1) < 1e-12 {
			break
		}
	}
	return f
}
