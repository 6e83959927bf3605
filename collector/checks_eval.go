package collector

// Evaluators and formatting the checks share.

import (
	"fmt"
	"strconv"
)

func thpCheck(active, file string) (Status, string) {
	switch active {
	case "":
		return StatusUnknown, "/sys/kernel/mm/transparent_hugepage/" + file + " not readable"
	case "always":
		return StatusFail, file + " = always"
	}
	return StatusPass, file + " = " + active
}

func backlogCheck(f *Facts, sysctl string) (Status, string) {
	v, ok := f.Host.Sysctls[sysctl]
	if !ok {
		return StatusUnknown, sysctl + " not readable"
	}
	backlog, ok := configInt(f, "tcp-backlog", "")
	if !ok {
		return StatusUnknown, "tcp-backlog not readable (CONFIG refused)"
	}
	val := fmt.Sprintf("%s = %d, tcp-backlog %d", sysctl, v, backlog)
	if v >= backlog {
		return StatusPass, val
	}
	return StatusFail, val
}

func maxmemoryCheck(f *Facts) (Status, string) {
	maxmem, ok := configInt(f, "maxmemory", "maxmemory")
	if !ok {
		return StatusUnknown, "maxmemory not readable"
	}
	ram, hasRAM := int64(0), false
	if v, ok := f.Info.Int("total_system_memory"); ok && v > 0 {
		ram, hasRAM = v, true
	} else if f.Process != nil && f.Host.HasMeminfo {
		ram, hasRAM = int64(f.Host.MemTotalBytes), true
	}
	if maxmem == 0 {
		val := "maxmemory 0 (no limit)"
		if hasRAM {
			val += fmt.Sprintf(", RAM %s: set at most %s", humanBytes(uint64(ram)), humanBytes(uint64(ram)*7/10))
		}
		return StatusFail, val
	}
	if !hasRAM {
		return StatusUnknown, fmt.Sprintf("maxmemory %s, host RAM unknown", humanBytes(uint64(maxmem)))
	}
	val := fmt.Sprintf("maxmemory %s of %s RAM (%.0f%%)", humanBytes(uint64(maxmem)), humanBytes(uint64(ram)), 100*float64(maxmem)/float64(ram))
	if float64(maxmem) <= 0.7*float64(ram) {
		return StatusPass, val
	}
	return StatusFail, val + fmt.Sprintf(": set at most %s", humanBytes(uint64(ram)*7/10))
}

// forkPerGBLimit is the fork time per GB above which forks are slow.
const forkPerGBLimit = 0.020

func forkCheck(f *Facts) (Status, string) {
	usec, ok := f.Info.Int("latest_fork_usec")
	if !ok {
		return StatusUnknown, "latest_fork_usec not in INFO"
	}
	if usec <= 0 {
		return StatusUnknown, "no fork since the server started"
	}
	rss, _ := f.Info.Int("used_memory_rss")
	// A fork has a fixed cost; on a small instance judge the fork as if
	// it were 1 GB rather than extrapolate a microsecond to a gigabyte.
	gb := max(float64(rss), 1e9) / 1e9
	perGB := float64(usec) / 1e6 / gb
	val := fmt.Sprintf("latest fork %.2f ms for %s RSS: %.1f ms per GB", float64(usec)/1e3, humanBytes(uint64(max(rss, 0))), perGB*1e3)
	if perGB < forkPerGBLimit {
		return StatusPass, val
	}
	return StatusFail, val + " (want < 20 ms per GB)"
}

// configInt reads an integer setting from CONFIG, or from INFO when the
// server also reports it there (infoKey "" when it does not).
func configInt(f *Facts, key, infoKey string) (int64, bool) {
	if v, ok := f.Config[key]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		return n, err == nil
	}
	if infoKey != "" {
		return f.Info.Int(infoKey)
	}
	return 0, false
}

func aofEnabled(f *Facts) (on, ok bool) {
	if v, ok := f.Info.Int("aof_enabled"); ok {
		return v == 1, true
	}
	if v, ok := f.Config["appendonly"]; ok {
		return v == "yes", true
	}
	return false, false
}

func humanBytes(b uint64) string {
	const unit = 1024
	if b < unit {
		return fmt.Sprintf("%d B", b)
	}
	div, exp := uint64(unit), 0
	for n := b / unit; n >= unit && exp < 4; n /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(b)/float64(div), "KMGTP"[exp])
}
