#!/usr/bin/env bash
# peers.sh: fetch the newer peers the test matrix runs against, from Debian's
# own suites, into a cache outside the clone:
#
#   prometheus-3.5   prometheus + promtool 3.5 (sid; Go binaries, need only libc)
#   redis_exporter   prometheus-redis-exporter (sid; a Go binary)
#   valkey-8.0       valkey-server 8.0 (bookworm-backports; built for bookworm)
#   redis-8.0        redis-server 8.0 (trixie)
#   valkey-8.1       valkey-server 8.1 (trixie)
#   valkey-9.1       valkey-server 9.1 (sid)
#   redis-8          redis-server: the newest Redis 8 Debian has (sid)
#   prometheus-3.16  prometheus + promtool 3.16, built from the Go module
#                    (no Debian suite has it): `go install` of v0.316.0
#
# Nothing is installed into the system from the newer suites: packages are
# fetched with `apt-get download` and unpacked with `dpkg -x`. The trixie
# and sid servers are built against a newer glibc than bookworm's, so they
# run on a newer suite's own loader and libc (libc6, libstdc++6, libgcc-s1
# unpacked into trixie-libc/ or sid-libc/): their ELF interpreter and rpath
# are pointed there with patchelf, the way a chroot of that suite would run
# them, without the chroot. Valkey 9.1 of sid asks only for trixie's glibc;
# sid's Redis asks for sid's (2.43), so it runs on sid-libc/.
# PEERS_METHOD=build builds Redis 8.0 from Debian's source package instead
# (apt-get source + build-dep from bookworm + dpkg-buildpackage, nocheck).
#
# prometheus-3.16 comes from the Go module proxy (GOPROXY), compiled here
# with GOBIN in its cache folder, on a module and build cache of its own
# (a build cut by its timeout resumes from what it downloaded and compiled;
# both are removed once the entry is complete). Without the service
# discovery plugins (build tag remove_all_sd): the tests scrape static
# targets, and the plugins' cloud SDKs are a large share of the compile.
# Without the web UI's assets too: the tests use the HTTP API only.
# Where the proxy cannot be reached the entry is skipped with a message, and
# the tests on it skip too; under CI=true that is an error.
#
# The suites are added in their own sources file with Pin-Priority 1, so
# nothing on the system is ever upgraded from them; the mirror URI is taken
# from the machine's own apt sources (no host name lives in the repository).
#
# Idempotent: an entry whose cache folder is complete is not fetched again,
# and a warm cache runs no apt or go command at all. Bounded: every apt or
# build step runs under `timeout` (PEERS_STEP_TIMEOUT, default 600 s; the
# Go build of Prometheus under PEERS_GO_BUILD_TIMEOUT, default 1500 s).
#
# Usage: scripts/peers.sh [--print-env]
#   PEERS_CACHE   cache folder (default /var/cache/redis-prober-peers as root,
#                 ~/.cache/redis-prober/peers otherwise)
#   PEERS_ONLY    space-separated entry names to fetch (default: all)
#   PEERS_METHOD  relocate (default) or build (Redis 8.0 from source)
# Adding the suites needs root; as another user the script works once they
# were added (apt-get download needs no root).
set -Eeuo pipefail
# Every failing step says what failed, in one line, before the script exits:
# set -e alone exits silently (make then prints only "Error 1", or "Error
# 141" when a pipe's writer died of SIGPIPE).
# die's own exit code (3) has said so already.
trap 'rc=$?; [ "$rc" = 3 ] || printf "peers: ERROR: line %s: %s exited %s\n" "$LINENO" "$BASH_COMMAND" "$rc" >&2' ERR
# Under pipefail, a reader that closes its input early (head, grep -q, awk's
# exit) can kill the writer with SIGPIPE and fail the whole pipeline, at
# random; this script takes the first of many lines with first_line, and
# reads files into variables, never through such a reader.

if [ "$(id -u)" = 0 ]; then
	CACHE="${PEERS_CACHE:-/var/cache/redis-prober-peers}"
else
	CACHE="${PEERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/redis-prober/peers}"
fi
STEP_TIMEOUT="${PEERS_STEP_TIMEOUT:-600}"
GO_BUILD_TIMEOUT="${PEERS_GO_BUILD_TIMEOUT:-1500}"
GO="${GO:-go}"
METHOD="${PEERS_METHOD:-relocate}"
# APT_ETC is a seam for the scripts' tests (a fixture tree of sources).
APT_ETC="${APT_ETC:-/etc/apt}"
SOURCES=$APT_ETC/sources.list.d/redis-prober-peers.sources
PINS=$APT_ETC/preferences.d/redis-prober-peers
SUITES="sid trixie bookworm-backports"
ALL="prometheus-3.5 redis_exporter valkey-8.0 redis-8.0 valkey-8.1 valkey-9.1 redis-8 prometheus-3.16"

# name|suite|packages|expected version prefix|binaries (path in the package:name in bin/)|libc entry to run on (no: the system's)
# A suite of "go" builds Go commands instead: packages is module@version,
# the version prefix is what `--version` of the first binary must say, and
# the binaries are package paths in the module:name in bin/.
entry() {
	case "$1" in
	prometheus-3.16) echo "go|github.com/prometheus/prometheus@v0.316.0|3.16.|cmd/prometheus:prometheus cmd/promtool:promtool|no" ;;
	prometheus-3.5) echo "sid|prometheus promtool|3.5.|usr/bin/prometheus:prometheus usr/bin/promtool:promtool|no" ;;
	redis_exporter) echo "sid|prometheus-redis-exporter||usr/bin/prometheus-redis-exporter:redis_exporter|no" ;;
	valkey-8.0) echo "bookworm-backports|valkey-server valkey-tools|8.0.|usr/bin/valkey-server:valkey-server usr/bin/valkey-cli:valkey-cli|no" ;;
	redis-8.0) echo "trixie|redis-server redis-tools|5:8.0.|usr/bin/redis-server:redis-server usr/bin/redis-cli:redis-cli|trixie-libc" ;;
	valkey-8.1) echo "trixie|valkey-server valkey-tools|8.1.|usr/bin/valkey-server:valkey-server usr/bin/valkey-cli:valkey-cli|trixie-libc" ;;
	valkey-9.1) echo "sid|valkey-server valkey-tools|9.1.|usr/bin/valkey-server:valkey-server usr/bin/valkey-cli:valkey-cli|trixie-libc" ;;
	redis-8) echo "sid|redis-server redis-tools|5:8.|usr/bin/redis-server:redis-server usr/bin/redis-cli:redis-cli|sid-libc" ;;
	trixie-libc) echo "trixie|libc6 libstdc++6 libgcc-s1|||no" ;;
	sid-libc) echo "sid|libc6 libstdc++6 libgcc-s1|||no" ;;
	*) echo "peers.sh: unknown entry $1" >&2; return 1 ;;
	esac
}

log() { printf 'peers: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 3; }
step() { timeout --kill-after=10 "$STEP_TIMEOUT" "$@"; }

print_env() {
	# Paths the Makefile and the test harnesses read.
	echo "PROMTOOL_3_5=$CACHE/prometheus-3.5/bin/promtool"
	echo "PROMETHEUS_3_5=$CACHE/prometheus-3.5/bin/prometheus"
	echo "REDIS_EXPORTER=$CACHE/redis_exporter/bin/redis_exporter"
	echo "VALKEY_8_0=$CACHE/valkey-8.0/bin/valkey-server"
	echo "REDIS_8_0=$CACHE/redis-8.0/bin/redis-server"
	echo "VALKEY_8_1=$CACHE/valkey-8.1/bin/valkey-server"
	echo "VALKEY_9_1=$CACHE/valkey-9.1/bin/valkey-server"
	echo "REDIS_8=$CACHE/redis-8/bin/redis-server"
	echo "PROMTOOL_3_16=$CACHE/prometheus-3.16/bin/promtool"
	echo "PROMETHEUS_3_16=$CACHE/prometheus-3.16/bin/prometheus"
}

# first_line prints the first line of its input after reading all of it, so
# the writer never meets a closed pipe (see the note at the top).
first_line() {
	local all
	all="$(cat)"
	printf '%s' "${all%%$'\n'*}"
}

# mirror_uri prints the URI of the machine's Debian archive (the one that
# serves bookworm, not -security), from one-line or deb822 sources.
mirror_uri() {
	local f re='^(bookworm|bookworm-updates|stable|trixie|sid|unstable)$'
	for f in "$APT_ETC"/sources.list "$APT_ETC"/sources.list.d/*.list; do
		[ -r "$f" ] || continue
		sed -e 's/#.*//' -e 's/\[[^]]*\]//' "$f" | while read -r type uri suite _; do
			if [ "$type" = deb ] && [[ $suite =~ $re ]]; then echo "$uri"; fi
		done
	done
	for f in "$APT_ETC"/sources.list.d/*.sources; do
		[ -r "$f" ] && [ "$f" != "$SOURCES" ] || continue
		awk -v re="$re" '
			function flush(  n, s, u, i) {
				if (uris != "" && enabled && types ~ /(^| )deb( |$)/) {
					n = split(suites, s, " ")
					for (i = 1; i <= n; i++) if (s[i] ~ re) { split(uris, u, " "); print u[1]; break }
				}
				uris = ""; suites = ""; types = ""; enabled = 1
			}
			BEGIN { enabled = 1 }
			/^[ \t]*#/ { next }
			/^[ \t]*$/ { flush(); next }
			tolower($1) == "types:" { $1 = ""; types = $0 }
			tolower($1) == "uris:" { $1 = ""; uris = $0 }
			tolower($1) == "suites:" { $1 = ""; suites = $0 }
			tolower($1) == "enabled:" && tolower($2) == "no" { enabled = 0 }
			END { flush() }' "$f"
	done
}

# mirror prints the first mirror_uri, or fails with a line saying why.
mirror() {
	local uri
	uri="$(mirror_uri | first_line)"
	[ -n "$uri" ] || die "no Debian archive found in $APT_ETC/sources.list{,.d/*}: cannot tell which mirror to use"
	printf '%s\n' "$uri"
}

case "${1:-}" in
--print-env)
	print_env
	exit 0
	;;
--print-mirror)
	mirror
	exit 0
	;;
esac

# add_suites writes the peers' sources and pins (root only) and refreshes
# the package lists once per run.
APT_READY=
add_suites() {
	[ -n "$APT_READY" ] && return 0
	if [ "$(id -u)" != 0 ]; then
		[ -r "$SOURCES" ] || die "$SOURCES is missing: run scripts/peers.sh once as root to add the suites ($SUITES)"
		APT_READY=1
		return 0
	fi
	local uri
	uri="$(mirror)"
	local want
	want="$(printf 'Types: deb deb-src\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$uri" "$SUITES")"
	if [ "$(cat "$SOURCES" 2>/dev/null)" != "$want" ]; then
		printf '%s\n' "$want" >"$SOURCES"
		log "wrote $SOURCES ($SUITES from the machine's own mirror)"
	fi
	local pins="" s
	for s in $SUITES; do
		pins+="$(printf 'Package: *\nPin: release n=%s\nPin-Priority: 1\n' "$s")"$'\n\n'
	done
	pins="# redis-prober test peers: fetched with apt-get download only, never installed or upgraded from.
${pins%$'\n\n'}"
	if [ "$(cat "$PINS" 2>/dev/null)" != "$pins" ]; then
		printf '%s\n' "$pins" >"$PINS"
		log "wrote $PINS (Pin-Priority 1: the system is never upgraded from these suites)"
	fi
	log "apt-get update"
	step apt-get update -qq
	local tool
	for tool in patchelf; do
		command -v "$tool" >/dev/null 2>&1 || {
			log "apt-get install $tool (bookworm)"
			step apt-get install -y -qq --no-install-recommends "$tool" >/dev/null
		}
	done
	APT_READY=1
}

# candidate NAME SUITE prints the version of package NAME in SUITE.
candidate() {
	apt-cache madison "$1" | awk -v s="$2" '!found && $0 ~ " "s"/main" { print $3; found = 1 }'
}

# fetch NAME: download and unpack entry NAME unless it is complete.
fetch() {
	local name="$1" spec suite pkgs want bins libc
	spec="$(entry "$name")"
	IFS='|' read -r suite pkgs want bins libc <<<"$spec"
	local dir="$CACHE/$name"
	if [ -f "$dir/.complete" ]; then
		log "cached: $name $(cat "$dir/.complete")"
		return 0
	fi
	if [ "$suite" = go ]; then
		build_go "$name" "$pkgs" "$want" "$bins"
		return 0
	fi
	local build=no
	if [ "$METHOD" = build ] && [ "$name" = redis-8.0 ]; then
		build=yes
		libc=no # built here, on bookworm's own libc
	fi
	[ "$libc" != no ] && fetch "$libc"
	local t0=$SECONDS
	add_suites
	rm -rf "$dir"
	mkdir -p "$dir/debs" "$dir/root" "$dir/bin"
	local p v versions=""
	for p in $pkgs; do
		v="$(candidate "$p" "$suite")"
		[ -n "$v" ] || die "$p is not in $suite"
		versions+="$p=$v "
	done
	v="$(candidate "${pkgs%% *}" "$suite")"
	case "$v" in "$want"*) ;; *) die "$name: ${pkgs%% *} in $suite is $v, expected ${want}*" ;; esac
	if [ "$build" = yes ]; then
		build_redis "$dir" "$suite"
		versions="redis-server=$(dpkg-deb -f "$dir"/root.debs/redis-server_*.deb Version) (built from source)"
		rm -rf "$dir/root.debs"
	else
		local args=() pv
		for pv in $versions; do args+=("$pv"); done
		(cd "$dir/debs" && step apt-get download -qq "${args[@]}" 2>&1 | grep -v 'unsandboxed' >&2 || true)
		local deb n=0
		for deb in "$dir"/debs/*.deb; do
			[ -f "$deb" ] || continue
			dpkg -x "$deb" "$dir/root"
			n=$((n + 1))
		done
		[ "$n" -ge 1 ] || die "$name: apt-get download fetched nothing"
	fi
	[ "$libc" != no ] && relocate "$dir" "$libc"
	local b src dst
	for b in $bins; do
		src="${b%%:*}"
		dst="${b##*:}"
		[ -e "$dir/root/$src" ] || die "$name: $src missing from the unpacked packages"
		ln -sfn "../root/$src" "$dir/bin/$dst"
	done
	rm -rf "$dir/debs"
	local out=""
	if [ -n "$bins" ]; then
		local first="${bins%% *}"
		first="${first##*:}"
		out="$("$dir/bin/$first" --version 2>&1)" || die "$name: $dir/bin/$first does not run: $out"
		out="$(first_line <<<"$out")"
	fi
	echo "$versions" >"$dir/.complete"
	log "fetched: $name ($versions) in $((SECONDS - t0)) s${out:+: $out}"
}

# skip_go NAME WHY: the Go module proxy or toolchain is not there. Under
# CI=true that fails the run; elsewhere the entry is left out with a message
# and the tests that need it skip.
skip_go() {
	[ "${CI:-}" = true ] && die "$1: $2 (CI needs it)"
	log "SKIPPING $1: $2; the tests on it skip (run scripts/peers.sh again where the proxy answers)"
}

# unreachable OUTPUT: whether go's error OUTPUT says the module proxy could
# not be reached (as opposed to a version it does not have, or a build error).
unreachable() {
	case "$1" in
	*"dial tcp"* | *"i/o timeout"* | *"no such host"* | *"connection refused"* | *"network is unreachable"* | \
		*"TLS handshake timeout"* | *"GOPROXY=off"* | *"Client.Timeout exceeded"*) return 0 ;;
	esac
	return 1
}

# build_go NAME MODULE@VERSION WANT BINS: `go install` the module's commands
# into the entry's bin/ (GOBIN), on a module and build cache kept in
# NAME.work beside it until the entry is complete.
build_go() {
	local name="$1" modver="$2" want="$3" bins="$4" dir="$CACHE/$1" work="$CACHE/$1.work"
	local mod="${modver%@*}" ver="${modver#*@}" t0=$SECONDS
	command -v "$GO" >/dev/null 2>&1 || { skip_go "$name" "no go command ($GO) to build it with"; return 0; }
	rm -rf "$dir"
	mkdir -p "$dir/bin" "$work/mod" "$work/build" "$work/tmp"
	# GOFLAGS=-modcacherw: the module cache can be removed without chmod.
	local env=(env GOBIN="$dir/bin" GOMODCACHE="$work/mod" GOCACHE="$work/build" GOTMPDIR="$work/tmp"
		GOFLAGS="-modcacherw" GO111MODULE=on CGO_ENABLED=0)
	local out
	log "$name: go mod download $modver from ${GOPROXY:-$("$GO" env GOPROXY)}"
	if ! out="$(cd "$work" && step "${env[@]}" "$GO" mod download "$modver" 2>&1)"; then
		rm -rf "$dir"
		unreachable "$out" || die "$name: go mod download $modver failed: $out"
		skip_go "$name" "the Go module proxy is unreachable: $(first_line <<<"$out")"
		return 0
	fi
	local b pkgs=()
	for b in $bins; do pkgs+=("$mod/${b%%:*}@$ver"); done
	# `--version` says the release: the Prometheus module's versions v0.3MM.P
	# are its releases 3.MM.P.
	local rel="${ver#v}" vpkg=github.com/prometheus/common/version
	if [[ $mod == github.com/prometheus/prometheus && $ver =~ ^v0\.3([0-9][0-9])\.([0-9]+)$ ]]; then
		rel="3.$((10#${BASH_REMATCH[1]})).${BASH_REMATCH[2]}"
	fi
	local ldflags="-X $vpkg.Version=$rel -X $vpkg.Revision=$ver -X $vpkg.Branch=HEAD -X $vpkg.BuildUser=redis-prober-peers"
	log "$name: go install ${pkgs[*]} (a first build compiles the module's dependencies: minutes; timeout ${GO_BUILD_TIMEOUT} s)"
	local rc=0
	out="$(cd "$work" && timeout --kill-after=10 "$GO_BUILD_TIMEOUT" "${env[@]}" "$GO" install -trimpath \
		-tags remove_all_sd -ldflags "$ldflags" "${pkgs[@]}" 2>&1)" || rc=$?
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		die "$name: go install did not finish within PEERS_GO_BUILD_TIMEOUT=${GO_BUILD_TIMEOUT} s (kept $work: a next run resumes)"
	fi
	if [ "$rc" != 0 ]; then
		# A download failure midway is the proxy's; anything else is a real error.
		unreachable "$out" || die "$name: go install failed (kept $work to resume): $(tail -n 20 <<<"$out")"
		skip_go "$name" "the Go module proxy became unreachable: $(first_line <<<"$out")"
		return 0
	fi
	for b in $bins; do
		[ -x "$dir/bin/${b##*:}" ] || die "$name: go install made no $dir/bin/${b##*:}"
	done
	local first="${bins%% *}"
	first="${first##*:}"
	out="$("$dir/bin/$first" --version 2>&1)" || die "$name: $dir/bin/$first does not run: $out"
	out="$(first_line <<<"$out")"
	case "$out" in *"version $want"*) ;; *) die "$name: $dir/bin/$first --version says \"$out\", expected version ${want}*" ;; esac
	rm -rf "$work"
	echo "$modver (go install, $("$GO" env GOVERSION), tag remove_all_sd)" >"$dir/.complete"
	log "fetched: $name ($modver) in $((SECONDS - t0)) s: $out"
}

# relocate DIR LIBC points every ELF executable under DIR/root/usr/bin at
# the loader and libc of entry LIBC (what a chroot of its suite would give
# them).
relocate() {
	local dir="$1" lib="$CACHE/$2/root/usr/lib/x86_64-linux-gnu" f
	[ -x "$lib/ld-linux-x86-64.so.2" ] || die "$2 loader missing in $lib"
	for f in "$dir"/root/usr/bin/*; do
		[ -f "$f" ] && [ ! -L "$f" ] || continue
		[ "$(od -An -tx1 -N4 "$f")" = " 7f 45 4c 46" ] || continue
		patchelf --set-interpreter "$lib/ld-linux-x86-64.so.2" --force-rpath --set-rpath "$lib" "$f"
	done
}

# build_redis builds the redis source package of SUITE (sid when the
# mirror lacks SUITE's .dsc) on bookworm's toolchain and unpacks its debs.
build_redis() {
	local dir="$1" suite="$2" src="$1/src" s
	mkdir -p "$src"
	for s in "$suite" sid; do
		if (cd "$src" && step apt-get source -qq "redis/$s" >/dev/null 2>&1); then break; fi
		log "redis source of $s not served by the mirror; trying the next suite"
	done
	local tree
	tree="$(find "$src" -maxdepth 1 -type d -name 'redis-*' -print -quit)"
	[ -n "$tree" ] || die "apt-get source redis fetched nothing"
	log "apt-get build-dep redis/$s (bookworm's -dev packages)"
	step apt-get build-dep -y -qq "redis/$s" >/dev/null
	log "building $(basename "$tree") (dpkg-buildpackage, nocheck)"
	(cd "$tree" && DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" step dpkg-buildpackage -b -uc -us -Pnocheck >"$src/build.log" 2>&1) ||
		die "redis build failed; see $src/build.log"
	mkdir -p "$dir/root.debs"
	mv "$src"/redis-server_*.deb "$src"/redis-tools_*.deb "$dir/root.debs/"
	dpkg -x "$dir"/root.debs/redis-server_*.deb "$dir/root"
	dpkg -x "$dir"/root.debs/redis-tools_*.deb "$dir/root"
	rm -rf "$src"
}

mkdir -p "$CACHE"
t0=$SECONDS
for name in ${PEERS_ONLY:-$ALL}; do
	fetch "$name"
done
log "cache $CACHE ready in $((SECONDS - t0)) s"
print_env
