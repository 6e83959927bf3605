#!/usr/bin/env bash
# capture.sh NAME SERVER-BIN CLI-BIN: start the server on a free loopback
# port in a temp dir, provoke what the collectors read (a fork, latency
# spikes, slow, large-request and large-reply COMMANDLOG entries on Valkey
# 8.1+), and save the replies as the server sent them:
#   ../../../internal/redisinfo/testdata/info/NAME.txt  INFO (the bulk's text)
#   NAME/info-commandstats.txt   INFO commandstats (the bulk's text)
#   NAME/*.resp                  RESP2 replies, byte for byte
# Run from collector/testdata/servers; see README.md for what it produced.
set -euo pipefail
name="$1" bin="$2" cli="$3"
dir="$(mktemp -d)"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
"$bin" --port "$port" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly no --daemonize yes \
	--logfile "$dir/log" --pidfile "$dir/pid" --protected-mode no --enable-debug-command yes >/dev/null
trap 'kill "$(cat "$dir/pid")" 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 50); do "$cli" -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
c() { "$cli" -p "$port" "$@" >/dev/null; }
# raw FILE INLINE-COMMAND: the server's reply to one inline command.
raw() {
	exec 3<>"/dev/tcp/127.0.0.1/$port"
	printf '%s\r\n' "$2" >&3
	timeout 1 cat <&3 >"$1" || true
	exec 3>&-
}
# text FILE INLINE-COMMAND: the text of a bulk reply (INFO).
text() {
	raw "$1.tmp" "$2"
	tail -c +"$(($(head -1 "$1.tmp" | wc -c) + 1))" "$1.tmp" | head -c -2 >"$1"
	rm -f "$1.tmp"
}
mkdir -p "$name"
c config set latency-monitor-threshold 1
c debug populate 200000 redis-prober:capture: 64
for cmd in get ping set; do for _ in $(seq 20); do c "$cmd" redis-prober:capture:1 v; done 2>/dev/null || true; done
c bgsave
for _ in $(seq 100); do [ "$("$cli" -p "$port" info persistence | tr -d '\r' | grep rdb_bgsave_in_progress:)" = rdb_bgsave_in_progress:0 ] && break; sleep 0.1; done
c debug sleep 0.01
c debug sleep 0.02
if "$cli" -p "$port" command info commandlog | grep -q commandlog; then
	c config set commandlog-execution-slower-than 1000 commandlog-request-larger-than 1024 commandlog-reply-larger-than 1024
	c commandlog reset slow
	c debug sleep 0.002
	c debug sleep 0.005
	big="$(head -c 2048 /dev/zero | tr '\0' x)"
	c set redis-prober:capture:big "$big"
	c get redis-prober:capture:big
	for t in slow large-request large-reply; do raw "$name/commandlog-len-$t.resp" "COMMANDLOG LEN $t"; done
	raw "$name/commandlog-get-slow-1.resp" "COMMANDLOG GET 128 slow"
	c debug sleep 0.003
	c debug sleep 0.05
	raw "$name/commandlog-get-slow-2.resp" "COMMANDLOG GET 128 slow"
fi
text "../../../internal/redisinfo/testdata/info/$name.txt" "INFO"
text "$name/info-commandstats.txt" "INFO commandstats"
raw "$name/latency-latest.resp" "LATENCY LATEST"
raw "$name/latency-histogram.resp" "LATENCY HISTOGRAM get ping set"
raw "$name/config-get.resp" "CONFIG GET maxmemory maxclients tcp-backlog latency-monitor-threshold appendonly appendfsync no-appendfsync-on-rewrite"
"$bin" --version | head -1 >"$name/version.txt"
