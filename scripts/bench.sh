#!/usr/bin/env bash
# make bench: probe fidelity and resource use, from ONE run against ONE
# throwaway local redis-server.
#
#  1. In alternating rounds (the machine drifts, so the clients take turns and
#     we report per round, then medians and the min-max spread), PING latency
#     at RATE/s on one connection of:
#       - the prober binary (--probe.commands=ping, one connection), read from
#         the native histogram of its /metrics (bench/promhist): mean, p50,
#         p99, p99.9; beside it, over the same window, its client-delay
#         histogram (redis_prober_client_delay_seconds: kernel RX stamp to
#         the prober's read; n/a when the prober does not export it), the
#         clock it says it times with (redis_prober_probe_clock_info) and its
#         clock fallbacks;
#       - the C reference client bench/refclient (blocking socket, absolute
#         pacing: the least any client can measure), both what its own clock
#         reads (user space) and the kernel's wire time of the same requests
#         (SO_TIMESTAMPING software TX -> RX stamps);
#       - redis-benchmark -c 1 -P 1 -t ping (closed loop, as it prints it).
#     Ratios prober/C and prober/wire per round and of the medians, beside
#     the goals of issue 12.
#  2. The prober's RSS and CPU at default settings (10 probes/s, ping,get,set),
#     scraped every RESOURCE_SCRAPE seconds as a sidecar is; then the same
#     window for bench/floor, the mandated libraries alone (go-redis PINGs,
#     client_golang, procfs, kingpin, exporter-toolkit), and what the prober
#     takes over it.
#  3. make bench-burst, when that target exists (SKIP_BURST=1 skips it).
#
# CONTENTION=1: redis-server is pinned to CPU 0 (taskset), every client to
# CLIENT_CPU (default: the last CPU), and a busy loop runs on CLIENT_CPU beside
# each client for its round only (bounded by timeout(1) and killed when the
# round ends). The goal there is the prober's mean within 1.2x the wire time.
#
# Knobs (environment): ROUNDS (6), ROUND_SECONDS (25), RATE (100),
# RESOURCE_SECONDS (30), RESOURCE_SCRAPE (15: a scrape of /metrics every so
# many seconds of the resource window, as Prometheus would; 0: none),
# SKIP_BURST, CONTENTION, CLIENT_CPU.
# The exit code is 0 whether or not the goals are met: this is a measurement.
set -euo pipefail

ROUNDS=${ROUNDS:-6}
ROUND_SECONDS=${ROUND_SECONDS:-25}
RATE=${RATE:-100}
RESOURCE_SECONDS=${RESOURCE_SECONDS:-30}
RESOURCE_SCRAPE=${RESOURCE_SCRAPE:-15}
CONTENTION=${CONTENTION:-}
[ "$CONTENTION" = 0 ] && CONTENTION=
WARMUP_SECONDS=3

ROOT=$(cd "$(dirname "$0")/.." && pwd)
GO=${GO:-go}
tools="redis-server redis-benchmark cc curl $GO"
[ -n "$CONTENTION" ] && tools="$tools taskset timeout"
for tool in $tools; do
	command -v "$tool" >/dev/null || { echo "bench: $tool not found (apt-get install redis-server redis-tools gcc util-linux)" >&2; exit 1; }
done
((ROUNDS >= 1 && ROUND_SECONDS >= 1)) || { echo "bench: ROUNDS and ROUND_SECONDS must be at least 1" >&2; exit 2; }

NCPU=$(nproc)
CLIENT_CPU=${CLIENT_CPU:-$((NCPU - 1))}
if [ -n "$CONTENTION" ] && ((NCPU < 2)); then
	echo "bench: CONTENTION=1 wants 2 CPUs (Redis on CPU 0, the clients on another); this host has $NCPU" >&2
	exit 2
fi
if [ -n "$CONTENTION" ] && ((CLIENT_CPU == 0)); then
	echo "bench: CLIENT_CPU must not be 0 (Redis is pinned there)" >&2
	exit 2
fi

# shellcheck source=lib.sh
. "$ROOT/scripts/lib.sh"

TMP=$(mktemp -d)
REDIS_PID="" PROBER_PID="" BUSY_PID=""
cleanup() {
	trap - EXIT INT TERM
	stop_pid "$BUSY_PID" 2
	stop_pid "$PROBER_PID" 15
	stop_pid "$REDIS_PID" 10
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "== building (prober, promhist, refclient, floor) into $TMP"
(cd "$ROOT" && CGO_ENABLED=0 "$GO" build -trimpath -o "$TMP/redis-prober" ./cmd/redis-prober)
(cd "$ROOT" && CGO_ENABLED=0 "$GO" build -trimpath -o "$TMP/floor" ./bench/floor)
(cd "$ROOT" && "$GO" build -o "$TMP/promhist" ./bench/promhist)
cc -O2 -Wall -o "$TMP/refclient" "$ROOT/bench/refclient/refclient.c"

# With CONTENTION, ON_REDIS / ON_CLIENT pin a command to its CPU (arrays, not
# functions: a function run with & would hide the command's pid in a subshell).
ON_REDIS=() ON_CLIENT=()
[ -n "$CONTENTION" ] && ON_REDIS=(taskset -c 0) ON_CLIENT=(taskset -c "$CLIENT_CPU")
# busy_start SECONDS / busy_stop: a spinning shell on the client's CPU,
# bounded by timeout(1) even if this script is killed -9.
busy_start() {
	[ -n "$CONTENTION" ] || return 0
	timeout "$1" taskset -c "$CLIENT_CPU" sh -c 'while :; do :; done' &
	BUSY_PID=$!
}
busy_stop() {
	stop_pid "$BUSY_PID" 2
	BUSY_PID=""
}

REDIS_PORT=$(free_port)
"${ON_REDIS[@]}" redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
	--dir "$TMP" --logfile "$TMP/redis.log" >/dev/null &
REDIS_PID=$!
wait_listening "$REDIS_PORT" || { echo "bench: redis-server did not start:" >&2; cat "$TMP/redis.log" >&2; exit 1; }
WEB_PORT="" METRICS=""

# One probe connection: the flag, while the prober still takes it (hidden
# and deprecated since 0.1.0, so it is looked for in the binary, not --help).
ONE_CONN=()
grep -aq -- 'probe.connections' "$TMP/redis-prober" && ONE_CONN=(--probe.connections=1)

# start_prober FLAGS...: on a fresh port each time (the host is shared: a
# port free a minute ago may not be now); up to 3 tries when the prober is
# gone once something listens there (someone else took the port).
start_prober() {
	local try
	for try in 1 2 3; do
		WEB_PORT=$(free_port)
		METRICS=http://127.0.0.1:$WEB_PORT/metrics
		"${ON_CLIENT[@]}" "${PROBER_BIN:-$TMP/redis-prober}" --redis.addr="127.0.0.1:$REDIS_PORT" \
			--web.listen-address="127.0.0.1:$WEB_PORT" --log.level=warn "$@" \
			>>"$TMP/prober.log" 2>&1 &
		PROBER_PID=$!
		if wait_listening "$WEB_PORT" && kill -0 "$PROBER_PID" 2>/dev/null; then
			sleep 0.2
			kill -0 "$PROBER_PID" 2>/dev/null && return 0
		fi
		kill "$PROBER_PID" 2>/dev/null || true
		wait "$PROBER_PID" 2>/dev/null || true
		PROBER_PID=""
		grep -q 'address already in use' "$TMP/prober.log" || break
	done
	echo "bench: prober did not start:" >&2; cat "$TMP/prober.log" >&2; exit 1
}
stop_prober() {
	stop_pid "$PROBER_PID" 15
	PROBER_PID=""
}

# kv KEY LINE: the value of KEY=value in LINE.
kv() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" <<<"$2"; }
# msum NAME FILTER FILE: the sum of NAME's samples whose line holds FILTER.
msum() { awk -v n="$1" -v f="$2" '$1 ~ "^"n"([{]|$)" && index($0, f) {s += $NF} END {printf "%.0f\n", s}' "$3"; }

samples=$((RATE * ROUND_SECONDS))
mode="quiet (no pinning)"
[ -n "$CONTENTION" ] && mode="CONTENTION: redis-server on CPU 0, clients on CPU $CLIENT_CPU with a busy loop beside each"
st0=$(cpu_stat)
echo "== $(date -u +%Y-%m-%dT%H:%MZ) $(uname -r), $NCPU CPUs, $(redis-server --version | cut -d' ' -f3), load average at the start $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== $ROUNDS rounds of ${ROUND_SECONDS}s, PING at $RATE/s on one connection, redis 127.0.0.1:$REDIS_PORT; $mode"
: >"$TMP/prober.txt"; : >"$TMP/delay.txt"; : >"$TMP/c.txt"; : >"$TMP/rb.txt"
run_prober_round() {
	busy_start $((WARMUP_SECONDS + ROUND_SECONDS + 10))
	start_prober --probe.commands=ping --probe.rate="$RATE" "${ONE_CONN[@]}"
	sleep "$WARMUP_SECONDS"
	curl -fsS -o "$TMP/m0.txt" "$METRICS" || : >"$TMP/m0.txt"
	# Latency and client delay over the same window: two readers side by side.
	"$TMP/promhist" -url "$METRICS" -metric redis_prober_client_delay_seconds -match "" \
		-for "${ROUND_SECONDS}s" >"$TMP/delay.out" 2>"$TMP/delay.err" &
	local dpid=$! out delay
	out=$("$TMP/promhist" -url "$METRICS" -for "${ROUND_SECONDS}s" -match command=ping,phase=probe)
	wait "$dpid" && delay=$(cat "$TMP/delay.out") || delay="n/a ($(head -c 120 "$TMP/delay.err" | tr '\n' ' '))"
	# The numbers must come from our prober, all of them answered: a
	# prober that died (and something else on its port) or a Redis that
	# went away would make them meaningless.
	kill -0 "$PROBER_PID" 2>/dev/null || { echo "bench: the prober exited during round $1:" >&2; cat "$TMP/prober.log" >&2; exit 1; }
	curl -fsS -o "$TMP/m1.txt" "$METRICS"
	stop_prober
	busy_stop
	local n errs clock fb
	n=$(kv samples "$out")
	errs=$(awk '/^redis_prober_requests_total/ && /command="ping"/ && !/result="ok"/ {s += $NF} END {print s + 0}' "$TMP/m1.txt")
	clock=$(sed -n 's/^redis_prober_probe_clock_info{.*clock="\([^"]*\)".*} 1$/\1/p' "$TMP/m1.txt" | sort -u | paste -sd, -)
	if grep -q '^redis_prober_clock_fallbacks_total' "$TMP/m1.txt"; then
		fb=$(($(msum redis_prober_clock_fallbacks_total "" "$TMP/m1.txt") - $(msum redis_prober_clock_fallbacks_total "" "$TMP/m0.txt")))
	else fb=n/a; fi
	if ((n < samples * 9 / 10)) || [ "$errs" != 0 ]; then
		echo "bench: round $1 got $n samples (want about $samples) and $errs failed requests" >&2; exit 1
	fi
	echo "$out clock=${clock:-n/a} clock_fallbacks=$fb" >>"$TMP/prober.txt"
	echo "$delay" >>"$TMP/delay.txt"
	printf '  round %d prober        %s clock=%s clock_fallbacks=%s\n' "$1" "$out" "${clock:-n/a}" "$fb"
	printf '  round %d client delay  %s\n' "$1" "$delay"
}
run_c_round() {
	local out
	busy_start $((WARMUP_SECONDS + ROUND_SECONDS + 10))
	out=$("${ON_CLIENT[@]}" "$TMP/refclient" 127.0.0.1 "$REDIS_PORT" "$samples" "$RATE" $((RATE * WARMUP_SECONDS)))
	busy_stop
	echo "$out" >>"$TMP/c.txt"
	printf '  round %d refclient     %s\n' "$1" "$out"
}
# ratio A B: A/B to two places, "-" when either is missing or B is 0.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2f", a / b}'; }
round_ratios() {
	local p c
	p=$(sed -n "${1}p" "$TMP/prober.txt") c=$(sed -n "${1}p" "$TMP/c.txt")
	printf '  round %d ratios        prober/C mean %s p50 %s p99 %s p99.9 %s | prober/wire mean %s p50 %s p99 %s p99.9 %s\n' "$1" \
		"$(ratio "$(kv mean_us "$p")" "$(kv mean_us "$c")")" "$(ratio "$(kv p50_us "$p")" "$(kv p50_us "$c")")" \
		"$(ratio "$(kv p99_us "$p")" "$(kv p99_us "$c")")" "$(ratio "$(kv p999_us "$p")" "$(kv p999_us "$c")")" \
		"$(ratio "$(kv mean_us "$p")" "$(kv wire_mean_us "$c")")" "$(ratio "$(kv p50_us "$p")" "$(kv wire_p50_us "$c")")" \
		"$(ratio "$(kv p99_us "$p")" "$(kv wire_p99_us "$c")")" "$(ratio "$(kv p999_us "$p")" "$(kv wire_p999_us "$c")")"
}
for r in $(seq "$ROUNDS"); do
	if ((r % 2)); then run_prober_round "$r"; run_c_round "$r"
	else run_c_round "$r"; run_prober_round "$r"; fi
	round_ratios "$r"
	# closed loop, back to back: what a busy client on a warm CPU sees
	busy_start 60
	line=$("${ON_CLIENT[@]}" redis-benchmark -p "$REDIS_PORT" -c 1 -P 1 -t ping -n 20000 --csv | grep PING_MBULK | tr -d '"')
	busy_stop
	echo "$line" >>"$TMP/rb.txt"
	printf '  round %d redis-benchmark %s\n' "$r" "$line"
done

# vals FILE KEY: KEY's values over the rounds, one a line (rounds without it
# left out).
vals() { while read -r l; do kv "$2" "$l"; done <"$1" | grep -E '^[0-9.eE+-]+$' || true; }
# med: the median of numbers on stdin; stats: "median (min-max)".
med() { sort -g | awk '{v[NR]=$1} END {if (NR) print NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
stats() {
	sort -g | awk '{v[NR]=$1} END {if (!NR) {print "n/a"; exit}
		m = NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2; printf "%.1f (%s-%s)", m, v[1], v[NR]}'
}
# redis-benchmark csv: test,rps,avg,min,p50,p95,p99,max (ms)
rbstat() { cut -d, -f"$1" "$TMP/rb.txt" | awk '{print $1 * 1000}' | stats; }
row() { # LABEL FILE PREFIX
	printf '%-36s %-22s %-22s %-22s %-22s\n' "$1" "$(vals "$2" "${3}mean_us" | stats)" "$(vals "$2" "${3}p50_us" | stats)" \
		"$(vals "$2" "${3}p99_us" | stats)" "$(vals "$2" "${3}p999_us" | stats)"
}

echo
echo "PING latency in µs, median of $ROUNDS rounds (min-max)"
printf '%-36s %-22s %-22s %-22s %-22s\n' client mean p50 p99 p99.9
row "redis-prober ($RATE/s, native hist)" "$TMP/prober.txt" ""
row "refclient.c user space (exact)" "$TMP/c.txt" ""
row "refclient.c kernel wire time (exact)" "$TMP/c.txt" wire_
printf '%-36s %-22s %-22s %-22s %-22s\n' "redis-benchmark -c1 -P1 (closed)" "$(rbstat 3)" "$(rbstat 5)" "$(rbstat 7)" "-"
row "prober client delay (RX -> read)" "$TMP/delay.txt" ""
echo "prober clock: $(sed -n 's/.* clock=\([^ ]*\).*/\1/p' "$TMP/prober.txt" | sort -u | paste -sd, -);" \
	"clock fallbacks per round: $(sed -n 's/.* clock_fallbacks=\([^ ]*\).*/\1/p' "$TMP/prober.txt" | paste -sd' ' -);" \
	"refclient wire fallbacks per round: $(vals "$TMP/c.txt" wire_fallbacks | paste -sd' ' -) of $samples"

# goal KEY_P KEY_C GOAL LABEL: the ratio of the medians, the min-max of the
# per-round ratios, and the verdict.
goal() {
	local mp mc per
	mp=$(vals "$TMP/prober.txt" "$1" | med) mc=$(vals "$TMP/c.txt" "$2" | med)
	per=$(paste -d' ' <(vals "$TMP/prober.txt" "$1") <(vals "$TMP/c.txt" "$2") |
		awk '$2 > 0 {print $1 / $2}' | sort -g | awk '{v[NR]=$1} END {if (NR) printf "%.2f-%.2f", v[1], v[NR]}')
	awk -v a="$mp" -v b="$mc" -v g="$3" -v l="$4" -v per="$per" 'BEGIN {
		if (a == "" || b == "" || b + 0 == 0) {printf "  %-22s n/a\n", l; exit}
		r = a / b; printf "  %-22s %.2f  (rounds %s)  goal <= %.1f: %s\n", l, r, per, g, r <= g ? "ok" : "MISSED"}'
}
echo
echo "ratios of the medians (per-round min-max), issue 12 goals:"
if [ -n "$CONTENTION" ]; then
	goal mean_us wire_mean_us 1.2 "prober/wire mean"
	echo "  (quiet-host goals, for reference under contention:)"
fi
goal mean_us mean_us 1.0 "prober/C mean"
goal p50_us p50_us 1.0 "prober/C p50"
goal p99_us p99_us 1.0 "prober/C p99"
goal p999_us p999_us 1.2 "prober/C p99.9"
[ -z "$CONTENTION" ] && goal mean_us wire_mean_us 1.1 "prober/wire mean"
goal p50_us wire_p50_us 1.1 "prober/wire p50"
goal p99_us wire_p99_us 1.1 "prober/wire p99"
goal p999_us wire_p999_us 1.2 "prober/wire p99.9"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the host moves these figures; compare within one run)"
echo "steal over the rounds: $(steal_pct "$st0" "$(cpu_stat)") % of the CPUs' time (the hypervisor running other guests)"

echo
echo "== resources at default settings (10 probes/s, ping,get,set) over ${RESOURCE_SECONDS}s, scraped every ${RESOURCE_SCRAPE}s (0: never)"
hz=$(getconf CLK_TCK)
# resources [BINARY]: start the prober (or BINARY, which takes its flags),
# let it warm up, scrape it every RESOURCE_SCRAPE seconds over the window
# as a sidecar is scraped (a scrape maps in the exposition code and
# buffers: 0.5-1 MiB of RSS that an unscraped process never shows; 0:
# never), and set RES to "CPU% RSS HWM THREADS ANON FILE" (KiB): RSS is the
# process's own memory (RssAnon) and the pages of the binary and libraries
# it has mapped (RssFile, shared and reclaimable).
resources() {
	PROBER_BIN=${1:-} start_prober
	sleep "$WARMUP_SECONDS"
	local t0 t1 w0 w1 end
	ticks() { awk '{sub(/^.*\) /, ""); print $12 + $13}' "/proc/$PROBER_PID/stat"; }
	t0=$(ticks) w0=$(date +%s.%N)
	if ((RESOURCE_SCRAPE > 0)); then
		end=$((SECONDS + RESOURCE_SECONDS))
		while ((SECONDS + RESOURCE_SCRAPE <= end)); do
			sleep "$RESOURCE_SCRAPE"
			curl -sf -o /dev/null "$METRICS" || echo "bench: a scrape failed" >&2
		done
		((end > SECONDS)) && sleep $((end - SECONDS))
	else
		sleep "$RESOURCE_SECONDS"
	fi
	t1=$(ticks) w1=$(date +%s.%N)
	read -r -a RES < <(awk -v t="$((t1 - t0))" -v hz="$hz" -v w0="$w0" -v w1="$w1" '/^(VmRSS|VmHWM|Threads|RssAnon|RssFile):/ {v[$1] = $2}
		END {printf "%.2f %d %d %d %d %d\n", t / hz / (w1 - w0) * 100, v["VmRSS:"], v["VmHWM:"], v["Threads:"], v["RssAnon:"], v["RssFile:"]}' "/proc/$PROBER_PID/status")
	stop_prober
}
resources
read -r cpu rss hwm threads anon file <<<"${RES[*]}"
resources "$TMP/floor"
read -r f_cpu f_rss _ _ f_anon f_file <<<"${RES[*]}"
awk -v c="$cpu" -v rss="$rss" -v hwm="$hwm" -v th="$threads" -v anon="$anon" -v file="$file" \
	-v fc="$f_cpu" -v frss="$f_rss" -v fanon="$f_anon" -v ffile="$f_file" 'BEGIN {
	printf "CPU %.2f%% of one core (goal ≤ 1%%), RSS %.1f MiB (peak %.1f MiB, goal ≤ 20: anonymous %.1f, file-backed %.1f), %d threads\n",
		c, rss / 1024, hwm / 1024, anon / 1024, file / 1024, th
	printf "bench/floor, the mandated libraries alone, the same window: CPU %.2f%%, RSS %.1f MiB (anonymous %.1f, file-backed %.1f)\n",
		fc, frss / 1024, fanon / 1024, ffile / 1024
	printf "the prober over it: RSS +%.1f MiB (anonymous +%.1f, file-backed +%.1f), CPU +%.2f%%\n",
		(rss - frss) / 1024, (anon - fanon) / 1024, (file - ffile) / 1024, c - fc }'

if [ -z "${SKIP_BURST:-}" ] && make -C "$ROOT" -n bench-burst >/dev/null 2>&1; then
	echo
	echo "== make bench-burst"
	make -C "$ROOT" --no-print-directory bench-burst
fi
