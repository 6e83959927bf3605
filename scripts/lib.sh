# Shell helpers shared by the bench and soak scripts; source it.

# listening PORT: something accepts connections on 127.0.0.1:PORT.
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# free_port: a loopback port nothing listens on, outside the kernel's
# ephemeral range (so an outgoing connection cannot hold it between this and
# the bind). There is still a race with other processes; the scripts check
# their servers came up.
free_port() {
	local p lo=32768 hi=60999 base span
	read -r lo hi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
	if ((lo > 11000)); then base=10000 span=$((lo - 10000)); else base=$((hi + 1)) span=$((65535 - hi)); fi
	for _ in $(seq 100); do
		p=$((base + (RANDOM * 32768 + RANDOM) % span))
		listening "$p" || { echo "$p"; return; }
	done
	echo "$(basename "$0"): no free port" >&2
	exit 1
}

# wait_listening PORT: wait up to 10 s for a listener on PORT.
wait_listening() {
	for _ in $(seq 200); do listening "$1" && return 0; sleep 0.05; done
	return 1
}

# stop_pid PID [SECONDS]: SIGTERM, then SIGKILL after SECONDS (10) if the
# process is still there; reaps it when it is this shell's child.
stop_pid() {
	local pid=$1 i state
	[ -n "$pid" ] || return 0
	kill "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
	for ((i = 0; i < ${2:-10} * 20; i++)); do
		state=$(sed 's/^.*) \(.\).*/\1/' "/proc/$pid/stat" 2>/dev/null) || break
		[ "$state" = Z ] && break
		sleep 0.05
	done
	[ -r "/proc/$pid/stat" ] && [ "$state" != Z ] && kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null || true
}

# cpu_stat: the total and the steal ticks of all CPUs, from /proc/stat. On a
# virtual machine steal is the time the hypervisor ran something else while
# this VM wanted a CPU: the load average does not show it, and it slows
# every figure (CPU per request, scrape time) without being the prober's.
cpu_stat() { awk '$1 == "cpu" {t = 0; for (i = 2; i <= NF; i++) t += $i; print t, $9; exit}' /proc/stat; }
# steal_pct "T0 S0" "T1 S1": steal as a percentage of all CPU time between two cpu_stat readings.
steal_pct() { awk -v a="$1" -v b="$2" 'BEGIN {split(a, x, " "); split(b, y, " "); d = y[1] - x[1]
	if (d <= 0) {print "n/a"; exit}; printf "%.1f", 100 * (y[2] - x[2]) / d}'; }
