package prober

import (
	"errors"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/internal/faultlog"
)

// FaultLog is the fault log of one node's probe and connect probe: a
// faultlog.Probe log, whose spells run across the commands, with a nil
// reply (redis.Nil) counted as an answer.
type FaultLog struct {
	spells *faultlog.Log
	log    *slog.Logger // the probe's one-off lines (no kernel timestamps)
}

// NewFaultLog returns a FaultLog writing to log.
func NewFaultLog(log *slog.Logger) *FaultLog {
	spells := faultlog.Probe(log)
	return &FaultLog{spells: spells, log: spells.Logger()}
}

// Observe takes every probe outcome; the success path is one atomic load
// while nothing fails.
func (f *FaultLog) Observe(what string, err error, answered bool) {
	if errors.Is(err, redis.Nil) {
		err = nil
	}
	f.spells.Observe(what, err, answered)
}
