#!/usr/bin/env bash
# build.sh: `make demo`'s build, out loud. A first build on a fresh machine
# downloads the modules and compiles some 400 packages, a minute or two of
# silence from `go build`; this says so first and then counts the packages
# as they compile. Later builds come from Go's cache in seconds.
# Usage: scripts/build.sh OUTPUT [go build flags...]
set -Eeuo pipefail
trap 'rc=$?; printf "build: ERROR: line %s: %s exited %s\n" "$LINENO" "$BASH_COMMAND" "$rc" >&2' ERR
cd "$(dirname "$0")/.."
out="$1"
shift
GO="${GO:-go}"

say() { printf 'build: %s\n' "$*" >&2; }
t0=$SECONDS
say "building $out (a first build downloads modules and compiles for a minute or two; later ones take seconds)"
if ! "$GO" mod download 2>/dev/null; then
	"$GO" mod download # again, to show why
fi
total=$("$GO" list -deps ./cmd/redis-prober | wc -l)
status=$(mktemp)
n=0
tty=false
[ -t 2 ] && tty=true
# go build -v names each package it compiles (the cached ones are not
# named), so a count of its lines is the progress.
while IFS= read -r line; do
	case "$line" in
	*' '* | '#'*) printf '%s\n' "$line" >&2 ;; # a compile error, not a package
	*)
		n=$((n + 1))
		if $tty; then
			printf '\rbuild: compiled %d of at most %d packages\033[K' "$n" "$total" >&2
		elif ((n % 50 == 0)); then
			say "compiled $n of at most $total packages"
		fi
		;;
	esac
done < <(
	rc=0
	CGO_ENABLED=0 "$GO" build -v "$@" -o "$out" ./cmd/redis-prober 2>&1 || rc=$?
	echo "$rc" >"$status"
)
rc=$(cat "$status")
rm -f "$status"
$tty && ((n > 0)) && printf '\n' >&2
if [ "$rc" != 0 ]; then
	say "ERROR: go build failed (exit $rc)"
	exit "$rc"
fi
say "built $out in $((SECONDS - t0)) s ($n packages compiled, the rest from Go's build cache)"
