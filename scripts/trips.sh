#!/usr/bin/env bash
# Recounts the functions and files of the module that one timeout's trip
# runs (AfterFunc to its task, on the default pool, the worker's loop
# included), that a worker pass with nothing to do runs, and that one
# Cancel of a timeout in the wheel runs beyond such a pass (to its
# Cancelled hook), and checks them against docs/design.md's lists.
#
#   scripts/trips.sh
#
# It builds scripts/trip with coverage of the whole module, which records
# the counters of each trip alone, and lists the functions whose counters
# are set. It prints each trip's counts, and the functions only where
# they differ from the list.
set -euo pipefail
cd "$(dirname "$0")/.."
go_cmd="${GO:-go}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

$go_cmd build -cover -covermode=atomic -coverpkg=./... -o "$dir/trip" ./scripts/trip
GOCOVERDIR="$dir" "$dir/trip" "$dir"

for trip in timeout pass cancel; do
	# covdata prints "file:line: function percent"; a function that ran has
	# a percent above zero.
	$go_cmd tool covdata func -i="$dir/$trip" |
		awk '$NF != "0.0%" && $1 != "total" && $1 !~ /scripts\/trip/ { sub(/:[0-9]+:$/, "", $1); sub(/^github.com\/wheeltimer\/wheeltimer\//, "", $1); print $1, $2 }' |
		sort -u > "$dir/$trip.ran"
done
# A Cancel's own functions: those beyond a pass of the worker's loop.
comm -23 "$dir/cancel.ran" "$dir/pass.ran" > "$dir/cancel.own"

count() { echo "$(wc -l < "$1") functions in $(cut -d' ' -f1 "$1" | sort -u | wc -l) files"; }
echo "== the trip of a timeout: $(count "$dir/timeout.ran")"
echo "== a pass of the worker with nothing to do: $(count "$dir/pass.ran")"
echo "== the trip of a cancel, beyond a pass: $(count "$dir/cancel.own") ($(wc -l < "$dir/cancel.ran") with it)"

status=0
for trip in timeout:timeout.ran pass:pass.ran cancel:cancel.own; do
	name=${trip%%:*} ran=${trip#*:}
	# docs/design.md lists them between <!-- trip:NAME --> and <!-- /trip:NAME -->,
	# one "file function" per line in a code block.
	sed -n "/<!-- trip:$name -->/,/<!-- \/trip:$name -->/p" docs/design.md |
		grep -E '^[a-z].*\.go ' | sort -u > "$dir/$name.doc" || true
	if ! diff -u "$dir/$name.doc" "$dir/$ran" > "$dir/$name.diff"; then
		echo "docs/design.md's list of the $name trip differs from the functions that ran:"
		cat "$dir/$name.diff"
		status=1
	fi
done
exit $status
