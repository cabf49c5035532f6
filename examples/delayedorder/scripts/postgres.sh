#!/usr/bin/env bash
# A throwaway PostgreSQL server for the tests of examples/delayedorder.
#
#   postgres.sh start PORT WATCH_PID   print the server's directory, then its URL
#   postgres.sh stop DIR               stop the server and remove DIR
#
# start takes the binaries from PATH or from Debian's /usr/lib/postgresql;
# where there are none it installs the Debian package postgresql (as root,
# with apt-get), without the cluster the package would make and start.
# The data directory is in a new temporary directory, owned by an
# unprivileged user when run as root (initdb refuses root), and the server
# listens on 127.0.0.1:PORT only. A watchdog stops the server and removes
# the directory once WATCH_PID has exited, so that a test binary killed by
# its timeout leaves nothing behind. Exit status 3: no server can be had
# here, with the reason on standard error.
set -euo pipefail
self=$(readlink -f "$0")

cannot() {
	echo "postgres.sh: $*" >&2
	exit 3
}

find_bin() {
	if command -v pg_ctl >/dev/null && command -v initdb >/dev/null; then
		dirname "$(command -v pg_ctl)"
		return
	fi
	local d
	d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
	[ -n "$d" ] && [ -x "$d/pg_ctl" ] && echo "$d"
}

install_postgres() {
	[ "$(id -u)" = 0 ] || cannot "PostgreSQL is not installed, and installing it needs root: apt-get install postgresql"
	command -v apt-get >/dev/null || cannot "PostgreSQL is not installed, and there is no apt-get to install it"
	export DEBIAN_FRONTEND=noninteractive
	local apt=(apt-get -qq -o Dpkg::Use-Pty=0 install -y --no-install-recommends)
	{
		# postgresql-common first, told not to make and start the cluster
		# "main" that installing a server version makes by default.
		"${apt[@]}" postgresql-common || { apt-get -qq update && "${apt[@]}" postgresql-common; }
		mkdir -p /etc/postgresql-common/createcluster.d
		echo 'create_main_cluster = false' >/etc/postgresql-common/createcluster.d/delayedorder-tests.conf
		"${apt[@]}" postgresql
	} >&2 || cannot "installing the Debian package postgresql failed"
}

start() {
	local port=$1 watch=$2 bin dir user=""
	bin=$(find_bin) || true
	if [ -z "$bin" ]; then
		install_postgres
		bin=$(find_bin) || cannot "no initdb and pg_ctl after installing postgresql"
	fi
	dir=$(mktemp -d "${TMPDIR:-/tmp}/delayedorder-pg.XXXXXX")
	if [ "$(id -u)" = 0 ]; then
		user=postgres
		id -u "$user" >/dev/null 2>&1 || user=nobody
		chown "$user" "$dir"
	fi
	# As the server's user; plain when not root.
	as_user() { if [ -n "$user" ]; then runuser -u "$user" -- "$@"; else "$@"; fi; }
	if ! as_user "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C --no-sync >"$dir/initdb.log" 2>&1; then
		cat "$dir/initdb.log" >&2
		rm -rf "$dir"
		echo "postgres.sh: initdb failed" >&2
		exit 1
	fi
	# A test server: durability is not under test (the server is not the
	# process killed), so no fsync; pg_stat_statements counts each role's
	# statements; the rest as the defaults.
	if ! as_user "$bin/pg_ctl" -D "$dir/data" -l "$dir/data/server.log" -w -t 60 -o \
		"-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories='' -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 -c shared_preload_libraries=pg_stat_statements" \
		start >&2; then
		cat "$dir/data/server.log" >&2 || true
		rm -rf "$dir"
		echo "postgres.sh: the server did not start" >&2
		exit 1
	fi
	echo "$bin" >"$dir/bin"
	echo "$user" >"$dir/user"
	# The watchdog: its own session, no descriptor of ours, so that the
	# caller reading our output sees its end when we exit.
	setsid bash "$self" watch "$watch" "$dir" </dev/null >/dev/null 2>&1 &
	echo "$dir"
	echo "postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
}

stop() {
	local dir=$1 bin user
	case "$dir" in */delayedorder-pg.*) ;; *) echo "postgres.sh: not a server directory: $dir" >&2; exit 1 ;; esac
	[ -d "$dir" ] || return 0
	bin=$(cat "$dir/bin")
	user=$(cat "$dir/user")
	if [ -n "$user" ]; then
		runuser -u "$user" -- "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
	else
		"$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
	fi
	rm -rf "$dir"
}

watch() {
	local pid=$1 dir=$2
	while kill -0 "$pid" 2>/dev/null && [ -d "$dir" ]; do sleep 1; done
	stop "$dir"
}

case "${1:-}" in
start) [ $# = 3 ] || { echo "usage: $0 start PORT WATCH_PID" >&2; exit 2; }; start "$2" "$3" ;;
stop) [ $# = 2 ] || { echo "usage: $0 stop DIR" >&2; exit 2; }; stop "$2" ;;
watch) watch "$2" "$3" ;;
*) echo "usage: $0 start PORT WATCH_PID | stop DIR" >&2; exit 2 ;;
esac
