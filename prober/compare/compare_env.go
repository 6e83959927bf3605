package compare

import (
	"slices"
	"strconv"

	"github.com/redis-prober/redis-prober/internal/redisinfo"
	"github.com/redis-prober/redis-prober/prober/report"
)

// EnvDifference is one environment setting that differs.
type EnvDifference struct {
	Name   string `json:"name"`
	Before string `json:"before"`
	After  string `json:"after"`
}

// EnvDiff lists what differs between the two reports' environments (and
// the tolerated plan differences), in name order; config parameters and
// sysctls go by their own names.
func EnvDiff(before, after *report.Report) []EnvDifference {
	b, a := flattenReport(before), flattenReport(after)
	var names []string
	for k := range b {
		names = append(names, k)
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	var out []EnvDifference
	for _, k := range names {
		bv, bok := b[k]
		av, aok := a[k]
		if bok && aok && bv == av {
			continue
		}
		if !bok {
			bv = "(unknown)"
		}
		if !aok {
			av = "(unknown)"
		}
		out = append(out, EnvDifference{Name: k, Before: bv, After: av})
	}
	return out
}

func flattenReport(r *report.Report) map[string]string {
	m := map[string]string{
		"target":          r.Target,
		"plan.test_time":  strconv.FormatFloat(r.Plan.TestTimeSeconds, 'f', -1, 64) + "s",
		"plan.requests":   strconv.FormatInt(r.Plan.Requests, 10),
		"plan.warmup":     strconv.FormatFloat(r.Plan.WarmupSeconds, 'f', -1, 64) + "s",
		"plan.timeout":    strconv.FormatFloat(r.Plan.TimeoutSeconds, 'f', -1, 64) + "s",
		"plan.trials":     strconv.Itoa(len(r.Trials)),
		"plan.key_prefix": r.Plan.KeyPrefix,
		"plan.plan_name":  r.Plan.Name,
		"report.tool":     r.Tool,
		"report.schema":   r.Schema,
	}
	e := r.Environment
	if e == nil {
		return m
	}
	set := func(k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	set("prober.version", e.Prober.Version)
	set("prober.revision", e.Prober.Revision)
	set("prober.go_version", e.Prober.GoVersion)
	set("host.kernel", e.Host.Kernel)
	set("host.thp_enabled", e.Host.THPEnabled)
	set("host.thp_defrag", e.Host.THPDefrag)
	set("host.cpu_model", e.Host.CPUModel)
	if e.Host.CPUs > 0 {
		set("host.cpus", strconv.Itoa(e.Host.CPUs))
	}
	for k, v := range e.Host.Sysctls {
		set(k, v)
	}
	set("redis.version", e.Redis.Version)
	set("redis.mode", e.Redis.Mode)
	set("redis.os", e.Redis.OS)
	set("redis.role", e.Redis.Role)
	set("redis.maxmemory", strconv.FormatInt(e.Redis.MaxMemory, 10))
	set("redis.mem_allocator", e.Redis.Allocator)
	set("redis.io_threads_active", e.Redis.IOThreads)
	for k, v := range e.Redis.Config {
		// The snapshot does not read secrets, but a hand-made report might.
		if redisinfo.SecretParam(k) {
			continue
		}
		set(k, v)
	}
	return m
}
