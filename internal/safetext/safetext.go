// Package safetext makes text from outside the prober (Redis replies, report
// files) safe to print for a person: terminal escape sequences, other
// control characters and invalid UTF-8 are shown as Go escapes (\x1b, \r,
// \u202e, \xff) instead of being sent raw to a terminal or a document.
package safetext

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable returns s with every rune that is not printable (control
// characters such as ESC, CR and NUL; format characters such as the
// bidirectional overrides; invalid UTF-8 bytes) replaced by its Go escape,
// as strconv.Quote writes it. Printable text, spaces included, is kept as
// it is, so ordinary values read the same.
func Printable(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])>>4, 16))
			b.WriteString(strconv.FormatUint(uint64(s[i])&0xf, 16))
		case ok(r):
			b.WriteString(s[i : i+size])
		default:
			q := strconv.QuoteRune(r) // '\x1b', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}

func clean(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			// Not plain printable ASCII: look at the runes.
			for _, r := range s[i:] { // invalid bytes come as RuneError
				if r == utf8.RuneError || !ok(r) {
					return false
				}
			}
			return true
		}
	}
	return true
}

// ok tells a rune that may be printed as it is. U+FFFD itself is kept
// only when it was in the text (DecodeRune's error case is handled apart).
func ok(r rune) bool {
	return r == ' ' || unicode.IsPrint(r)
}

// Label makes text from outside the prober safe as a Prometheus label
// value: invalid UTF-8 and every rune that is not printable become U+FFFD
// (client_golang refuses invalid UTF-8; control characters break
// dashboards and terminals), and the result is cut to at most max bytes on
// a rune boundary. Clean text comes back unchanged, without an allocation.
func Label(s string, max int) string {
	if len(s) <= max && clean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(min(len(s), max))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		if r == utf8.RuneError || !ok(r) {
			r = utf8.RuneError // also for a genuine U+FFFD: the same bytes
		}
		if b.Len()+utf8.RuneLen(r) > max {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}
