#!/usr/bin/env bash
# make demo: a throwaway redis-server on a free loopback port and the prober
# against it. Ctrl-C stops both. Set REDIS_ADDR to probe your own Redis instead:
# then periodic bursts (load tests that write keys) are off unless BURSTS=1.
# PROBER_BIN overrides ./redis-prober (the tests run their own build).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v redis-server >/dev/null 2>&1 && [ -z "${REDIS_ADDR:-}" ]; then
	echo "redis-server is missing; installing Debian's redis-server and redis-tools" >&2
	if [ "$(id -u)" -ne 0 ]; then
		echo "run as root (or: sudo apt-get install redis-server redis-tools)" >&2
		exit 1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >/dev/null
fi

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()' 2>/dev/null ||
		shuf -i 20000-60000 -n 1
}

workdir=$(mktemp -d)
pids=()
cleanup() {
	trap - INT TERM EXIT
	# The prober first, so it can delete its keys; then Redis.
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		kill -TERM "${pids[i]}" 2>/dev/null || true
		wait "${pids[i]}" 2>/dev/null || true
	done
	rm -rf "$workdir"
	echo "demo stopped" >&2
}
trap cleanup INT TERM EXIT

if [ -n "${REDIS_ADDR:-}" ]; then
	addr=$REDIS_ADDR
else
	rport=$(free_port)
	# Its own session: Ctrl-C reaches the prober, which still needs Redis
	# to delete its keys, and this script stops Redis afterwards.
	setsid redis-server --port "$rport" --bind 127.0.0.1 --dir "$workdir" --save '' --appendonly no \
		--logfile "$workdir/redis.log" --latency-monitor-threshold 10 &
	pids+=($!)
	for _ in $(seq 50); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.1; done
	addr="redis://127.0.0.1:$rport"
	echo "started a throwaway redis-server on 127.0.0.1:$rport (data in $workdir)" >&2
fi

# Periodic bursts load the server (2,000 ops/s for 10 s every 15 min, writing
# keys): fine on the throwaway server, never by surprise on one of yours.
burst_args=()
bursts="on against the throwaway server (2,000 ops/s for 10 s every 15 min)"
if [[ " $* " == *" --burst.interval"* ]]; then
	bursts="as --burst.interval says"
elif [ -n "${REDIS_ADDR:-}" ] && [ "${BURSTS:-0}" != 1 ]; then
	burst_args=(--burst.interval=0)
	bursts="off against your REDIS_ADDR (BURSTS=1 make demo turns them on)"
fi

wport=${WEB_PORT:-$(free_port)}
"${PROBER_BIN:-./redis-prober}" --redis.addr="$addr" --web.listen-address="127.0.0.1:$wport" ${burst_args[@]+"${burst_args[@]}"} "$@" &
pids+=($!)
sleep 1
# The native form first; "or" falls back to the classic _bucket series on a
# Prometheus without native histograms. phase="probe" leaves burst traffic out.
P99_QUERY='histogram_quantile(0.99, sum by (target, command) (rate(redis_prober_latency_seconds{phase="probe"}[1m]))) or histogram_quantile(0.99, sum by (target, command, le) (rate(redis_prober_latency_seconds_bucket{phase="probe"}[1m])))'
cat <<MSG

  redis-prober is probing $addr
  status:    http://127.0.0.1:$wport/   (latency per target within seconds, no Prometheus needed)
  metrics:   http://127.0.0.1:$wport/metrics
  try:       curl -s http://127.0.0.1:$wport/metrics | grep '^redis_prober_'
  bursts:    $bursts
  PromQL, probe p99 per command (native histograms or classic buckets, whichever Prometheus keeps):
    $P99_QUERY

  Ctrl-C stops the prober and the throwaway redis-server.

MSG
wait "${pids[-1]}" || true
