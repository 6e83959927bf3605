package host

import (
	"fmt"
	"strings"
)

// THPMode is one transparent-huge-pages setting: the modes the kernel
// offers and the active one (the bracketed word).
type THPMode struct {
	Modes  []string
	Active string
}

// ParseTHPMode parses a /sys/kernel/mm/transparent_hugepage file such as
// "always [madvise] never". Exactly one mode must be bracketed. procfs and
// its sysfs package have no parser for these files: this is the one in the
// tree.
func ParseTHPMode(s string) (THPMode, error) {
	var m THPMode
	for _, w := range strings.Fields(s) {
		if strings.HasPrefix(w, "[") && strings.HasSuffix(w, "]") && len(w) > 2 {
			if m.Active != "" {
				return THPMode{}, fmt.Errorf("two active modes in %q", s)
			}
			w = w[1 : len(w)-1]
			m.Active = w
		}
		if strings.ContainsAny(w, "[]") {
			return THPMode{}, fmt.Errorf("malformed mode %q", w)
		}
		m.Modes = append(m.Modes, w)
	}
	if m.Active == "" {
		return THPMode{}, fmt.Errorf("no active mode in %q", s)
	}
	return m, nil
}

// THP reads one THP file: "enabled" or "defrag".
func (r Reader) THP(file string) (THPMode, error) {
	s, err := readTrimmed(r.sys("kernel", "mm", "transparent_hugepage", file))
	if err != nil {
		return THPMode{}, err
	}
	m, err := ParseTHPMode(s)
	if err != nil {
		return THPMode{}, fmt.Errorf("transparent_hugepage/%s: %w", file, err)
	}
	return m, nil
}
