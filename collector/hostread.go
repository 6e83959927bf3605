package collector

import (
	"errors"

	"github.com/redis-prober/redis-prober/internal/host"
)

// Host returns the host reader over these roots: the one reader of /proc
// and /sys that the collectors, the change watcher and the burst report's
// environment snapshot share.
func (p Paths) Host() host.Reader { return host.New(p.ProcFS, p.SysFS) }

// THPMode is one transparent-huge-pages setting (host.THPMode).
type THPMode = host.THPMode

// hostErr marks the host reader's "not available here" (host.ErrNoData)
// as the collectors' ErrNoData, so it is logged at debug, not as an alarm.
// Its text is the reader's.
func hostErr(err error) error {
	if err != nil && errors.Is(err, host.ErrNoData) && !errors.Is(err, ErrNoData) {
		return noData{err}
	}
	return err
}

type noData struct{ error }

func (noData) Is(target error) bool { return target == ErrNoData }

func (e noData) Unwrap() error { return e.error }
