#!/usr/bin/env bash
# make soak: run the prober for SOAK (default 10m) against a throwaway
# redis-server with probes at 100/s, a burst every minute, a Redis restart
# (SIGKILL, same port) and a 2 s SIGSTOP pause every few minutes, and sample
# the prober's RSS, goroutines, open fds and in-use heap every 10 s. At the
# end it prints the least-squares slope of each after the first minute (the
# goal is flat), and checks that SIGTERM exits 0 and leaves no prober key.
#
# Knobs (environment): SOAK (10m; s, m or h), RATE (100), FAULT_EVERY (180,
# seconds between restarts; pauses fall halfway between), OUT (a CSV of the
# samples; default in the temp dir, printed at the end).
set -euo pipefail

SOAK=${SOAK:-10m}
RATE=${RATE:-100}
FAULT_EVERY=${FAULT_EVERY:-180}
SAMPLE_EVERY=10
GO=${GO:-go}
ROOT=$(cd "$(dirname "$0")/.." && pwd)

for tool in redis-server redis-cli curl awk "$GO"; do
	command -v "$tool" >/dev/null || { echo "soak: $tool not found" >&2; exit 1; }
done

case $SOAK in
*h) DURATION=$((${SOAK%h} * 3600)) ;;
*m) DURATION=$((${SOAK%m} * 60)) ;;
*s) DURATION=${SOAK%s} ;;
*) DURATION=$SOAK ;;
esac
if [ "$DURATION" -lt 120 ]; then
	echo "soak: SOAK=$SOAK is too short; the slopes skip the first minute (use at least 2m)" >&2
	exit 2
fi

TMP=$(mktemp -d /tmp/redis-prober-soak.XXXXXX)
OUT=${OUT:-$TMP/soak.csv}
REDIS_PID=""
PROBER_PID=""
cleanup() {
	[ -n "$PROBER_PID" ] && kill "$PROBER_PID" 2>/dev/null || true
	[ -n "$REDIS_PID" ] && kill -CONT "$REDIS_PID" 2>/dev/null && kill -9 "$REDIS_PID" 2>/dev/null || true
}
trap cleanup EXIT

# shellcheck source=lib.sh
. "$ROOT/scripts/lib.sh"

REDIS_PORT=$(free_port)
WEB_PORT=$(free_port)

start_redis() {
	redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --dir "$TMP" --save "" --appendonly no \
		--logfile "$TMP/redis.log" --daemonize no &
	REDIS_PID=$!
	for _ in $(seq 100); do
		redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && return
		sleep 0.1
	done
	echo "soak: redis-server did not start" >&2
	exit 1
}

echo "soak: building the prober (no race detector, as shipped)"
(cd "$ROOT" && CGO_ENABLED=0 "$GO" build -trimpath -o "$TMP/redis-prober" ./cmd/redis-prober)
start_redis
"$TMP/redis-prober" --redis.addr="redis://127.0.0.1:$REDIS_PORT" --web.listen-address="127.0.0.1:$WEB_PORT" \
	--probe.rate="$RATE" --probe.commands=ping,get,set,hgetall,lrange,eval --probe.timeout=500ms \
	--burst.interval=1m --burst.test-time=5s --burst.warmup=1s --burst.rate=2000 --burst.clients=4 --burst.abort-p99=100ms \
	--collector.refresh-interval=5s --log.level=info 2>"$TMP/prober.log" &
PROBER_PID=$!
for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$WEB_PORT/-/ready" >/dev/null 2>&1 && break
	sleep 0.1
done

metric() { # metric NAME: the first sample of an unlabelled series
	awk -v n="$1" '$1 == n { print $2; exit }' "$TMP/metrics"
}

echo "soak: $SOAK, probes at $RATE/s, a burst every minute, a restart every ${FAULT_EVERY}s and a 2s pause halfway between"
echo "seconds,rss_bytes,goroutines,fds,heap_inuse_bytes" >"$OUT"
printf "%7s %10s %10s %6s %10s  %s\n" seconds rss_MiB goroutines fds heap_MiB event
START=$(date +%s)
next_sample=0
while :; do
	now=$(($(date +%s) - START))
	[ "$now" -gt "$DURATION" ] && break
	event=""
	if [ "$now" -ge "$next_sample" ]; then
		if [ "$now" -gt 0 ] && [ $((next_sample % FAULT_EVERY)) -eq 0 ]; then
			kill -9 "$REDIS_PID"
			wait "$REDIS_PID" 2>/dev/null || true
			sleep 1
			start_redis
			event="redis restarted"
		elif [ "$now" -gt 0 ] && [ $((next_sample % FAULT_EVERY)) -eq $((FAULT_EVERY / 2 / SAMPLE_EVERY * SAMPLE_EVERY)) ]; then
			kill -STOP "$REDIS_PID"
			sleep 2
			kill -CONT "$REDIS_PID"
			event="redis paused 2s"
		fi
		kill -0 "$PROBER_PID" 2>/dev/null || { echo "soak: the prober died; log:" >&2; tail -20 "$TMP/prober.log" >&2; exit 1; }
		curl -sf "http://127.0.0.1:$WEB_PORT/metrics" >"$TMP/metrics" || : >"$TMP/metrics"
		rss=$(awk '/^VmRSS:/ { print $2 * 1024 }' "/proc/$PROBER_PID/status")
		fds=$(ls "/proc/$PROBER_PID/fd" | wc -l)
		gor=$(metric go_goroutines)
		heap=$(metric go_memstats_heap_inuse_bytes)
		echo "$next_sample,$rss,${gor:-NaN},$fds,${heap:-NaN}" >>"$OUT"
		awk -v t="$next_sample" -v r="$rss" -v g="${gor:-0}" -v f="$fds" -v h="${heap:-0}" -v e="$event" \
			'BEGIN { printf "%7d %10.1f %10d %6d %10.1f  %s\n", t, r / 1048576, g, f, h / 1048576, e }'
		next_sample=$((next_sample + SAMPLE_EVERY))
	fi
	sleep 1
done

echo
echo "soak: least-squares slope after the first minute (samples in $OUT)"
awk -F, 'NR > 1 && $1 >= 60 {
	n++; x = $1 / 60
	for (i = 2; i <= 5; i++) { sx[i] += x; sy[i] += $i; sxx[i] += x * x; sxy[i] += x * $i
		if (n == 1 || $i < lo[i]) lo[i] = $i; if (n == 1 || $i > hi[i]) hi[i] = $i }
}
END {
	split("rss_bytes goroutines fds heap_inuse_bytes", name, " ")
	printf "%-18s %14s %14s %14s %16s %12s\n", "series", "mean", "min", "max", "slope_per_min", "over_run_%"
	for (i = 2; i <= 5; i++) {
		d = n * sxx[i] - sx[i] * sx[i]
		slope = (d > 0) ? (n * sxy[i] - sx[i] * sy[i]) / d : 0
		mean = sy[i] / n
		# Parenthesised: a bare ">" in printf arguments is a redirection.
		growth = (mean > 0) ? 100 * slope * (x - 1) / mean : 0
		printf "%-18s %14.1f %14.1f %14.1f %16.2f %12.2f\n", name[i - 1], mean, lo[i], hi[i], slope, growth
	}
}' "$OUT"

probe_ok=$(awk '/^redis_prober_requests_total\{/ && /phase="probe"/ && /result="ok"/ { s += $2 } END { print s + 0 }' "$TMP/metrics")
probe_bad=$(awk '/^redis_prober_requests_total\{/ && /phase="probe"/ && !/result="ok"/ { s += $2 } END { print s + 0 }' "$TMP/metrics")
bursts=$(awk '/^redis_prober_burst_runs_total\{/ { split($0, a, "outcome=\""); split(a[2], b, "\""); c[b[1]] += $2 } END { for (o in c) printf "%s=%d ", o, c[o] }' "$TMP/metrics")
echo "probes: $probe_ok ok, $probe_bad failed (timeouts and errors, mostly during restarts and pauses); bursts: $bursts"
echo "log lines: $(wc -l <"$TMP/prober.log") in total, $(grep -c 'level=WARN' "$TMP/prober.log" || true) warnings, $(grep -c 'level=ERROR' "$TMP/prober.log" || true) errors"

kill -TERM "$PROBER_PID"
t0=$(date +%s%N)
status=0
wait "$PROBER_PID" || status=$?
PROBER_PID=""
echo "SIGTERM: exit $status after $((($(date +%s%N) - t0) / 1000000)) ms; keys left: $(redis-cli -p "$REDIS_PORT" --scan --pattern 'redis-prober:*' | wc -l)"
echo "samples: $OUT; prober log: $TMP/prober.log"
