#!/usr/bin/env bash
# make bench-burst: the burst load generator side by side with
# redis-benchmark (and memtier_benchmark when installed), from ONE run
# against ONE throwaway local redis-server, with the same shape:
# 50 connections, 128-byte values, keys drawn uniformly from a 1M range,
# GETs only, at pipeline 16 and at pipeline 1.
#
# Every tool is counted the same way: what the server counted (INFO
# total_commands_processed) over the tool's wall time, and the tool's own
# CPU (user + system, from /usr/bin/time) per million requests. The tools
# take turns for ROUNDS rounds (a shared machine drifts) and the table
# gives the median with the range; it goes to stdout as Markdown for
# docs/performance.md.
#
# Then, in the same rounds (PACED=0 skips it): paced GETs at 1,000, 2,000,
# 10,000 and 50,000 ops/s on 1 and 4 connections, the burst's p50/p99/p99.9
# (kernel wire time) and its schedule lag beside bench/refclient at the same
# rate on one socket (its own clock and its kernel wire time) and
# memtier_benchmark --rate-limiting; and the step search's capacity and wall
# time at 50 connections, pipeline 1, against redis-benchmark's closed-loop
# throughput with the same connections (STEP=0 skips it).
#
# memtier_benchmark is a peer, never part of the repository: when
# ../shared/peers holds its source it is built once into MEMTIER_CACHE
# (~/.cache/redis-prober/memtier) with Debian's packages, else skipped
# with a message (MEMTIER=path uses a binary of yours).
#
# Knobs (environment): ROUNDS (3), REQUESTS_P16 (4000000), REQUESTS_P1
# (600000), CLIENTS (50), DATA_SIZE (128), KEY_RANGE (1000000), PACED_SECONDS
# (5), RATES ("1000 2000 10000 50000"), RB_THREADS (redis-benchmark's
# --threads, 2), GOMAXPROCS for the prober (unset: Go's default).
#
# The load average at the start of every round and the CPU steal over the
# whole run are printed with the tables: a figure from a busy host is not
# a figure.
set -Eeuo pipefail
trap 'rc=$?; printf "bench-burst: ERROR: line %s: %s exited %s\n" "$LINENO" "$BASH_COMMAND" "$rc" >&2' ERR

ROUNDS=${ROUNDS:-3}
RB_THREADS=${RB_THREADS:-2}
REQUESTS_P16=${REQUESTS_P16:-4000000}
REQUESTS_P1=${REQUESTS_P1:-600000}
CLIENTS=${CLIENTS:-50}
DATA_SIZE=${DATA_SIZE:-128}
KEY_RANGE=${KEY_RANGE:-1000000}

ROOT=$(cd "$(dirname "$0")/.." && pwd)
GO=${GO:-go}
for tool in redis-server redis-cli redis-benchmark "$GO"; do
	command -v "$tool" >/dev/null || { echo "bench-burst: $tool not found (apt-get install redis-server redis-tools)" >&2; exit 1; }
done
[ -x /usr/bin/time ] || { echo "bench-burst: /usr/bin/time not found (apt-get install time)" >&2; exit 1; }

TMP=$(mktemp -d)
REDIS_PID=""
cleanup() {
	[ -n "$REDIS_PID" ] && kill "$REDIS_PID" 2>/dev/null && wait "$REDIS_PID" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

PACED=${PACED:-1}
STEP=${STEP:-1}
PACED_SECONDS=${PACED_SECONDS:-5}
RATES=${RATES:-1000 2000 10000 50000}

echo "building the prober and bench/refclient" >&2
(cd "$ROOT" && CGO_ENABLED=0 "$GO" build -trimpath -o "$TMP/redis-prober" ./cmd/redis-prober)
cc -O2 -Wall -o "$TMP/refclient" "$ROOT/bench/refclient/refclient.c"

# memtier: a binary of the user's, one on the PATH, or one built from
# ../shared/peers into the cache (a minute, once).
MEMTIER_CACHE=${MEMTIER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/redis-prober/memtier}
memtier_build() {
	local src
	src=$(find "$ROOT/../shared/peers" -maxdepth 1 -name 'memtier_benchmark-*.tar.gz' -print -quit 2>/dev/null || true)
	if [ -z "$src" ]; then
		echo "bench-burst: memtier_benchmark skipped: no source in ../shared/peers" >&2
		return 1
	fi
	if [ "$(id -u)" = 0 ]; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends build-essential autoconf automake \
			pkg-config libevent-dev libpcre3-dev libssl-dev zlib1g-dev >/dev/null 2>&1 || true
	fi
	echo "bench-burst: building memtier_benchmark from $(basename "$src") into $MEMTIER_CACHE (about a minute, once)" >&2
	rm -rf "$MEMTIER_CACHE.build" && mkdir -p "$MEMTIER_CACHE.build" "$MEMTIER_CACHE"
	tar -xzf "$src" -C "$MEMTIER_CACHE.build" --strip-components=1
	if (cd "$MEMTIER_CACHE.build" && autoreconf -if && ./configure && make -j"$(nproc)") >"$MEMTIER_CACHE/build.log" 2>&1; then
		cp "$MEMTIER_CACHE.build/memtier_benchmark" "$MEMTIER_CACHE/memtier_benchmark"
		rm -rf "$MEMTIER_CACHE.build"
		return 0
	fi
	echo "bench-burst: memtier_benchmark skipped: its build failed (see $MEMTIER_CACHE/build.log)" >&2
	return 1
}
if [ -z "${MEMTIER:-}" ]; then
	if command -v memtier_benchmark >/dev/null; then
		MEMTIER=$(command -v memtier_benchmark)
	elif [ -x "$MEMTIER_CACHE/memtier_benchmark" ] || memtier_build; then
		MEMTIER="$MEMTIER_CACHE/memtier_benchmark"
	fi
fi
have_memtier() { [ -n "${MEMTIER:-}" ] && [ -x "$MEMTIER" ]; }

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 16399)
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$TMP" \
	--logfile "$TMP/redis.log" --daemonize no &
REDIS_PID=$!
for _ in $(seq 100); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.05; done
redis-cli -p "$PORT" ping >/dev/null

processed() { redis-cli -p "$PORT" info stats | tr -d '\r' | awk -F: '$1=="total_commands_processed"{print $2}'; }
redis_cpu() { awk '{print $14+$15}' "/proc/$REDIS_PID/stat"; } # clock ticks
TICK=$(getconf CLK_TCK)

# measure NAME PIPELINE CMD...: runs CMD under /usr/bin/time and appends
# "name pipeline ops wall ops/s toolcpu/1M rediscpu/1M" to $TMP/samples.
measure() {
	local name=$1 pipeline=$2
	shift 2
	local before after t0 t1 rc0 rc1
	before=$(processed)
	rc0=$(redis_cpu)
	t0=$(date +%s.%N)
	/usr/bin/time -f '%U %S' -o "$TMP/time" "$@" >"$TMP/out" 2>"$TMP/err" || {
		echo "bench-burst: $name failed:" >&2
		tail -5 "$TMP/err" >&2
		return 1
	}
	t1=$(date +%s.%N)
	rc1=$(redis_cpu)
	after=$(processed)
	awk -v n="$name" -v p="$pipeline" -v ops="$((after - before))" -v t0="$t0" -v t1="$t1" \
		-v cpu="$(awk '{print $1+$2}' "$TMP/time")" -v rc0="$rc0" -v rc1="$rc1" -v tick="$TICK" 'BEGIN {
		wall = t1 - t0
		printf "%s\t%d\t%d\t%.2f\t%.0f\t%.3f\t%.3f\n", n, p, ops, wall, ops/wall, cpu/(ops/1e6), (rc1-rc0)/tick/(ops/1e6)
	}' | tee -a "$TMP/samples" >&2
}

# refclient_round CONNS RATE SECS: the C reference client, one process a
# connection (each paces RATE/CONNS on its own blocking socket, as a
# lean C client would), started together; the quantiles are of all their
# wire times (nearest rank), the lateness the processes' mean.
refclient_round() {
	local conns=$1 rate=$2 secs=$3 i per=$(($2 / $1)) pids=()
	for ((i = 0; i < conns; i++)); do
		REFCLIENT_WIRE_OUT="$TMP/ref.wire.$i" "$TMP/refclient" 127.0.0.1 "$PORT" $((per * secs)) "$per" "$per" \
			>"$TMP/ref.out.$i" &
		pids+=($!)
	done
	for i in "${pids[@]}"; do
		wait "$i" || return 0
	done
	local late
	late=$(cat "$TMP"/ref.out.* | awk '{for (i = 1; i <= NF; i++) {split($i, kv, "="); if (kv[1] == "late_us") {s += kv[2]; n++}}}
		END {printf "%.1f", n ? s / n : 0}')
	sort -n "$TMP"/ref.wire.* | awk -v c="$conns" -v r="$rate" -v late="$late" '{v[NR] = $1}
		function q(p,  i) {i = int(p * NR + 0.999999999); if (i < 1) i = 1; return v[i] / 1000}
		END {if (NR) print "refclient-wire", c, r, q(.5), q(.99), q(.999), late}'
	rm -f "$TMP"/ref.wire.* "$TMP"/ref.out.*
}

# paced_round N: every rate on 1 and 4 connections, the tools in turn.
# Samples go to $TMP/paced as "tool conns rate p50 p99 p999 lag_p99" (µs).
paced_round() {
	local rate conns secs=$PACED_SECONDS out
	for rate in $RATES; do
		for conns in 1 4; do
			redis-cli -p "$PORT" flushall >/dev/null
			"$TMP/redis-prober" burst --redis.addr="127.0.0.1:$PORT" --clients="$conns" --rate="$rate" --ratio=0:1 \
				--data-size="$DATA_SIZE" --key-maximum=$((KEY_RANGE - 1)) --test-time="${secs}s" --warmup=1s \
				--abort-p99=0 --json-out-file="$TMP/paced.json" --log.level=warn >/dev/null 2>"$TMP/err" || {
				tail -3 "$TMP/err" >&2
				continue
			}
			python3 - "$TMP/paced.json" "$conns" "$rate" >>"$TMP/paced" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["trials"][0]
p = {x["percentile"]: x["ms"] * 1000 for x in t["totals"]["latency"]["percentiles"]}
lag = {x["percentile"]: x["ms"] * 1000 for x in t["client"]["schedule_lag"]["percentiles"]}
print("prober-wire", sys.argv[2], sys.argv[3], p[50], p[99], p[99.9], lag[99])
PY
			if [ "$rate" -le 20000 ]; then
				refclient_round "$conns" "$rate" "$secs" >>"$TMP/paced"
			fi
			if have_memtier; then
				"$MEMTIER" -s 127.0.0.1 -p "$PORT" --threads=1 --clients="$conns" --ratio=0:1 \
					--data-size="$DATA_SIZE" --key-minimum=1 --key-maximum="$KEY_RANGE" --test-time="$secs" \
					--rate-limiting=$((rate / conns)) --hide-histogram >"$TMP/mt.out" 2>&1 || continue
				awk -v c="$conns" -v r="$rate" '$1 == "Totals" {print "memtier-user", c, r, $6 * 1000, $7 * 1000, $8 * 1000, "-"}' \
					"$TMP/mt.out" >>"$TMP/paced"
			fi
		done
	done
}

# step_round N: the step search at 50 connections, pipeline 1 (defaults
# otherwise), and redis-benchmark's closed-loop throughput with the same
# connections. Samples go to $TMP/step as "capacity seconds closed_loop".
step_round() {
	local t0 t1 cap closed
	redis-cli -p "$PORT" flushall >/dev/null
	t0=$(date +%s.%N)
	"$TMP/redis-prober" burst --redis.addr="127.0.0.1:$PORT" --step --clients="$CLIENTS" --ratio=0:1 \
		--data-size="$DATA_SIZE" --key-maximum=$((KEY_RANGE - 1)) --json-out-file="$TMP/step.json" \
		--log.level=warn >"$TMP/step.out" 2>&1 || true
	t1=$(date +%s.%N)
	cap=$(python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["capacity"]; print("%.0f %s" % (c["ops_per_sec"], c["stop"]))' "$TMP/step.json" 2>/dev/null || echo "n/a n/a")
	closed=$(redis-benchmark -p "$PORT" -c "$CLIENTS" -P 1 -d "$DATA_SIZE" -r "$KEY_RANGE" -n 1000000 -t get -q \
		--threads "$RB_THREADS" |
		tr '\r' '\n' | awk '/requests per second/ {v = $2} END {print v + 0}')
	echo "$cap $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.0f", b - a}') $closed" | tee -a "$TMP/step" >&2
}

# cpu_times: the total and the steal of all CPUs since boot, in ticks.
cpu_times() { awk '$1 == "cpu" {t = 0; for (i = 2; i <= 9; i++) t += $i; print t, $9}' /proc/stat; }
read -r CPU_T0 STEAL0 < <(cpu_times)
for round in $(seq "$ROUNDS"); do
	echo "round $round of $ROUNDS" >&2
	echo "$round $(cut -d' ' -f1-3 /proc/loadavg)" >>"$TMP/loads"
	for P in 16 1; do
		if [ "$P" = 16 ]; then N=$REQUESTS_P16; else N=$REQUESTS_P1; fi
		PER_CLIENT=$((N / CLIENTS))
		redis-cli -p "$PORT" flushall >/dev/null
		measure "redis-prober burst" "$P" "$TMP/redis-prober" burst --redis.addr="127.0.0.1:$PORT" \
			--clients="$CLIENTS" --pipeline="$P" --ratio=0:1 --data-size="$DATA_SIZE" --key-minimum=0 \
			--key-maximum=$((KEY_RANGE - 1)) --key-pattern=R:R --requests="$PER_CLIENT" --warmup=0 \
			--abort-p99=0 --trials=1 --log.level=warn || true
		redis-cli -p "$PORT" flushall >/dev/null
		measure "redis-benchmark" "$P" redis-benchmark -p "$PORT" -c "$CLIENTS" -P "$P" -d "$DATA_SIZE" \
			-r "$KEY_RANGE" -n "$N" -t get -q --threads "$RB_THREADS" || true
		if have_memtier; then
			redis-cli -p "$PORT" flushall >/dev/null
			measure "memtier_benchmark" "$P" "$MEMTIER" -s 127.0.0.1 -p "$PORT" --threads=1 \
				--clients="$CLIENTS" --pipeline="$P" --ratio=0:1 --data-size="$DATA_SIZE" --key-minimum=1 \
				--key-maximum="$KEY_RANGE" --key-pattern=R:R --requests="$PER_CLIENT" --hide-histogram || true
		fi
	done
	if [ "$PACED" = 1 ]; then paced_round "$round"; fi
	if [ "$STEP" = 1 ]; then step_round "$round"; fi
done

echo
echo "Host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), kernel $(uname -r);" \
	"$(redis-server --version | cut -d' ' -f1-3); GOMAXPROCS=${GOMAXPROCS:-default}."
echo
echo "Median of $ROUNDS alternating rounds, range in brackets; redis-benchmark runs with --threads $RB_THREADS."
echo
echo "| pipeline | tool | ops/s | tool CPU s per 1M requests | redis-server CPU s per 1M requests |"
echo "| ---: | --- | ---: | ---: | ---: |"
for P in 16 1; do
	for name in "redis-prober burst" "redis-benchmark" "memtier_benchmark"; do
		awk -F'\t' -v n="$name" -v p="$P" '$1==n && $2==p' "$TMP/samples" | sort -t$'\t' -k5,5n >"$TMP/sel"
		[ -s "$TMP/sel" ] || continue
		awk -F'\t' -v n="$name" -v p="$P" '
			{ ops[NR]=$5; cpu[NR]=$6; rcpu[NR]=$7 }
			function med(a, k,   t, i, j, s) { # median of a[1..k], a copy sorted
				for (i = 1; i <= k; i++) s[i] = a[i]
				for (i = 2; i <= k; i++) { t = s[i]; for (j = i-1; j >= 1 && s[j] > t; j--) s[j+1] = s[j]; s[j+1] = t }
				return k % 2 ? s[(k+1)/2] : (s[k/2] + s[k/2+1]) / 2
			}
			function lo(a, k,   i, m) { m = a[1]; for (i = 2; i <= k; i++) if (a[i] < m) m = a[i]; return m }
			function hi(a, k,   i, m) { m = a[1]; for (i = 2; i <= k; i++) if (a[i] > m) m = a[i]; return m }
			END {
				printf "| %d | %s | %.0f [%.0f-%.0f] | %.2f [%.2f-%.2f] | %.2f [%.2f-%.2f] |\n", p, n,
					med(ops, NR), lo(ops, NR), hi(ops, NR), med(cpu, NR), lo(cpu, NR), hi(cpu, NR),
					med(rcpu, NR), lo(rcpu, NR), hi(rcpu, NR)
			}' "$TMP/sel"
	done
done
if ! have_memtier; then
	echo
	echo "memtier_benchmark was skipped (no binary, and none could be built from ../shared/peers)."
fi
if [ -s "$TMP/paced" ]; then
	echo
	echo "Paced GETs, $PACED_SECONDS s a run: median of $ROUNDS rounds [range], µs. prober-wire is the burst's"
	echo "latency (kernel stamps, its own lateness apart as lag p99); refclient-wire is the C client,"
	echo "one process a connection on a blocking socket, by the kernel's stamps (lag: its mean timer"
	echo "lateness); memtier-user is memtier_benchmark --rate-limiting, timed from its actual send in"
	echo "user space."
	echo
	echo "| conns | rate | tool | p50 | p99 | p99.9 | lag |"
	echo "| ---: | ---: | --- | ---: | ---: | ---: | ---: |"
	sort -k2,2n -k3,3n -k1,1 "$TMP/paced" | awk '
		function med(s, k,   a, n, i, j, t) { n = split(s, a, " "); for (i = 2; i <= n; i++) { t = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j+1] = a[j]; a[j+1] = t }
			if (a[1] == "-") return "-"
			return sprintf("%.0f [%.0f-%.0f]", n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2, a[1], a[n]) }
		{ k = $2 " " $3 " " $1; if (!(k in seen)) { seen[k] = 1; order[++m] = k }
		  p50[k] = p50[k] " " $4; p99[k] = p99[k] " " $5; p999[k] = p999[k] " " $6; lag[k] = lag[k] " " $7 }
		END { for (i = 1; i <= m; i++) { k = order[i]; split(k, f, " ")
			printf "| %s | %s | %s | %s | %s | %s | %s |\n", f[1], f[2], f[3], med(p50[k]), med(p99[k]), med(p999[k]), med(lag[k]) } }'
fi
if [ -s "$TMP/step" ]; then
	echo
	echo "Step search (50 connections, pipeline 1, default objective 5 ms), per round:"
	echo "capacity ops/s, why it stopped, its wall time s, redis-benchmark -c $CLIENTS -P 1 closed-loop ops/s:"
	sed 's/^/    /' "$TMP/step"
fi
read -r CPU_T1 STEAL1 < <(cpu_times)
echo
echo "Load average (1, 5, 15 min) at the start of each round: $(awk '{printf "%s%s: %s %s %s", (NR > 1 ? "; " : ""), $1, $2, $3, $4}' "$TMP/loads");" \
	"at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
echo "CPU steal over the run: $(awk -v t="$((CPU_T1 - CPU_T0))" -v s="$((STEAL1 - STEAL0))" 'BEGIN {printf "%.1f", (t > 0 ? 100 * s / t : 0)}') %."
