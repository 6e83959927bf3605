#!/usr/bin/env bash
# make demo: a throwaway redis-server on a free loopback port, the prober
# against it and, when the system has one, a Prometheus scraping the prober
# with the project's rules (alerts/*.yml). Ctrl-C stops them all and removes
# their temp dir. Set REDIS_ADDR to probe your own Redis instead: then
# periodic bursts (load tests that write keys) are off unless BURSTS=1.
# PROBER_BIN overrides ./redis-prober (the tests run their own build);
# PROMETHEUS overrides the prometheus binary (a missing one is skipped).
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
	# Debian starts a system redis-server on 6379 on install; the demo runs
	# its own on a free port and leaves nothing running behind it.
	if command -v systemctl >/dev/null 2>&1; then
		systemctl stop redis-server >/dev/null 2>&1 || true
	fi
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
prober_pid=$!

# Prometheus beside the prober: Debian's (bookworm ships 2.42, without
# native histograms unless told), scraping every 5 s so the p99 query has
# data within a quarter minute, with the rules the project ships.
http_ok() {
	if command -v curl >/dev/null 2>&1; then
		curl -fsS -o /dev/null --max-time 2 "$1" 2>/dev/null
	else
		python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' "$1" 2>/dev/null
	fi
}
prom_bin=${PROMETHEUS:-prometheus}
prom_line="not installed ($prom_bin not found; apt-get install prometheus), going on without it"
if command -v "$prom_bin" >/dev/null 2>&1; then
	pdir="$workdir/prometheus"
	mkdir -p "$pdir"
	{
		printf 'global:\n  scrape_interval: 5s\n  evaluation_interval: 5s\nrule_files:\n'
		for f in "$PWD"/alerts/*.yml; do
			[ -e "$f" ] && printf '  - "%s"\n' "$f"
		done
		printf 'scrape_configs:\n  - job_name: redis-prober\n    static_configs:\n      - targets: ["127.0.0.1:%s"]\n' "$wport"
	} >"$pdir/prometheus.yml"
	pport=${PROM_PORT:-$(free_port)}
	"$prom_bin" --config.file="$pdir/prometheus.yml" --storage.tsdb.path="$pdir/data" \
		--web.listen-address="127.0.0.1:$pport" --log.level=warn >"$pdir/prometheus.log" 2>&1 &
	prom_pid=$!
	pids+=($prom_pid)
	for _ in $(seq 100); do
		http_ok "http://127.0.0.1:$pport/-/ready" && break
		kill -0 "$prom_pid" 2>/dev/null || break
		sleep 0.1
	done
	if http_ok "http://127.0.0.1:$pport/-/ready"; then
		prom_line="http://127.0.0.1:$pport/   (scrapes the prober every 5 s, with the rules of alerts/; data in $pdir)"
	else
		prom_line="did not start (see below), going on without it"
		echo "prometheus did not start; its log:" >&2
		tail -n 20 "$pdir/prometheus.log" >&2 || true
		kill -TERM "$prom_pid" 2>/dev/null || true
		wait "$prom_pid" 2>/dev/null || true
		unset 'pids[-1]'
	fi
fi
for _ in $(seq 50); do http_ok "http://127.0.0.1:$wport/-/healthy" && break; sleep 0.1; done
# The native form first; "or" falls back to the classic _bucket series on a
# Prometheus without native histograms. phase="probe" leaves burst traffic out.
P99_QUERY='histogram_quantile(0.99, sum by (target, command) (rate(redis_prober_latency_seconds{phase="probe"}[1m]))) or histogram_quantile(0.99, sum by (target, command, le) (rate(redis_prober_latency_seconds_bucket{phase="probe"}[1m])))'
cat <<MSG

  redis-prober is probing $addr
  status:     http://127.0.0.1:$wport/   (latency per target within seconds, no Prometheus needed)
  prometheus: $prom_line
  metrics:    http://127.0.0.1:$wport/metrics
  try:        curl -s http://127.0.0.1:$wport/metrics | grep '^redis_prober_'
  bursts:     $bursts
  PromQL, probe p99 per command (native histograms or classic buckets, whichever Prometheus keeps):
    $P99_QUERY

  Ctrl-C stops the prober, Prometheus and the throwaway redis-server.

MSG
wait "$prober_pid" || true
