package collector

import (
	"errors"
	"time"

	"github.com/redis-prober/redis-prober/internal/host"
	"github.com/redis-prober/redis-prober/internal/redisinfo"
)

// HostFacts is what the checks need from the host's /proc and /sys. A
// zero field is unknown.
type HostFacts struct {
	THPEnabled, THPDefrag string           // active modes
	Sysctls               map[string]int64 // by dotted name; absent: unknown
	MemTotalBytes         uint64
	SwapTotalBytes        uint64
	HasMeminfo            bool
	Governors             map[string]int // CPUs per governor; nil: unknown
	NUMANodes             int
}

// ReadHostFacts reads what it can; the error joins the real failures (not
// the "not available here" ones).
func ReadHostFacts(paths host.Paths) (HostFacts, error) {
	var hf HostFacts
	var errs []error
	keep := func(err error) {
		if err != nil && !errors.Is(err, ErrNoData) {
			errs = append(errs, err)
		}
	}
	r := paths.Host()
	if m, err := r.THP("enabled"); err == nil {
		hf.THPEnabled = m.Active
	} else {
		keep(err)
	}
	if m, err := r.THP("defrag"); err == nil {
		hf.THPDefrag = m.Active
	} else {
		keep(err)
	}
	var err error
	hf.Sysctls, err = readSysctls(paths)
	keep(err)
	if mi, err := r.Meminfo(); err == nil {
		hf.MemTotalBytes, hf.SwapTotalBytes, hf.HasMeminfo = deref(mi.MemTotalBytes), deref(mi.SwapTotalBytes), true
	} else {
		keep(err)
	}
	if g, err := r.CPUGovernors(); err == nil {
		hf.Governors = g
	} else {
		keep(err)
	}
	if n, err := r.NUMANodes(); err == nil {
		hf.NUMANodes = n
	} else {
		keep(err)
	}
	return hf, errors.Join(errs...)
}

func deref(v *uint64) uint64 {
	if v == nil {
		return 0
	}
	return *v
}

// Facts are all the inputs of the checks. nil or zero means unknown.
type Facts struct {
	Host    HostFacts
	Info    redisinfo.Info    // nil: Redis not reachable
	Config  map[string]string // nil: CONFIG refused or failed
	Process *ProcessStats     // nil: the Redis process is not visible here
	// Intrinsic is the host's recent worst scheduling jitter.
	Intrinsic    time.Duration
	HasIntrinsic bool
}
