package host

import (
	"bytes"
	"fmt"
	"strconv"
	"time"
)

// ParseBootTime reads the btime line of /proc/stat: the Unix second the
// host booted, rounded down, so it is never after the boot. It is the
// start of every host counter since boot (/proc/vmstat, /proc/pressure).
func ParseBootTime(b []byte) (time.Time, error) {
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		v, ok := bytes.CutPrefix(line, []byte("btime "))
		if !ok {
			continue
		}
		sec, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
		if err != nil || sec <= 0 {
			return time.Time{}, fmt.Errorf("stat: btime %q is not a positive integer", v)
		}
		return time.Unix(sec, 0), nil
	}
	return time.Time{}, fmt.Errorf("stat: no btime line: %w", ErrNoData)
}

// BootTime reads the host's boot time from /proc/stat.
func (r Reader) BootTime() (time.Time, error) {
	if err := supported(); err != nil {
		return time.Time{}, err
	}
	b, err := readFile(r.proc("stat"))
	if err != nil {
		return time.Time{}, err
	}
	return ParseBootTime(b)
}
