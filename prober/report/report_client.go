package report

import (
	"github.com/redis-prober/redis-prober/prober/burst"
)

// ClientReport is how the load generator itself kept its schedule: what
// timed the requests, how late it sent them (never charged to Redis), how
// much of its rate it delivered and the CPU it used. A run or step whose
// client fell behind is client-bound, a statement about this host, not
// about Redis.
type ClientReport struct {
	// Clock is "kernel" (every measured request by its SO_TIMESTAMPING
	// stamps), "user" (the prober's own clock: a unix socket, another
	// system) or "mixed".
	Clock       string        `json:"clock"`
	StampedOps  int64         `json:"stamped_ops"`
	ScheduleLag LatencyReport `json:"schedule_lag"`
	// Achieved is the measured throughput over the plan's rate (1 unpaced).
	Achieved float64 `json:"achieved_ratio"`
	CPUCores float64 `json:"cpu_cores"`
}

// NewClientReport describes r's client.
func NewClientReport(r *burst.Result) ClientReport {
	return ClientReport{Clock: r.Clock(), StampedOps: r.Stamped, ScheduleLag: newLatencyReport(r.Lag, nil),
		Achieved: r.Achieved(), CPUCores: r.ClientCPU}
}
