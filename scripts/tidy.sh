#!/usr/bin/env bash
# tidy: runs `go mod tidy` in each module named (a directory of the
# repository: exporters/otel), as it would run on the released version:
# outside the workspace, the library at the newest version of
# CHANGELOG.md served from the working tree (scripts/proxy-env.sh). The
# library's own lines are then taken out of the module's go.sum: their
# hash is that of the working tree, not of a release, and the workspace
# needs none.
#
#	bash scripts/tidy.sh exporters/otel [exporters/prometheus ...]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# = 0 ]; then
	echo "usage: bash scripts/tidy.sh MODULE_DIR..." >&2
	exit 2
fi
. scripts/proxy-env.sh
for m in "$@"; do
	echo "== go mod tidy: $m"
	(cd "$m" && go mod tidy && sed -i.bak '/^github.com\/wheeltimer\/wheeltimer /d' go.sum && rm go.sum.bak)
done
