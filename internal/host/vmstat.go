package host

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// ParseVMStat parses the "name value" lines of /proc/vmstat. procfs has no
// parser for this file (its VM type is /proc/sys/vm).
func ParseVMStat(b []byte) (map[string]uint64, error) {
	out := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 {
			return nil, fmt.Errorf("vmstat: malformed line %q", sc.Text())
		}
		v, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("vmstat: %s: %w", f[0], err)
		}
		out[f[0]] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("vmstat: %w", err)
	}
	return out, nil
}

// VMStat reads /proc/vmstat.
func (r Reader) VMStat() (map[string]uint64, error) {
	b, err := readFile(r.proc("vmstat"))
	if err != nil {
		return nil, err
	}
	return ParseVMStat(b)
}
