#!/usr/bin/env bash
# notice.sh: writes NOTICE, the project's own notice followed by the NOTICE
# file of every module compiled into the binary that has one. A release
# binary is those modules in object form, and Apache-2.0 section 4(d) asks
# their notices to travel with it; internal/release's test fails when a
# dependency's NOTICE is missing here.
# Usage: scripts/notice.sh > NOTICE
set -Eeuo pipefail
cd "$(dirname "$0")/.."
GO="${GO:-go}"

cat <<'HEAD'
redis-prober
Copyright 2026 The redis-prober Authors

This product is licensed under the Apache License, Version 2.0 (LICENSE).

The release binaries include the following modules, whose NOTICE files
follow, each under the module's path.
HEAD
"$GO" list -deps -f '{{with .Module}}{{if not .Main}}{{.Path}} {{.Dir}}{{end}}{{end}}' ./cmd/redis-prober |
	sort -u |
	while read -r path dir; do
		[ -n "$dir" ] && [ -f "$dir/NOTICE" ] || continue
		printf '\n\n== %s ==\n\n' "$path"
		# Trailing blank lines dropped, so the file ends the same way each run.
		awk 'NF { while (blank-- > 0) print ""; blank = 0; print; next } { blank++ }' "$dir/NOTICE"
	done
