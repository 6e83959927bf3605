package prober

import (
	"log/slog"

	"github.com/redis-prober/redis-prober/internal/faultlog"
)

// FaultLog is the fault log of one node's probe and connect probe: a
// faultlog.Probe log, whose spells run across the commands.
type FaultLog = faultlog.Log

// NewFaultLog returns a FaultLog writing to log.
func NewFaultLog(log *slog.Logger) *FaultLog { return faultlog.Probe(log) }
