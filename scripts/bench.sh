#!/usr/bin/env bash
# make bench: probe fidelity and resource use, from ONE run against ONE
# throwaway local redis-server.
#
#  1. In alternating rounds (the machine drifts, so the clients take turns and
#     we report medians and the spread), PING latency at RATE/s on one
#     connection of:
#       - the prober binary (--probe.commands=ping --probe.connections=1),
#         read from the native histogram of its /metrics (bench/promhist);
#       - the C reference client bench/refclient (blocking socket, absolute
#         pacing: the least any client can measure);
#       - redis-benchmark -c 1 -P 1 -t ping (closed loop, as it prints it).
#  2. The prober's RSS and CPU at default settings (10 probes/s, ping,get,set).
#  3. make bench-burst, when that target exists (SKIP_BURST=1 skips it).
#
# Knobs (environment): ROUNDS (6), ROUND_SECONDS (25), RATE (100),
# RESOURCE_SECONDS (30).
set -euo pipefail

ROUNDS=${ROUNDS:-6}
ROUND_SECONDS=${ROUND_SECONDS:-25}
RATE=${RATE:-100}
RESOURCE_SECONDS=${RESOURCE_SECONDS:-30}
WARMUP_SECONDS=3

ROOT=$(cd "$(dirname "$0")/.." && pwd)
GO=${GO:-go}
for tool in redis-server redis-benchmark cc curl "$GO"; do
	command -v "$tool" >/dev/null || { echo "bench: $tool not found (apt-get install redis-server redis-tools gcc)" >&2; exit 1; }
done

TMP=$(mktemp -d)
REDIS_PID="" PROBER_PID=""
cleanup() {
	[ -n "$PROBER_PID" ] && kill "$PROBER_PID" 2>/dev/null && wait "$PROBER_PID" 2>/dev/null
	[ -n "$REDIS_PID" ] && kill "$REDIS_PID" 2>/dev/null && wait "$REDIS_PID" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# shellcheck source=lib.sh
. "$ROOT/scripts/lib.sh"

echo "== building (prober, promhist, refclient) into $TMP"
(cd "$ROOT" && CGO_ENABLED=0 "$GO" build -trimpath -o "$TMP/redis-prober" ./cmd/redis-prober)
(cd "$ROOT" && "$GO" build -o "$TMP/promhist" ./bench/promhist)
cc -O2 -Wall -o "$TMP/refclient" "$ROOT/bench/refclient/refclient.c"

REDIS_PORT=$(free_port)
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
	--dir "$TMP" --logfile "$TMP/redis.log" >/dev/null &
REDIS_PID=$!
wait_listening "$REDIS_PORT" || { echo "bench: redis-server did not start:" >&2; cat "$TMP/redis.log" >&2; exit 1; }
WEB_PORT=$(free_port)

start_prober() { # extra flags...
	"$TMP/redis-prober" --redis.addr="127.0.0.1:$REDIS_PORT" \
		--web.listen-address="127.0.0.1:$WEB_PORT" --log.level=warn "$@" \
		>>"$TMP/prober.log" 2>&1 &
	PROBER_PID=$!
	wait_listening "$WEB_PORT" || { echo "bench: prober did not start:" >&2; cat "$TMP/prober.log" >&2; exit 1; }
}
stop_prober() {
	kill "$PROBER_PID" && wait "$PROBER_PID" || true
	PROBER_PID=""
}

# kv KEY LINE: the value of KEY=value in LINE.
kv() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" <<<"$2"; }

samples=$((RATE * ROUND_SECONDS))
echo "== $(date -u +%Y-%m-%dT%H:%MZ) $(uname -r), $(nproc) CPUs, $(redis-server --version | cut -d' ' -f3), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== $ROUNDS rounds of ${ROUND_SECONDS}s, PING at $RATE/s on one connection, redis 127.0.0.1:$REDIS_PORT"
: >"$TMP/prober.txt" ; : >"$TMP/c.txt" ; : >"$TMP/rb.txt"
run_prober_round() {
	start_prober --probe.commands=ping --probe.rate="$RATE" --probe.connections=1
	sleep "$WARMUP_SECONDS"
	local out
	out=$("$TMP/promhist" -url "http://127.0.0.1:$WEB_PORT/metrics" -for "${ROUND_SECONDS}s" \
		-match command=ping,phase=probe)
	# The numbers must come from our prober, all of them answered: a
	# prober that died (and something else on its port) or a Redis that
	# went away would make them meaningless.
	kill -0 "$PROBER_PID" 2>/dev/null || { echo "bench: the prober exited during round $1:" >&2; cat "$TMP/prober.log" >&2; exit 1; }
	local n errs
	n=$(kv samples "$out")
	errs=$(curl -fsS "http://127.0.0.1:$WEB_PORT/metrics" | awk '/^redis_prober_requests_total/ && /command="ping"/ && !/result="ok"/ {s += $NF} END {print s + 0}')
	stop_prober
	if ((n < samples * 9 / 10)) || [ "$errs" != 0 ]; then
		echo "bench: round $1 got $n samples (want about $samples) and $errs failed requests" >&2; exit 1
	fi
	echo "$out" >>"$TMP/prober.txt"
	printf '  round %d prober     %s\n' "$1" "$out"
}
run_c_round() {
	local out
	out=$("$TMP/refclient" 127.0.0.1 "$REDIS_PORT" "$samples" "$RATE" $((RATE * WARMUP_SECONDS)))
	echo "$out" >>"$TMP/c.txt"
	printf '  round %d refclient  %s\n' "$1" "$out"
}
for r in $(seq "$ROUNDS"); do
	if ((r % 2)); then run_prober_round "$r"; run_c_round "$r"
	else run_c_round "$r"; run_prober_round "$r"; fi
	# closed loop, back to back: what a busy client on a warm CPU sees
	line=$(redis-benchmark -p "$REDIS_PORT" -c 1 -P 1 -t ping -n 20000 --csv | grep PING_MBULK | tr -d '"')
	echo "$line" >>"$TMP/rb.txt"
	printf '  round %d redis-benchmark %s\n' "$r" "$line"
done

# stats FILE KEY: "median (min-max)" of KEY over the rounds.
stats() {
	local vals
	vals=$(while read -r l; do kv "$2" "$l"; done <"$1" | sort -g)
	awk '{v[NR]=$1} END {m = NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2;
		printf "%7.1f (%s-%s)", m, v[1], v[NR]}' <<<"$vals"
}
median() {
	local vals
	vals=$(while read -r l; do kv "$2" "$l"; done <"$1" | sort -g)
	awk '{v[NR]=$1} END {print NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}' <<<"$vals"
}
# redis-benchmark csv: test,rps,avg,min,p50,p95,p99,max (ms)
rbstat() {
	cut -d, -f"$1" "$TMP/rb.txt" | sort -g |
		awk '{v[NR]=$1*1000} END {m = NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2;
			printf "%7.1f (%s-%s)", m, v[1], v[NR]}'
}

echo
echo "PING latency in µs, median of $ROUNDS rounds (min-max)"
printf '%-34s %-24s %-24s %-24s\n' client mean p50 p99
printf '%-34s %-24s %-24s %-24s\n' "redis-prober ($RATE/s, native hist)" \
	"$(stats "$TMP/prober.txt" mean_us)" "$(stats "$TMP/prober.txt" p50_us)" "$(stats "$TMP/prober.txt" p99_us)"
printf '%-34s %-24s %-24s %-24s\n' "refclient.c ($RATE/s, exact)" \
	"$(stats "$TMP/c.txt" mean_us)" "$(stats "$TMP/c.txt" p50_us)" "$(stats "$TMP/c.txt" p99_us)"
printf '%-34s %-24s %-24s %-24s\n' "redis-benchmark -c1 -P1 (closed)" "$(rbstat 3)" "$(rbstat 5)" "$(rbstat 7)"
ratio() { awk -v a="$(median "$TMP/prober.txt" "$1")" -v b="$(median "$TMP/c.txt" "$1")" 'BEGIN {printf "%.2f", a/b}'; }
echo "ratio prober/C (medians): mean $(ratio mean_us)  p50 $(ratio p50_us)  p99 $(ratio p99_us)   (goal ≤ 1.15, bar 1.5)"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the host moves these figures; compare within one run)"

echo
echo "== resources at default settings (10 probes/s, ping,get,set) over ${RESOURCE_SECONDS}s"
start_prober
sleep "$WARMUP_SECONDS"
hz=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$PROBER_PID/stat"; }
t0=$(ticks) w0=$(date +%s.%N)
sleep "$RESOURCE_SECONDS"
t1=$(ticks) w1=$(date +%s.%N)
rss=$(awk '/^VmRSS/ {print $2}' "/proc/$PROBER_PID/status")
hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$PROBER_PID/status")
threads=$(awk '/^Threads/ {print $2}' "/proc/$PROBER_PID/status")
stop_prober
awk -v t="$((t1 - t0))" -v hz="$hz" -v w0="$w0" -v w1="$w1" -v rss="$rss" -v hwm="$hwm" -v th="$threads" 'BEGIN {
	printf "CPU %.2f%% of one core (goal ≤ 1%%), RSS %.1f MiB (peak %.1f MiB, goal ≤ 20), %d threads\n",
		t / hz / (w1 - w0) * 100, rss / 1024, hwm / 1024, th }'

if [ -z "${SKIP_BURST:-}" ] && make -C "$ROOT" -n bench-burst >/dev/null 2>&1; then
	echo
	echo "== make bench-burst"
	make -C "$ROOT" --no-print-directory bench-burst
fi
