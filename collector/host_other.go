//go:build !linux

package collector

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// unavailable stands for a host collector where this OS has no /proc or
// /sys to read: it describes nothing, and every update is ErrNoData (logged
// at debug, with redis_prober_collector_success 0), never an alarm.
type unavailable string

func (unavailable) describe(chan<- *prometheus.Desc) {}

func (u unavailable) update(chan<- prometheus.Metric) error { return errNotHere(string(u)) }

// errNotHere says what cannot be read on this OS.
func errNotHere(what string) error {
	return fmt.Errorf("%s: not available on this OS: %w", what, ErrNoData)
}
