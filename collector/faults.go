package collector

import (
	"errors"
	"log/slog"
	"sync"
)

// faultLog logs a collector's fault once, not once per scrape: "not
// available here" at debug, anything else at warn, and again only when the
// error changes or the collector recovers.
type faultLog struct {
	log  *slog.Logger
	mu   sync.Mutex
	last map[string]string
}

func newFaultLog(log *slog.Logger) *faultLog {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &faultLog{log: log, last: map[string]string{}}
}

func (f *faultLog) observe(collector string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	prev, failing := f.last[collector]
	if err == nil {
		if failing {
			delete(f.last, collector)
			f.log.Debug("collector recovered", "collector", collector)
		}
		return
	}
	msg := err.Error()
	if failing && prev == msg {
		return
	}
	f.last[collector] = msg
	if errors.Is(err, ErrNoData) {
		f.log.Debug("collector has no data here", "collector", collector, "err", msg)
		return
	}
	f.log.Warn("collector failed", "collector", collector, "err", msg)
}
