package collector

// retainedInfo are the INFO fields read after a refresh is over: by the
// info collector's series at scrape time (infoDescs.emit, forkPerGB) and by
// Server (the doctor). Everything else a refresh needs (the checks, the
// process identity, the latency and commandlog gates) it reads during the
// refresh.
var retainedInfo = []string{
	"latest_fork_usec", "total_forks",
	"mem_fragmentation_ratio", "mem_fragmentation_bytes", "used_memory_rss", "used_memory",
	"allocator_frag_ratio", "allocator_frag_bytes", "active_defrag_running", "maxmemory",
	"rdb_bgsave_in_progress", "aof_rewrite_in_progress", "module_fork_in_progress", "loading",
	"slot_migration_fork_in_progress",
	"rdb_last_bgsave_status", "aof_last_bgrewrite_status", "aof_last_write_status",
	"redis_version", "valkey_version",
}
