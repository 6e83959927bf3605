#!/usr/bin/env bash
# release.sh: `make release`'s artifacts, in promu's layout and names (the
# tool Prometheus and its exporters release with), into DIST:
#   redis-prober-VERSION.OS-ARCH.tar.gz   one directory of the same name with
#       the binary, LICENSE, NOTICE, README.md, dashboards/*.json and alerts/
#       (the rules and their fallback alternatives)
#   redis-prober-VERSION.tgz              the Helm chart, version and
#       appVersion VERSION (helm package when a helm is found, else tar in
#       helm's own layout)
#   sha256sums.txt                        what `sha256sum -c` checks
# Usage: VERSION=0.1.0 LDFLAGS='...' scripts/release.sh
# (make release VERSION=0.1.0 passes the Makefile's version ldflags).
# DIST (default dist), PLATFORMS (default "linux/amd64 linux/arm64
# darwin/arm64"), HELM (a helm binary) change what it does.
set -Eeuo pipefail
trap 'rc=$?; printf "release: ERROR: line %s: %s exited %s\n" "$LINENO" "$BASH_COMMAND" "$rc" >&2' ERR
cd "$(dirname "$0")/.."
GO="${GO:-go}"
NAME=redis-prober
VERSION="${VERSION:?release: VERSION is needed, e.g. make release VERSION=0.1.0}"
DIST="${DIST:-dist}"
PLATFORMS="${PLATFORMS:-linux/amd64 linux/arm64 darwin/arm64}"
LDFLAGS="${LDFLAGS:--X github.com/prometheus/common/version.Version=$VERSION}"

say() { printf 'release: %s\n' "$*" >&2; }

if ! [[ $VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
	say "ERROR: VERSION $VERSION is not semantic (MAJOR.MINOR.PATCH[-PRE]); the chart's version must be"
	exit 2
fi

# Every file in an archive gets the commit's time, owner 0 and a sorted
# order, so two runs on one commit give the same tarballs.
mtime="@$(git log -1 --format=%ct 2>/dev/null || date +%s)"
tarflags=(--sort=name --owner=0 --group=0 --numeric-owner --mtime="$mtime")

mkdir -p "$DIST"
DIST="$(cd "$DIST" && pwd)"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT

artifacts=()
for platform in $PLATFORMS; do
	os="${platform%/*}" arch="${platform#*/}"
	dir="$NAME-$VERSION.$os-$arch"
	root="$stage/$dir"
	say "building $dir"
	mkdir -p "$root/dashboards" "$root/alerts/fallback"
	CGO_ENABLED=0 GOOS="$os" GOARCH="$arch" "$GO" build -trimpath -ldflags "$LDFLAGS" -o "$root/$NAME" ./cmd/redis-prober
	cp LICENSE NOTICE README.md "$root/"
	cp dashboards/*.json "$root/dashboards/"
	cp alerts/*.yml "$root/alerts/"
	cp alerts/fallback/*.yml "$root/alerts/fallback/"
	chmod -R u=rwX,go=rX "$root"
	tar -C "$stage" "${tarflags[@]}" -czf "$DIST/$dir.tar.gz" "$dir"
	artifacts+=("$dir.tar.gz")
done

# The chart: its files/ are links to the repository's alerts and
# dashboards, which both ways below follow.
chart=deploy/helm/$NAME
helm="${HELM:-}"
if [ -z "$helm" ]; then
	cache="${REDIS_PROBER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/redis-prober}"
	for h in "$(command -v helm || true)" "$cache"/helm-v3*/helm "$cache"/helm-v4*/helm; do
		if [ -x "$h" ]; then
			helm="$h"
			break
		fi
	done
fi
if [ -n "$helm" ]; then
	say "packaging the chart with $helm ($("$helm" version --short 2>/dev/null || echo '?'))"
	"$helm" package "$chart" --version "$VERSION" --app-version "$VERSION" --destination "$DIST" >/dev/null
else
	# helm package's layout: one directory named after the chart, links
	# followed, .helmignore's patterns left out (its patterns are simple
	# enough for tar's: a name or glob, a trailing / for a directory),
	# Chart.yaml with the release's version.
	say "no helm found (HELM, PATH or the chart test's cache): packaging the chart with tar in helm's layout"
	mkdir -p "$stage/chart"
	cp -RL "$chart" "$stage/chart/$NAME"
	sed -i -e "s/^version: .*/version: $VERSION/" -e "s/^appVersion: .*/appVersion: \"$VERSION\"/" "$stage/chart/$NAME/Chart.yaml"
	sed -e '/^#/d' -e '/^[[:space:]]*$/d' -e 's,/$,,' "$chart/.helmignore" >"$stage/helmignore"
	chmod -R u=rwX,go=rX "$stage/chart/$NAME"
	tar -C "$stage/chart" "${tarflags[@]}" --exclude-from="$stage/helmignore" -czf "$DIST/$NAME-$VERSION.tgz" "$NAME"
fi
artifacts+=("$NAME-$VERSION.tgz")

(cd "$DIST" && sha256sum "${artifacts[@]}" >sha256sums.txt)
say "wrote to $DIST: ${artifacts[*]} sha256sums.txt"
