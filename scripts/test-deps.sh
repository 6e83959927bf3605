#!/usr/bin/env bash
# make test's first step: what the tests need on a fresh Debian machine.
# As root it installs the missing Debian packages (apt-get update first) and
# fetches the test matrix's newer peers into a cache outside the clone
# (scripts/peers.sh: about three minutes cold for Debian's on a busy
# two-core host, plus 5 to 10 minutes to build Prometheus 3.16; nothing when
# warm). As another
# user it installs nothing: it names what is missing and the one command
# that installs it, and the tests that need it skip (or fail under CI=true).
set -Eeuo pipefail
# A failing step says which, in one line (set -e alone exits silently and
# make prints only its exit code).
trap 'rc=$?; printf "test-deps: ERROR: line %s: %s exited %s\n" "$LINENO" "$BASH_COMMAND" "$rc" >&2' ERR
cd "$(dirname "$0")/.."

need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || need+=(redis-tools)
command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
command -v promtool >/dev/null 2>&1 || [[ " ${need[*]} " == *" prometheus "* ]] || need+=(prometheus)
command -v cc >/dev/null 2>&1 || need+=(gcc)
command -v curl >/dev/null 2>&1 || need+=(curl)
# The status page's browser test loads it in headless Chromium, with a font
# so the screenshot shows text.
command -v chromium >/dev/null 2>&1 || need+=(chromium fonts-dejavu-core)

if [ "$(id -u)" != 0 ]; then
	if [ ${#need[@]} -gt 0 ]; then
		echo "test-deps: missing ${need[*]}; as root: apt-get update && apt-get install -y ${need[*]} && scripts/peers.sh" >&2
	fi
	exit 0
fi
if [ ${#need[@]} -gt 0 ]; then
	export DEBIAN_FRONTEND=noninteractive
	echo "test-deps: installing ${need[*]}"
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
	# Debian starts a system redis-server and prometheus on install; the
	# tests start their own on free ports and do not need them.
	if command -v systemctl >/dev/null 2>&1; then
		systemctl stop redis-server prometheus >/dev/null 2>&1 || true
	fi
fi
./scripts/peers.sh
