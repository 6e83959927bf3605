#!/usr/bin/env bash
# make bench-scale: ONE prober process watching many targets from one config
# file, and what that costs it.
#
# TARGETS targets (200) are spread over SERVERS local redis-server processes
# (4) on free loopback ports; several targets name the same server and each
# gets its own keys (the prober tags keys per target). After a warm-up the
# script measures, over SCALE_SECONDS (60, at least 60 for the record):
#   - CPU % of one core: utime+stime from /proc/<pid>/stat over the window;
#   - RSS (VmRSS at the end, VmHWM the peak), threads (/proc/<pid>/status);
#   - goroutines (go_goroutines from /metrics);
#   - the schedule delivered: probe requests counted
#     (redis_prober_requests_total{phase="probe"}) / (TARGETS * RATE * the
#     time between the two scrapes that bracket the window, each dated at
#     the midpoint of its gathering: request sent to first byte), with
#     the range that dating allows (a goal is missed only below it), and
#     timeouts/errors, so a prober that fell behind cannot look cheap;
#   - wake-ups: voluntary context switches of all threads over the window;
# then, after the window, SCRAPES scrapes of /metrics in each format, the
# protobuf one Prometheus asks for (Accept:
# application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited)
# and text: size in bytes, series, series per target, median scrape time
# (curl time_total), failed scrapes (a 503 counts) and the CPU one scrape
# costs.
#
# Then, with the prober stopped, the floor: the C reference client
# (bench/refclient: one blocking socket, raw RESP, kernel timestamps, no
# collectors, histograms or scrapes) sends the same TARGETS x RATE stamped
# PINGs a second to the first server for FLOOR_SECONDS (20; 0: none): its
# CPU a request is what any client pays for the requests alone on this
# host, and the prober's over it is printed (issue 26: within 1.3x).
#
# Goals (issue 12): at 1000 targets <= 25 % of one core, <= 200 MiB RSS,
# median protobuf scrape <= 200 ms, >= 0.999 of the schedule delivered, no
# timeouts or errors; at 200 targets (and below) <= 8 % of one core.
# The exit code is 0 whether or not the goals are met: this is a measurement.
# The whole run is bounded (LIMIT_SECONDS, default warm-up + window + 300 s);
# every process it started is stopped on any exit.
#
# Knobs (environment or make variables): TARGETS (200), SERVERS (4), RATE
# (10), SCALE_SECONDS (60), WARMUP_SECONDS (15), SCRAPES (9), BURST_INTERVAL
# (0: bursts off, they have their own section), PROBER_FLAGS (extra flags),
# FLOOR_SECONDS (20), SHOCK_SECONDS (0: see below),
# LIMIT_SECONDS, KEEP (1: keep the work dir).
#
# SHOCK_SECONDS > 0 runs a busy loop on every CPU for that long from the
# prober's start (at most the warm-up): a host busy for a moment while a
# thousand nodes connect, seed and read INFO. The window then shows whether
# the prober recovered (timeouts in the window, targets up) or fed on its
# own load, as one that reopened a connection for every timed-out request
# did (docs/lab/2026-12-performance-notes.md, "A timeout keeps its connection").
set -euo pipefail

TARGETS=${TARGETS:-200}
SERVERS=${SERVERS:-4}
RATE=${RATE:-10}
SCALE_SECONDS=${SCALE_SECONDS:-60}
WARMUP_SECONDS=${WARMUP_SECONDS:-15}
SCRAPES=${SCRAPES:-9}
BURST_INTERVAL=${BURST_INTERVAL:-0}
PROBER_FLAGS=${PROBER_FLAGS:-}
FLOOR_SECONDS=${FLOOR_SECONDS:-20}
SHOCK_SECONDS=${SHOCK_SECONDS:-0}
KEEP=${KEEP:-0}
LIMIT_SECONDS=${LIMIT_SECONDS:-$((WARMUP_SECONDS + SCALE_SECONDS + FLOOR_SECONDS + 300))}
PROTO_ACCEPT='application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited'
SCRAPE_TIMEOUT=30

ROOT=$(cd "$(dirname "$0")/.." && pwd)
GO=${GO:-go}
for tool in redis-server redis-cli curl awk cc "$GO"; do
	command -v "$tool" >/dev/null || { echo "bench-scale: $tool not found (apt-get install redis-server redis-tools curl)" >&2; exit 1; }
done
((TARGETS >= 1 && SERVERS >= 1 && SCALE_SECONDS >= 1 && SCRAPES >= 1)) ||
	{ echo "bench-scale: TARGETS, SERVERS, SCALE_SECONDS and SCRAPES must be at least 1" >&2; exit 2; }

# shellcheck source=lib.sh
. "$ROOT/scripts/lib.sh"

TMP=$(mktemp -d)
REDIS_PIDS=() PROBER_PID="" WATCHDOG_PID=""
cleanup() {
	trap - EXIT INT TERM
	[ -n "$WATCHDOG_PID" ] && { kill "$WATCHDOG_PID" 2>/dev/null || true; }
	# The prober first, so it deletes its keys; then the servers.
	stop_pid "$PROBER_PID" 15
	for p in "${REDIS_PIDS[@]}"; do stop_pid "$p" 10; done
	if [ "$KEEP" = 1 ]; then echo "work dir kept: $TMP" >&2; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The watchdog: past LIMIT_SECONDS the script is told to stop (and cleans up).
(
	for ((i = 0; i < LIMIT_SECONDS; i++)); do sleep 1; done
	echo "bench-scale: over LIMIT_SECONDS=$LIMIT_SECONDS, stopping" >&2
	kill -TERM $$
) &
WATCHDOG_PID=$!

echo "== building the prober into $TMP"
(cd "$ROOT" && CGO_ENABLED=0 "$GO" build -trimpath -o "$TMP/redis-prober" ./cmd/redis-prober)
cc -O2 -Wall -o "$TMP/refclient" "$ROOT/bench/refclient/refclient.c"

PORTS=()
for i in $(seq "$SERVERS"); do
	port=$(free_port)
	mkdir -p "$TMP/redis$i"
	redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
		--dir "$TMP/redis$i" --logfile "$TMP/redis$i/redis.log" >/dev/null &
	REDIS_PIDS+=($!)
	wait_listening "$port" && kill -0 "${REDIS_PIDS[-1]}" 2>/dev/null ||
		{ echo "bench-scale: redis-server $i did not start:" >&2; cat "$TMP/redis$i/redis.log" >&2; exit 1; }
	PORTS+=("$port")
done

# The config file: targets round-robin over the servers.
CONFIG=$TMP/targets.yml
{
	echo "# generated by scripts/bench-scale.sh: $TARGETS targets over $SERVERS servers"
	echo "global:"
	echo "  probe:"
	echo "    rate: $RATE"
	echo "targets:"
	for ((i = 0; i < TARGETS; i++)); do
		printf '  - name: t%03d\n    addr: redis://127.0.0.1:%s\n    labels: {shard: s%d}\n' \
			"$i" "${PORTS[i % SERVERS]}" $((i % SERVERS))
	done
} >"$CONFIG"

WEB_PORT=$(free_port)
# shellcheck disable=SC2086 # PROBER_FLAGS is a list of flags
"$TMP/redis-prober" --config.file="$CONFIG" --web.listen-address="127.0.0.1:$WEB_PORT" \
	--log.level=warn --burst.interval="$BURST_INTERVAL" $PROBER_FLAGS >"$TMP/prober.log" 2>&1 &
PROBER_PID=$!
wait_listening "$WEB_PORT" && kill -0 "$PROBER_PID" 2>/dev/null ||
	{ echo "bench-scale: prober did not start:" >&2; cat "$TMP/prober.log" >&2; exit 1; }
METRICS=http://127.0.0.1:$WEB_PORT/metrics
if ((SHOCK_SECONDS > 0)); then
	((SHOCK_SECONDS <= WARMUP_SECONDS)) || { echo "bench-scale: SHOCK_SECONDS must be at most WARMUP_SECONDS" >&2; exit 2; }
	for _ in $(seq "$(nproc)"); do timeout "$SHOCK_SECONDS" sh -c 'while :; do :; done' & done
fi

TCK=$(getconf CLK_TCK)
# cpu_ticks: utime+stime of the prober (fields 14, 15 after the comm field).
cpu_ticks() { awk '{sub(/^.*\) /, ""); print $12 + $13}' "/proc/$PROBER_PID/stat"; }
status_kb() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$PROBER_PID/status"; }
# wakeups: voluntary context switches summed over every thread.
wakeups() { cat /proc/"$PROBER_PID"/task/*/status 2>/dev/null | awk '$1 == "voluntary_ctxt_switches:" {s += $2} END {print s + 0}'; }
# metric NAME FILTER FILE: the sum of NAME's samples whose line holds FILTER.
metric() { awk -v n="$1" -v f="$2" '$1 ~ "^"n"([{]|$)" && index($0, f) {s += $NF} END {printf "%.0f\n", s}' "$3"; }
# now: seconds since the epoch, to the microsecond, with a dot in any locale.
now() { local t=$EPOCHREALTIME; echo "${t/,/.}"; }
now_us() { local t=$EPOCHREALTIME; echo "${t/[.,]/}"; }
# scrape_to FILE: a text scrape; prints when the counters in it were read
# and how far off that may be: the prober gathers every metric before it
# sends the first byte, so the midpoint of [request sent, first byte] (curl
# time_starttransfer), give or take half of that span. A failed scrape
# leaves FILE empty.
scrape_to() {
	local a ttfb
	a=$(now)
	ttfb=$(curl -sf -m "$SCRAPE_TIMEOUT" -o "$1" -w '%{time_starttransfer}' "$METRICS") || { : >"$1"; ttfb=0; }
	awk -v a="$a" -v t="$ttfb" 'BEGIN {printf "%.4f %.4f\n", a + t / 2, t / 2}'
}
# scrapes FORMAT N: N scrapes, one "http_code time_total size" line each.
scrapes() {
	local accept=() out=/dev/null
	[ "$1" = proto ] && accept=(-H "Accept: $PROTO_ACCEPT")
	[ "$1" = text ] && out=$TMP/scrape.txt
	for _ in $(seq "$2"); do
		curl -s -m "$SCRAPE_TIMEOUT" "${accept[@]}" -o "$out" -w '%{http_code} %{time_total} %{size_download}\n' "$METRICS" || true
	done
}
# median of column 2 (ms) over the lines with code 200; "n/a" when none.
scrape_median() { awk '$1 == 200 {print $2}' "$1" | sort -g | awk '{v[NR]=$1} END {if (!NR) {print "n/a"; exit}
	printf "%.1f", 1000 * (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
scrape_max() { awk '$1 == 200 {print $2}' "$1" | sort -g | tail -1 | awk '{printf "%.1f", 1000 * $1} END {if (!NR) print "n/a"}'; }
# accepted: connections the servers accepted so far (each reading opens one
# of its own a server, counted by the next).
accepted() {
	local p sum=0
	for p in "${PORTS[@]}"; do
		sum=$((sum + $(redis-cli -p "$p" info stats | awk -F: '/^total_connections_received:/ {print $2 + 0}')))
	done
	echo "$sum"
}
scrape_fails() { awk '$1 != 200' "$1" | wc -l; }
scrape_size() { awk '$1 == 200 {s = $3} END {print s + 0}' "$1"; }

echo "== $(date -u +%Y-%m-%dT%H:%MZ) $(uname -r), $(nproc) CPUs, $(redis-server --version | cut -d' ' -f3), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== $TARGETS targets over $SERVERS redis-servers (ports ${PORTS[*]}), $RATE probes/s each, flags: --burst.interval=$BURST_INTERVAL $PROBER_FLAGS"
echo "== warm-up ${WARMUP_SECONDS}s (start-up, first INFO reads and key seeding are not measured), window ${SCALE_SECONDS}s"
((SHOCK_SECONDS > 0)) && echo "== shock: $(nproc) busy loops for ${SHOCK_SECONDS}s from the prober's start"
sleep "$WARMUP_SECONDS"
kill -0 "$PROBER_PID" 2>/dev/null || { echo "bench-scale: the prober exited:" >&2; cat "$TMP/prober.log" >&2; exit 1; }

read -r m0_at m0_err < <(scrape_to "$TMP/m0.txt")
t0=$(now) c0=$(cpu_ticks) w0=$(wakeups) st0=$(cpu_stat) a0=$(accepted)
peak_threads=0
end_us=$((${t0/./} + SCALE_SECONDS * 1000000))
while (($(now_us) < end_us)); do
	kill -0 "$PROBER_PID" 2>/dev/null || { echo "bench-scale: the prober exited:" >&2; cat "$TMP/prober.log" >&2; exit 1; }
	th=$(status_kb Threads)
	((th > peak_threads)) && peak_threads=$th
	left=$((end_us - $(now_us)))
	if ((left > 0)); then sleep "$(awk -v l="$left" 'BEGIN {printf "%.3f", (l > 1e6 ? 1e6 : l) / 1e6}')"; fi
done
t1=$(now) c1=$(cpu_ticks) w1=$(wakeups) st1=$(cpu_stat) a1=$(accepted)
read -r m1_at m1_err < <(scrape_to "$TMP/m1.txt")
rss_kb=$(status_kb VmRSS) hwm_kb=$(status_kb VmHWM) threads=$(status_kb Threads)
if [ ! -s "$TMP/m0.txt" ] || [ ! -s "$TMP/m1.txt" ]; then
	echo "bench-scale: a scrape bracketing the window failed (503 or timeout): no delivered, goroutine or error figures" >&2
fi
goroutines=$(metric go_goroutines "" "$TMP/m1.txt")
heap=$(metric go_memstats_heap_inuse_bytes "" "$TMP/m1.txt")
stacks=$(metric go_memstats_stack_inuse_bytes "" "$TMP/m1.txt")
sent0=$(metric redis_prober_requests_total 'phase="probe"' "$TMP/m0.txt")
sent1=$(metric redis_prober_requests_total 'phase="probe"' "$TMP/m1.txt")
bad0=$(metric redis_prober_requests_total 'result="timeout"' "$TMP/m0.txt")
bad1=$(metric redis_prober_requests_total 'result="timeout"' "$TMP/m1.txt")
err0=$(metric redis_prober_requests_total 'result="error"' "$TMP/m0.txt")
err1=$(metric redis_prober_requests_total 'result="error"' "$TMP/m1.txt")
up=$(metric redis_prober_up "" "$TMP/m1.txt")
clocks=$(sed -n 's/^redis_prober_probe_clock_info{.*clock="\([^"]*\)".*} 1$/\1/p' "$TMP/m1.txt" | sort | uniq -c | awk '{printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $1}')

# Scrapes after the window, so the CPU figure above is the probing alone.
# The probing goes on while scraping: its rate from the window is taken off.
scrape_cpu() { # T0 C0 T1 C1: ms of CPU per scrape
	awk -v t0="$1" -v a="$2" -v t1="$3" -v b="$4" -v tck="$TCK" -v n="$SCRAPES" -v c0="$c0" -v c1="$c1" -v w0="$t0" -v w1="$t1" \
		'BEGIN {bg = (c1 - c0) / tck / (w1 - w0); printf "%.0f", 1000 * ((b - a) / tck - bg * (t1 - t0)) / n}'
}
p_t0=$(now) p_c0=$(cpu_ticks)
scrapes proto "$SCRAPES" >"$TMP/times-proto"
p_t1=$(now) p_c1=$(cpu_ticks)
scrapes text "$SCRAPES" >"$TMP/times-text"
x_t1=$(now) x_c1=$(cpu_ticks)
proto_cpu=$(scrape_cpu "$p_t0" "$p_c0" "$p_t1" "$p_c1")
text_cpu=$(scrape_cpu "$p_t1" "$p_c1" "$x_t1" "$x_c1")
if [ -s "$TMP/scrape.txt" ]; then
	series=$(grep -vc '^#' "$TMP/scrape.txt" || true)
	per_target=$(grep -c 'target="t000"' "$TMP/scrape.txt" || true)
else series=n/a per_target=n/a; fi

# The floor, with the prober stopped (it would share the CPUs): the C
# client's user+system time (the shell's children's, fields 16 and 17 of
# /proc/$$/stat, before and after it) over the requests it sent, against
# the prober's CPU over the window's requests. One blocking socket may fall
# behind the rate on a slow host (the rate it kept is printed); behind, it
# sleeps less, so its CPU a request is then a little low: a stricter floor.
children_ticks() { awk '{sub(/^.*\) /, ""); print $14 + $15}' /proc/$$/stat; }
floor_pct=n/a floor_line="" floor_us=n/a floor_rate=n/a
prober_us=$(awk -v c0="$c0" -v c1="$c1" -v tck="$TCK" -v s0="$sent0" -v s1="$sent1" 'BEGIN {
	if (s1 > s0) printf "%.1f", 1e6 * (c1 - c0) / tck / (s1 - s0); else print "n/a"}')
if ((FLOOR_SECONDS > 0)); then
	stop_pid "$PROBER_PID" 15
	PROBER_PID=""
	f_rate=$((TARGETS * RATE))
	f_req=$((f_rate * FLOOR_SECONDS + f_rate)) # and its warm-up second's
	f0=$(children_ticks) ft0=$(now)
	floor_line=$("$TMP/refclient" 127.0.0.1 "${PORTS[0]}" $((f_rate * FLOOR_SECONDS)) "$f_rate" "$f_rate" 2>&1) || floor_line="refclient failed: $floor_line"
	f1=$(children_ticks) ft1=$(now)
	read -r floor_pct floor_us floor_rate < <(awk -v a="$f0" -v b="$f1" -v t0="$ft0" -v t1="$ft1" -v tck="$TCK" -v n="$f_req" 'BEGIN {
		c = (b - a) / tck; printf "%.1f %.1f %.0f\n", 100 * c / (t1 - t0), 1e6 * c / n, n / (t1 - t0)}')
fi

# delivered_lo, _hi: the ratio over the longest and the shortest window
# the two scrapes allow (at 1,000 targets a text scrape takes 100-650 ms to
# its first byte: +-0.2-0.4 % over 60 s in the runs so far, more than the
# goal's 0.1 %).
read -r wall cpu_pct wake_rate delivered delivered_lo delivered_hi < <(awk -v t0="$t0" -v t1="$t1" -v c0="$c0" -v c1="$c1" -v tck="$TCK" \
	-v w0="$w0" -v w1="$w1" -v s0="$sent0" -v s1="$sent1" -v n="$TARGETS" -v r="$RATE" -v m0="$m0_at" -v m1="$m1_at" \
	-v e0="$m0_err" -v e1="$m1_err" 'BEGIN {
	wall = t1 - t0
	printf "%.1f %.1f %.0f %.4f %.4f %.4f\n", wall, 100 * (c1 - c0) / tck / wall, (w1 - w0) / wall,
		(s1 - s0) / (n * r * (m1 - m0)), (s1 - s0) / (n * r * (m1 - m0 + e0 + e1)), (s1 - s0) / (n * r * (m1 - m0 - e0 - e1))
}')
# The delivered goal is missed only when it is missed over the shortest window too.
delivered_verdict=$(awk -v v="$delivered" -v hi="$delivered_hi" 'BEGIN {
	print (v >= 0.999 ? "ok" : hi >= 0.999 ? "within the dating error" : "MISSED")}')
mib() { awk -v k="$1" 'BEGIN {printf "%.1f", k / 1024}'; }
# verdict VALUE GOAL [ge]: ok when VALUE <= GOAL (>= with ge).
verdict() { awk -v v="$1" -v g="$2" -v ge="${3:-}" 'BEGIN {if (v == "n/a" || v == "") {print "n/a"; exit}
	print ((ge ? v + 0 >= g : v + 0 <= g) ? "ok" : "MISSED")}'; }
if ((TARGETS <= 200)); then cpu_goal=8 cpu_note="the 200-target goal"; else cpu_goal=25 cpu_note="the 1000-target goal"; fi
timeouts=$((bad1 - bad0)) errors=$((err1 - err0))
failed=$(($(scrape_fails "$TMP/times-proto") + $(scrape_fails "$TMP/times-text")))
proto_ms=$(scrape_median "$TMP/times-proto") text_ms=$(scrape_median "$TMP/times-text")

cat <<EOF

== Scale: $TARGETS targets, $RATE probes/s each, ${wall}s window
  CPU              ${cpu_pct} % of one core          (goal <= $cpu_goal %, $cpu_note: $(verdict "$cpu_pct" "$cpu_goal"))
  floor            $( ((FLOOR_SECONDS > 0)) && echo "${floor_us} µs of CPU a request: the C reference client alone, $((TARGETS * RATE)) stamped PINGs/s asked on one socket, ${floor_rate}/s sent, ${floor_pct} % of one core; the prober ${prober_us} µs a request, $(awk -v p="$prober_us" -v f="$floor_us" 'BEGIN {printf "%.2f", p / f}')x   (issue 26: within 1.3x: $(awk -v p="$prober_us" -v f="$floor_us" 'BEGIN {print (p <= 1.3 * f ? "ok" : "MISSED")}'))" || echo "not measured (FLOOR_SECONDS=0)")
  RSS              $(mib "$rss_kb") MiB at the end, peak $(mib "$hwm_kb") MiB   (goal <= 200 MiB: $(verdict "$(mib "$hwm_kb")" 200))
  Go heap in use   $(awk -v b="$heap" 'BEGIN {printf "%.1f", b / 1048576}') MiB, stacks $(awk -v b="$stacks" -v g="$goroutines" 'BEGIN {printf "%.1f MiB, %.1f KiB a goroutine (a stack grows in steps of 2x: docs/lab/2026-12-performance-notes.md, \"The stack of a node\")", b / 1048576, (g > 0 ? b / 1024 / g : 0)}')
  goroutines       $goroutines
  threads          $threads (peak $peak_threads)
  wake-ups         $wake_rate voluntary context switches/s over all threads
  delivered        $delivered of the schedule ($((sent1 - sent0)) requests counted / $TARGETS x $RATE/s x the window; $delivered_lo-$delivered_hi as the two scrapes date it)   (goal >= 0.999: $delivered_verdict)
  timeouts, errors $timeouts, $errors in the window; targets up $up/$TARGETS   (goal none: $( ((timeouts + errors == 0)) && echo ok || echo MISSED))
  connections      $((a1 - a0 - SERVERS)) accepted by the servers in the window (total_connections_received)
  clock            ${clocks:-n/a} (nodes per clock, redis_prober_probe_clock_info)
  /metrics         $(scrape_size "$TMP/times-proto") bytes (protobuf), $(scrape_size "$TMP/times-text") bytes (text), $series series, $per_target series per plain target
  scrape protobuf  median ${proto_ms} ms, max $(scrape_max "$TMP/times-proto") ms over $SCRAPES (goal <= 200 ms: $(verdict "$proto_ms" 200)); ${proto_cpu} ms of CPU per scrape
  scrape text      median ${text_ms} ms, max $(scrape_max "$TMP/times-text") ms over $SCRAPES; ${text_cpu} ms of CPU per scrape
  failed scrapes   $failed of $((2 * SCRAPES)) (a 503 or a ${SCRAPE_TIMEOUT}s timeout)
  load average     $(cut -d' ' -f1-3 /proc/loadavg) at the end (other work on the host moves these figures)
  steal            $(steal_pct "$st0" "$st1") % of the CPUs' time over the window (the hypervisor running other guests: every figure above is slower by it)
EOF
[ -n "$floor_line" ] && echo "  refclient        $floor_line"
if [ -s "$TMP/prober.log" ]; then
	echo "  prober log (warn and above), first lines:"
	head -5 "$TMP/prober.log" | sed 's/^/    /'
fi
