package explain

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/redis-prober/redis-prober/internal/redisinfo"
)

// KeyKind is a kind of key INFO KEYSIZES bins (Redis 8+): strings by their
// length in bytes, the collections by their items.
type KeyKind uint8

// The kinds, in the order they are said.
const (
	Strings KeyKind = iota
	Lists
	Sets
	Zsets
	Hashes
	numKeyKinds
)

// keysizesFields are the INFO field suffixes of each kind
// (db<n>_distrib_<suffix>), and what a bin counts.
var keysizesFields = [numKeyKinds]struct{ suffix, name, unit string }{
	Strings: {"strings_sizes", "strings", "bytes"},
	Lists:   {"lists_items", "lists", "items"},
	Sets:    {"sets_items", "sets", "items"},
	Zsets:   {"zsets_items", "zsets", "items"},
	Hashes:  {"hashes_items", "hashes", "items"},
}

// KeySizes is the largest bin of INFO KEYSIZES that holds a key, of each
// kind, over every database: Largest[k] is the bin's lower bound (a power
// of two: its keys are of Largest[k] up to twice that), 0 when no key of
// that kind is binned (or the server has no KEYSIZES).
type KeySizes struct {
	Largest [numKeyKinds]uint64
}

// Empty reports whether no kind has a binned key.
func (k KeySizes) Empty() bool { return k == KeySizes{} }

// String says the largest bin of each kind that has one: "strings of
// 2M-4M bytes, hashes of 64K-128K items".
func (k KeySizes) String() string {
	var parts []string
	for kind, lo := range k.Largest {
		if lo == 0 {
			continue
		}
		f := keysizesFields[kind]
		if lo >= 1<<63 { // the top bin: twice it is past 64 bits
			parts = append(parts, fmt.Sprintf("%s of %s %s or more", f.name, binText(lo), f.unit))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s of %s-%s %s", f.name, binText(lo), binText(2*lo), f.unit))
	}
	return strings.Join(parts, ", ")
}

// binText writes a bin bound as INFO does (1024-based K, M, G, T).
func binText(v uint64) string {
	for _, u := range []string{"", "K", "M", "G", "T", "P"} {
		if v < 1024 || v%1024 != 0 {
			return strconv.FormatUint(v, 10) + u
		}
		v /= 1024
	}
	return strconv.FormatUint(v, 10) + "E"
}

// parseKeySizes reads the Keysizes section of an INFO reply: fields
// db<n>_distrib_<kind>_<sizes|items> whose value is comma-separated
// bin=count pairs, the bin a power of two written with a 1024-based unit
// ("8=1000,256K=1,2M=1"). A field of a kind not known, or malformed in any
// way, is skipped whole; a server without the section (Redis before 8,
// Valkey) gives an empty KeySizes. One pass over the reply's fields,
// which redisinfo.Parse bounds.
func parseKeySizes(info redisinfo.Info) KeySizes {
	var out KeySizes
	for k, v := range info {
		rest, ok := strings.CutPrefix(k, "db")
		if !ok {
			continue
		}
		db, suffix, ok := strings.Cut(rest, "_distrib_")
		if !ok || db == "" || strings.Trim(db, "0123456789") != "" {
			continue
		}
		for kind, f := range keysizesFields {
			if suffix != f.suffix {
				continue
			}
			if lo, ok := largestBin(v); ok {
				out.Largest[kind] = max(out.Largest[kind], lo)
			}
		}
	}
	return out
}

// maxBins bounds the bins of one field: a 64-bit size has 64 powers of two.
const maxBins = 64

// largestBin is the largest bin of one field that holds a key; ok is
// false when the field is malformed.
func largestBin(v string) (uint64, bool) {
	var largest uint64
	n := 0
	for pair := range strings.SplitSeq(v, ",") {
		if n++; n > maxBins {
			return 0, false
		}
		bin, count, ok := strings.Cut(pair, "=")
		if !ok {
			return 0, false
		}
		lo, ok := parseBin(bin)
		if !ok {
			return 0, false
		}
		c, err := strconv.ParseUint(count, 10, 64)
		if err != nil {
			return 0, false
		}
		if c > 0 {
			largest = max(largest, lo)
		}
	}
	return largest, true
}

// parseBin reads a bin's lower bound: digits and an optional K, M, G, T,
// P or E (powers of 1024). It must be a power of two, as Redis's are (0 is
// the bin of empty strings).
func parseBin(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	shift := 0
	switch s[len(s)-1] {
	case 'K':
		shift = 10
	case 'M':
		shift = 20
	case 'G':
		shift = 30
	case 'T':
		shift = 40
	case 'P':
		shift = 50
	case 'E':
		shift = 60
	}
	if shift > 0 {
		s = s[:len(s)-1]
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n > math.MaxUint64>>shift {
		return 0, false
	}
	n <<= shift
	if n&(n-1) != 0 {
		return 0, false
	}
	return n, true
}
