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
	(
		cd "$dir"
		go mod init "example.com/$name" 2>/dev/null
		echo "== go get $mod@$version, in a module of its own"
		go get "$mod@$version"
		got=$(go list -m -f '{{.Version}}' github.com/wheeltimer/wheeltimer)
		if [ "$got" != "$version" ]; then
			echo "the library is at $got, expected $version" >&2
			exit 1
		fi
		go build -o program .
		./program
	)
done
