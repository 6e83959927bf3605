package report

import (
	"context"
	"runtime"
	"strconv"

	"github.com/redis-prober/redis-prober/internal/host"
	"github.com/redis-prober/redis-prober/internal/redisinfo"
	"github.com/redis/go-redis/v9"
)

// Environment is what a report needs to be read later: the Redis server
// and its latency-relevant settings, the prober's host and the prober.
type Environment struct {
	Prober ProberEnv `json:"prober"`
	Host   HostEnv   `json:"host"`
	Redis  RedisEnv  `json:"redis"`
}

// ProberEnv names the prober build.
type ProberEnv struct {
	Version   string `json:"version"`
	Revision  string `json:"revision,omitempty"`
	GoVersion string `json:"go_version"`
}

// HostEnv is the host the prober ran on. It is the Redis host only when
// Redis is local; RedisEnv.OS is what Redis says of its own kernel.
type HostEnv struct {
	Kernel     string `json:"kernel"`
	THPEnabled string `json:"thp_enabled"`
	THPDefrag  string `json:"thp_defrag"`
	CPUModel   string `json:"cpu_model"`
	CPUs       int    `json:"cpus"`
	// Sysctls are the kernel settings that move Redis latency, by dotted name.
	Sysctls map[string]string `json:"sysctls,omitempty"`
}

// RedisEnv is what INFO and CONFIG GET say.
type RedisEnv struct {
	Version    string            `json:"version"`
	Mode       string            `json:"mode"`
	OS         string            `json:"os"`
	Role       string            `json:"role"`
	UsedMemory int64             `json:"used_memory"`
	MaxMemory  int64             `json:"maxmemory"`
	Allocator  string            `json:"mem_allocator"`
	IOThreads  string            `json:"io_threads_active"`
	Config     map[string]string `json:"config"`
	ConfigNote string            `json:"config_note,omitempty"`
}

// latencyConfig are the settings that move Redis latency, read with CONFIG
// GET when the server allows it.
var latencyConfig = []string{
	"maxmemory", "maxmemory-policy", "appendonly", "appendfsync", "no-appendfsync-on-rewrite", "save",
	"hz", "dynamic-hz", "io-threads", "io-threads-do-reads", "activedefrag", "active-defrag-cycle-max",
	"lazyfree-lazy-eviction", "lazyfree-lazy-expire", "lazyfree-lazy-server-del", "lazyfree-lazy-user-del",
	"jemalloc-bg-thread", "latency-tracking", "slowlog-log-slower-than", "tcp-backlog", "tcp-keepalive",
	"timeout", "maxclients", "repl-diskless-sync", "rdbcompression", "disable-thp",
}

// SnapshotEnvironment reads the environment. What cannot be read stays
// empty: a report is still worth having without CONFIG GET.
func SnapshotEnvironment(ctx context.Context, c redis.Cmdable, paths host.Paths, version, revision string) *Environment {
	env := &Environment{
		Prober: ProberEnv{Version: version, Revision: revision, GoVersion: runtime.Version()},
		Host:   readHostEnv(paths),
	}
	if info, err := redisinfo.Read(ctx, c); err == nil {
		env.Redis = RedisEnv{Version: info["redis_version"], Mode: info["redis_mode"], OS: info["os"],
			Role: info["role"], Allocator: info["mem_allocator"], IOThreads: info["io_threads_active"]}
		env.Redis.UsedMemory, _ = strconv.ParseInt(info["used_memory"], 10, 64)
		env.Redis.MaxMemory, _ = strconv.ParseInt(info["maxmemory"], 10, 64)
	}
	env.Redis.Config = map[string]string{}
	pipe := c.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(latencyConfig))
	for i, k := range latencyConfig {
		cmds[i] = pipe.ConfigGet(ctx, k)
	}
	_, _ = pipe.Exec(ctx)
	failed := 0
	for _, cmd := range cmds {
		m, err := cmd.Result()
		if err != nil {
			failed++
			continue
		}
		for k, v := range m {
			env.Redis.Config[k] = v
		}
	}
	if failed == len(cmds) {
		env.Redis.ConfigNote = "CONFIG GET is not allowed on this server"
	}
	return env
}

func readHostEnv(p host.Paths) HostEnv {
	h := HostEnv{CPUs: runtime.NumCPU()}
	r := p.Host()
	h.Kernel, _ = r.KernelRelease()
	// The THP modes as the collectors read them (what is unreadable stays
	// empty, which the report shows as unknown); only those two files,
	// not the host facts the checks read.
	if m, err := r.THP("enabled"); err == nil {
		h.THPEnabled = m.Active
	}
	if m, err := r.THP("defrag"); err == nil {
		h.THPDefrag = m.Active
	}
	h.CPUModel = r.CPUModel()
	h.Sysctls = readEnvSysctls(r)
	return h
}
