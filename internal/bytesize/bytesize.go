// Package bytesize writes byte counts as people read them.
package bytesize

import (
	"math"
	"strconv"
	"strings"
)

// iecUnits are the IEC prefixes above bytes, each 1024 times the last.
const iecUnits = "KMGTPE"

// IEC formats a byte count as people read it, for the Markdown and
// terminal outputs (JSON and logs keep the count): in the largest IEC unit that
// keeps the figure at 1 or more, to three significant digits without
// trailing zeros. 268435456 is "256 MiB", 1536 "1.5 KiB", 1040464 "1016
// KiB", 512 "512 B".
func IEC(n int64) string {
	f := math.Abs(float64(n))
	if f < 1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	u := -1
	for f >= 1024 && u < len(iecUnits)-1 {
		f /= 1024
		u++
	}
	s := threeDigits(f)
	if s == "1024" && u < len(iecUnits)-1 {
		// 1023.6 KiB rounds to 1024 KiB, which reads better as 1 MiB.
		u++
		s = threeDigits(f / 1024)
	}
	sign := ""
	if n < 0 {
		sign = "-"
	}
	return sign + s + " " + iecUnits[u:u+1] + "iB"
}

// threeDigits formats f (from 1 to 1024) to three significant digits, or
// all of its whole part, without trailing zeros.
func threeDigits(f float64) string {
	dec := 0
	switch {
	case f < 10:
		dec = 2
	case f < 100:
		dec = 1
	}
	s := strconv.FormatFloat(f, 'f', dec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
