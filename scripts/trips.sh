#!/usr/bin/env bash
# Recounts the functions and files of the module that one timeout's trip
# runs (AfterFunc to its task, on the default pool) and one Cancel of a
# timeout in the wheel (to its Cancelled hook), the worker's loop
# included, and checks them against docs/design.md's lists.
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

status=0
for trip in timeout cancel; do
	# covdata prints "file:line: function percent"; a function that ran has
	# a percent above zero.
	$go_cmd tool covdata func -i="$dir/$trip" |
		awk '$NF != "0.0%" && $1 != "total" && $1 !~ /scripts\/trip/ { sub(/:[0-9]+:$/, "", $1); sub(/^github.com\/wheeltimer\/wheeltimer\//, "", $1); print $1, $2 }' |
		sort -u > "$dir/$trip.ran"
	functions=$(wc -l < "$dir/$trip.ran")
	files=$(cut -d' ' -f1 "$dir/$trip.ran" | sort -u | wc -l)
	echo "== the trip of a $trip: $functions functions in $files files"
	# docs/design.md lists them between <!-- trip:NAME --> and <!-- /trip:NAME -->,
	# one "file function" per line in a code block.
	sed -n "/<!-- trip:$trip -->/,/<!-- \/trip:$trip -->/p" docs/design.md |
		grep -E '^[a-z].*\.go ' | sort -u > "$dir/$trip.doc" || true
	if ! diff -u "$dir/$trip.doc" "$dir/$trip.ran" > "$dir/$trip.diff"; then
		echo "docs/design.md's list of the $trip trip differs from the functions that ran:"
		cat "$dir/$trip.diff"
		status=1
	fi
done
exit $status
