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
# Knobs (environment): ROUNDS (3), REQUESTS_P16 (4000000), REQUESTS_P1
# (600000), CLIENTS (50), DATA_SIZE (128), KEY_RANGE (1000000),
# GOMAXPROCS for the prober (unset: Go's default).
set -euo pipefail

ROUNDS=${ROUNDS:-3}
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

echo "building the prober" >&2
(cd "$ROOT" && CGO_ENABLED=0 "$GO" build -trimpath -o "$TMP/redis-prober" ./cmd/redis-prober)

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

for round in $(seq "$ROUNDS"); do
	echo "round $round of $ROUNDS" >&2
	for P in 16 1; do
		if [ "$P" = 16 ]; then N=$REQUESTS_P16; else N=$REQUESTS_P1; fi
		PER_CLIENT=$((N / CLIENTS))
		redis-cli -p "$PORT" flushall >/dev/null
		measure "redis-prober burst" "$P" "$TMP/redis-prober" burst --redis.addr="127.0.0.1:$PORT" \
			--clients="$CLIENTS" --pipeline="$P" --ratio=0:1 --data-size="$DATA_SIZE" --key-minimum=0 \
			--key-maximum=$((KEY_RANGE - 1)) --key-pattern=R:R --requests="$PER_CLIENT" --warmup=0 \
			--abort-p99=0 --trials=1 --log.level=warn
		redis-cli -p "$PORT" flushall >/dev/null
		measure "redis-benchmark" "$P" redis-benchmark -p "$PORT" -c "$CLIENTS" -P "$P" -d "$DATA_SIZE" \
			-r "$KEY_RANGE" -n "$N" -t get -q
		if command -v memtier_benchmark >/dev/null; then
			redis-cli -p "$PORT" flushall >/dev/null
			measure "memtier_benchmark" "$P" memtier_benchmark -s 127.0.0.1 -p "$PORT" --threads=1 \
				--clients="$CLIENTS" --pipeline="$P" --ratio=0:1 --data-size="$DATA_SIZE" --key-minimum=0 \
				--key-maximum=$((KEY_RANGE - 1)) --key-pattern=R:R --requests="$PER_CLIENT" --hide-histogram
		fi
	done
done

echo
echo "Host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), kernel $(uname -r);" \
	"$(redis-server --version | cut -d' ' -f1-3); GOMAXPROCS=${GOMAXPROCS:-default}."
echo
echo "Median of $ROUNDS alternating rounds, range in brackets."
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
if ! command -v memtier_benchmark >/dev/null; then
	echo
	echo "memtier_benchmark is not installed (it is not a Debian package here), so it was skipped."
fi
