package collector

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// ProcessStats is what /proc says about the redis-server process.
type ProcessStats struct {
	PID                 int
	RSSBytes            uint64
	SwapBytes           uint64
	AnonHugePagesBytes  uint64
	HasAnonHugePages    bool // smaps_rollup needs ptrace-read access
	VoluntarySwitches   uint64
	InvoluntarySwitches uint64
	OpenFilesLimit      uint64 // soft limit; 0 when unlimited or unknown
	HasOpenFilesLimit   bool
	CPUsAllowed         int // 0 when unknown
	NUMANodesAllowed    int // 0 when unknown
	// Started is when the process started (/proc/<pid>/stat), since when
	// its context switches count; zero when unknown.
	Started time.Time
	started *timestamppb.Timestamp // the same, made once a read for every scrape
}

// processDescs are the series of the process collector.
type processDescs struct {
	swap, rss, anonHuge, openFiles, switches, cpus, nodes targetDesc
}

func newProcessDescs() processDescs {
	return processDescs{
		swap: newTargetDesc("redis_prober_process_swap_bytes",
			"Memory of the redis-server process that sits in swap (/proc/<pid>/status VmSwap); any is a latency hazard."),
		rss: newTargetDesc("redis_prober_process_rss_bytes",
			"Resident memory of the redis-server process (/proc/<pid>/status VmRSS)."),
		anonHuge: newTargetDesc("redis_prober_process_anon_hugepages_bytes",
			"Memory of the redis-server process backed by transparent huge pages (/proc/<pid>/smaps_rollup AnonHugePages)."),
		openFiles: newTargetDesc("redis_prober_process_open_files_limit",
			"Soft open-files limit of the redis-server process (/proc/<pid>/limits)."),
		switches: newTargetDesc("redis_prober_process_context_switches_total",
			"Context switches of the redis-server main thread, by kind (voluntary, involuntary: preempted by another task).",
			"kind"),
		cpus: newTargetDesc("redis_prober_process_cpus_allowed",
			"CPUs the redis-server process may run on (/proc/<pid>/status Cpus_allowed_list)."),
		nodes: newTargetDesc("redis_prober_process_numa_nodes_allowed",
			"NUMA nodes the redis-server process may allocate from (/proc/<pid>/status Mems_allowed_list)."),
	}
}

func (d processDescs) describe(ch chan<- *prometheus.Desc) {
	for _, x := range []targetDesc{d.swap, d.rss, d.anonHuge, d.openFiles, d.switches, d.cpus, d.nodes} {
		ch <- x.Desc
	}
}

func (d processDescs) emit(out *sink, sl *seriesLabels, ps *ProcessStats) {
	if ps == nil {
		return
	}
	gauge := func(desc targetDesc, v float64) {
		out.series(desc, prometheus.GaugeValue, v, sl)
	}
	gauge(d.swap, float64(ps.SwapBytes))
	gauge(d.rss, float64(ps.RSSBytes))
	if ps.HasAnonHugePages {
		gauge(d.anonHuge, float64(ps.AnonHugePagesBytes))
	}
	if ps.HasOpenFilesLimit {
		gauge(d.openFiles, float64(ps.OpenFilesLimit))
	}
	start := ps.started
	if start == nil || !start.AsTime().Equal(ps.Started) {
		start = startStamp(ps.Started) // a ProcessStats made elsewhere (a test)
	}
	out.counter(d.switches, float64(ps.VoluntarySwitches), start, sl, "voluntary")
	out.counter(d.switches, float64(ps.InvoluntarySwitches), start, sl, "involuntary")
	if ps.CPUsAllowed > 0 {
		gauge(d.cpus, float64(ps.CPUsAllowed))
	}
	if ps.NUMANodesAllowed > 0 {
		gauge(d.nodes, float64(ps.NUMANodesAllowed))
	}
}
