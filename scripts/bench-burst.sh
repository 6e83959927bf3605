#!/usr/bin/env bash
# make bench-burst: the burst load generator side by side with
# redis-benchmark (and memtier_benchmark when installed), from ONE run
# against ONE throwaway local redis-server, with the same shape:
# 50 connections, 128-byte values, keys drawn uniformly from a 1M range,
# GETs only, at pipeline 16 and at pipeline 1.
#
# Every tool is counted the same way: what the server counted (INFO
# total_commands_processed) over the tool's wall time, and the tool's own
# CPU (user + system, from /usr/bin/time) per million requests. The
# figures go to stdout as a Markdown table for docs/performance.md.
#
# Knobs (environment): REQUESTS_P16 (4000000), REQUESTS_P1 (600000),
# CLIENTS (50), DATA_SIZE (128), KEY_RANGE (1000000), GOMAXPROCS for
# the prober (unset: Go's default).
set -euo pipefail

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

ROWS=()
# measure NAME PIPELINE REQUESTS CMD...: runs CMD under /usr/bin/time and
# records server-counted throughput and CPU per million requests.
measure() {
	local name=$1 pipeline=$2 requests=$3
	shift 3
	local before after t0 t1 rc0 rc1 cpu wall ops
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
	cpu=$(awk '{print $1+$2}' "$TMP/time")
	wall=$(echo "$t0 $t1" | awk '{print $2-$1}')
	ops=$((after - before))
	ROWS+=("$(awk -v n="$name" -v p="$pipeline" -v ops="$ops" -v wall="$wall" -v cpu="$cpu" \
		-v rc0="$rc0" -v rc1="$rc1" -v tick="$TICK" 'BEGIN {
		printf "| %s | %d | %d | %.2f | %.0f | %.2f | %.2f |", n, p, ops, wall, ops/wall, cpu/(ops/1e6), (rc1-rc0)/tick/(ops/1e6)
	}')")
	echo "${ROWS[-1]}" >&2
}

for P in 16 1; do
	if [ "$P" = 16 ]; then N=$REQUESTS_P16; else N=$REQUESTS_P1; fi
	PER_CLIENT=$((N / CLIENTS))
	redis-cli -p "$PORT" flushall >/dev/null
	measure "redis-prober burst" "$P" "$N" "$TMP/redis-prober" burst --redis.addr="127.0.0.1:$PORT" \
		--clients="$CLIENTS" --pipeline="$P" --ratio=0:1 --data-size="$DATA_SIZE" --key-minimum=0 \
		--key-maximum=$((KEY_RANGE - 1)) --key-pattern=R:R --requests="$PER_CLIENT" --warmup=0 \
		--abort-p99=0 --log.level=warn
	redis-cli -p "$PORT" flushall >/dev/null
	measure "redis-benchmark" "$P" "$N" redis-benchmark -p "$PORT" -c "$CLIENTS" -P "$P" -d "$DATA_SIZE" \
		-r "$KEY_RANGE" -n "$N" -t get -q
	if command -v memtier_benchmark >/dev/null; then
		redis-cli -p "$PORT" flushall >/dev/null
		measure "memtier_benchmark" "$P" "$N" memtier_benchmark -s 127.0.0.1 -p "$PORT" --threads=1 \
			--clients="$CLIENTS" --pipeline="$P" --ratio=0:1 --data-size="$DATA_SIZE" --key-minimum=0 \
			--key-maximum=$((KEY_RANGE - 1)) --key-pattern=R:R --requests="$PER_CLIENT" --hide-histogram
	fi
done

echo
echo "Host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), kernel $(uname -r);" \
	"$(redis-server --version | cut -d' ' -f1-3); GOMAXPROCS=${GOMAXPROCS:-default}."
echo
echo "| tool | pipeline | requests (server-counted) | wall s | ops/s | tool CPU s per 1M requests | redis-server CPU s per 1M requests |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
printf '%s\n' "${ROWS[@]}"
if ! command -v memtier_benchmark >/dev/null; then
	echo
	echo "memtier_benchmark is not installed (it is not a Debian package here), so it was skipped."
fi
