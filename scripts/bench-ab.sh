#!/usr/bin/env bash
# make bench-ab: one benchmark script run on several builds in interleaved
# rounds, so that a host that drifts over the hour moves every build alike
# (a figure of one build taken an hour after another's says nothing).
#
#   VARIANTS="778580a HEAD HEAD:--no-explain" ROUNDS=3 \
#     TARGETS=1000 SCALE_SECONDS=40 ./scripts/bench-ab.sh bench-scale.sh
#
# A variant is REV or REV:FLAGS; FLAGS (spaces as commas) go to the script
# as PROBER_FLAGS. Each REV is checked out once into a worktree under
# AB_DIR (default a temp dir, removed at the end) and its own copy of the
# script is run there, so an old build is measured by the script of its
# day. The order of the variants turns by one each round. Every other
# environment variable reaches the script as it is. Each run's output goes
# to AB_DIR/<round>-<variant>.txt; after the runs the summary lines of
# each are printed side by side, with the load average at each start.
# Read the medians and the spread: this prints every run, never a verdict.
set -euo pipefail

SCRIPT=${1:?usage: bench-ab.sh SCRIPT (a script of scripts/, e.g. bench-scale.sh)}
VARIANTS=${VARIANTS:?VARIANTS: the builds to compare, e.g. "778580a HEAD HEAD:--no-explain"}
ROUNDS=${ROUNDS:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
KEEP_AB=${AB_DIR:+1}
AB_DIR=${AB_DIR:-$(mktemp -d)}
((ROUNDS >= 1)) || { echo "bench-ab: ROUNDS must be at least 1" >&2; exit 2; }

read -ra variants <<<"$VARIANTS"
declare -A tree=()
cleanup() {
	for wt in "${tree[@]}"; do git -C "$ROOT" worktree remove --force "$wt" >/dev/null 2>&1 || true; done
	git -C "$ROOT" worktree prune
	[ -n "$KEEP_AB" ] || rm -rf "$AB_DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for v in "${variants[@]}"; do
	rev=${v%%:*}
	[ -n "${tree[$rev]:-}" ] && continue
	sha=$(git -C "$ROOT" rev-parse --verify "$rev^{commit}") || { echo "bench-ab: $rev is not a commit" >&2; exit 2; }
	tree[$rev]=$AB_DIR/tree-${sha:0:10}
	git -C "$ROOT" worktree add --detach --force "${tree[$rev]}" "$sha" >/dev/null
	[ -x "${tree[$rev]}/scripts/$SCRIPT" ] || { echo "bench-ab: $rev has no scripts/$SCRIPT" >&2; exit 2; }
done

name() { echo "$1" | tr ' /:' '_-_'; }
n=${#variants[@]}
for ((r = 1; r <= ROUNDS; r++)); do
	for ((i = 0; i < n; i++)); do
		v=${variants[$(((i + r - 1) % n))]}
		rev=${v%%:*} flags=""
		[ "$v" != "$rev" ] && flags=${v#*:}
		out=$AB_DIR/$r-$(name "$v").txt
		echo "== round $r/$ROUNDS: $v, $(date -u +%H:%M:%S) UTC, load $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$out"
		PROBER_FLAGS=${flags//,/ } "${tree[$rev]}/scripts/$SCRIPT" >>"$out" 2>&1 || echo "   (exit $?: see $out)"
	done
done

# The summary: the lines a script prints under its "== " headline, indented
# by two spaces, from each run in turn.
echo
for v in "${variants[@]}"; do
	echo "#### $v"
	for ((r = 1; r <= ROUNDS; r++)); do
		out=$AB_DIR/$r-$(name "$v").txt
		echo "-- round $r: $(head -1 "$out" | sed 's/^== round [0-9/]*: //')"
		grep -E '^  [A-Za-z/]' "$out" | grep -v '^    ' || true
	done
done
[ -n "$KEEP_AB" ] && echo "outputs kept in $AB_DIR"
exit 0
