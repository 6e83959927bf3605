package bytesize

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Parse reads a byte count as a person writes it: a whole number of bytes
// ("512", "512B") or a number in an IEC unit ("16MiB", "1.5 GiB", "64kib").
// Decimal and one-letter units ("16MB", "16M") are refused: Redis reads
// "1mb" as 1024² bytes and "1m" as 10⁶, Prometheus "1MB" as 1024², so
// either reading would surprise someone.
func Parse(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.TrimSpace(t[i:])
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" {
		return 0, fmt.Errorf("%q is not a size (examples: 512, 32B, 64KiB, 16MiB)", s)
	}
	mult := 1.0
	switch u := strings.ToLower(unit); u {
	case "", "b":
	default:
		k := strings.IndexByte(strings.ToLower(iecUnits), u[0])
		if len(u) != 3 || u[1:] != "ib" || k < 0 {
			return 0, fmt.Errorf("%q: unit %q is not B, KiB, MiB, GiB, TiB, PiB or EiB (1024-based; MB and M are refused as ambiguous)", s, unit)
		}
		mult = math.Pow(1024, float64(k+1))
	}
	n := f * mult
	if n != math.Trunc(n) {
		return 0, fmt.Errorf("%q is not a whole number of bytes", s)
	}
	if n >= math.MaxInt64 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int64(n), nil
}

// Format writes n as Parse reads it back, exactly: in the largest IEC unit
// that divides it ("16MiB", "1536KiB"), else in bytes ("1000B").
func Format(n int64) string {
	if n == 0 {
		return "0B"
	}
	u := -1
	for m := n; m%1024 == 0 && u < len(iecUnits)-1; m /= 1024 {
		u++
	}
	if u < 0 {
		return strconv.FormatInt(n, 10) + "B"
	}
	return strconv.FormatInt(n>>(10*(u+1)), 10) + iecUnits[u:u+1] + "iB"
}
