package host

import (
	"errors"
	"fmt"

	"github.com/prometheus/procfs"
)

// Meminfo is /proc/meminfo, parsed by procfs (at most 1 MiB read; a
// malformed line is an error). Its *Bytes fields are in bytes; nil is
// absent.
func (r Reader) Meminfo() (procfs.Meminfo, error) {
	fsys, err := r.procFS()
	if err != nil {
		return procfs.Meminfo{}, err
	}
	mi, err := fsys.Meminfo()
	if err != nil {
		return procfs.Meminfo{}, classify(r.proc("meminfo"), err)
	}
	return mi, nil
}

// Pressure is the cumulative stall time of /proc/pressure/memory.
type Pressure struct {
	SomeMicros, FullMicros uint64
	HasFull                bool
}

// MemoryPressure reads /proc/pressure/memory with procfs. A file without
// a "some" line is an error.
func (r Reader) MemoryPressure() (Pressure, error) {
	fsys, err := r.procFS()
	if err != nil {
		return Pressure{}, err
	}
	path := r.proc("pressure", "memory")
	st, err := fsys.PSIStatsForResource("memory")
	if err != nil {
		if c := classify(path, err); errors.Is(c, ErrNoData) {
			return Pressure{}, c
		}
		return Pressure{}, fmt.Errorf("pressure: %s: %w", path, err)
	}
	if st.Some == nil {
		return Pressure{}, fmt.Errorf("pressure: no some line in %s", path)
	}
	p := Pressure{SomeMicros: st.Some.Total}
	if st.Full != nil {
		p.FullMicros, p.HasFull = st.Full.Total, true
	}
	return p, nil
}
