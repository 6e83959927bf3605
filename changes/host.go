package changes

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis-prober/redis-prober/collector"
	"github.com/redis-prober/redis-prober/internal/host"
	"github.com/redis-prober/redis-prober/prober"
)

// hostState is what the change watcher remembers of the prober's host (the
// Redis host too when Redis runs beside the prober, or when its /proc and
// /sys are mounted under --path.procfs and --path.sysfs). An empty field
// or a missing sysctl is unknown, never a change.
type hostState struct {
	kernel                string
	thpEnabled, thpDefrag string
	sysctls               map[string]int64
}

// readHost reads the kernel release, the THP modes and the tuning sysctls
// through the host reader the collectors use. What cannot be read stays
// unknown.
func readHost(paths host.Paths) hostState {
	facts, _ := collector.ReadHostFacts(paths) // partial facts are fine here
	kernel, _ := paths.Host().KernelRelease()  // unreadable: unknown
	return hostState{kernel: kernel, thpEnabled: facts.THPEnabled, thpDefrag: facts.THPDefrag, sysctls: facts.Sysctls}
}

// diffHost lists the changes from old to cur, each kind at most once.
func diffHost(old, cur hostState) []change {
	var out []change
	if d := arrow("kernel", old.kernel, cur.kernel); d != "" {
		out = append(out, change{kind: KindKernel, details: []string{d}})
	}
	var thp []string
	for _, d := range []string{
		arrow("transparent_hugepage/enabled", old.thpEnabled, cur.thpEnabled),
		arrow("transparent_hugepage/defrag", old.thpDefrag, cur.thpDefrag),
	} {
		if d != "" {
			thp = append(thp, d)
		}
	}
	if len(thp) > 0 {
		out = append(out, change{kind: KindTHP, details: thp})
	}
	var sys []string
	for _, name := range collector.SysctlNames() {
		ov, ok1 := old.sysctls[name]
		nv, ok2 := cur.sysctls[name]
		if ok1 && ok2 && ov != nv {
			sys = append(sys, fmt.Sprintf("%s: %d → %d", name, ov, nv))
		}
	}
	if len(sys) > 0 {
		out = append(out, change{kind: KindSysctl, details: sys})
	}
	return out
}

// merge keeps what cur knows and what only old knew, so a file that cannot
// be read for a moment is not a change when it comes back.
func (old hostState) merge(cur hostState) hostState {
	keep := func(o, c string) string {
		if c == "" {
			return o
		}
		return c
	}
	m := hostState{kernel: keep(old.kernel, cur.kernel), thpEnabled: keep(old.thpEnabled, cur.thpEnabled),
		thpDefrag: keep(old.thpDefrag, cur.thpDefrag), sysctls: map[string]int64{}}
	for k, v := range old.sysctls {
		m.sysctls[k] = v
	}
	for k, v := range cur.sysctls {
		m.sysctls[k] = v
	}
	return m
}

// hostCache reads the host at most once per interval for the whole
// process, however many targets ask, and logs a host change once.
type hostCache struct {
	paths    host.Paths
	interval time.Duration
	log      *slog.Logger
	metrics  *prober.Metrics // counts each host change once

	mu    sync.Mutex
	at    time.Time
	state hostState
	have  bool
}

func (h *hostCache) get(now time.Time) hostState {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.have && now.Sub(h.at) < h.interval {
		return h.state
	}
	cur := readHost(h.paths)
	if h.have {
		cur = h.state.merge(cur)
		for _, c := range diffHost(h.state, cur) {
			h.log.Info("host change detected", "kind", c.kind, "changed", strings.Join(c.details, ", "))
			h.metrics.HostChange(c.kind, now)
		}
	}
	h.state, h.at, h.have = cur, now, true
	return cur
}

// kindsOf lists the kinds of changes, for tests and logs.
func kindsOf(cs []change) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.kind
	}
	slices.Sort(out)
	return out
}
