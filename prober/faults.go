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

// NewNodeFaultLog returns the FaultLog of a node whose spells of Redis not
// answering are node's, shared with its collectors.
func NewNodeFaultLog(log *slog.Logger, node *faultlog.Node) *FaultLog {
	return faultlog.NodeProbe(log, node)
}
