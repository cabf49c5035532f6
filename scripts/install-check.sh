#!/usr/bin/env bash
# install-check: installs the library and each exporter as a module user
# does, from a module proxy holding the working tree at the newest version
# of CHANGELOG.md (scripts/proxy-env.sh, which first checks that no go.mod
# has a replace directive and that every module requires the library at
# that version): for each, in a throwaway module of its own, `go get` it
# alone, then build and run a program that uses it
# (scripts/testdata/install/<name>/main.go). Run by `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/proxy-env.sh
for name in library prometheus otel; do
	mod=github.com/wheeltimer/wheeltimer
	[ "$name" = library ] || mod=$mod/exporters/$name
	dir=$proxy_tmp/$name
	mkdir "$dir"
	cp "scripts/testdata/install/$name/main.go" "$dir/"
	echo "== go get $mod@$version, in a module of its own; build and run a program with it"
	# The go command's output is printed only if a step fails.
	if ! (
		cd "$dir"
		go mod init "example.com/$name"
		go get "$mod@$version"
		got=$(go list -m -f '{{.Version}}' github.com/wheeltimer/wheeltimer)
		if [ "$got" != "$version" ]; then
			echo "the library is at $got, expected $version"
			exit 1
		fi
		go build -o program .
	) > "$dir/log" 2>&1; then
		cat "$dir/log" >&2
		exit 1
	fi
	"$dir/program"
done
