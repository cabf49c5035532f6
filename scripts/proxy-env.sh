# Sourced by install-check.sh and tidy.sh, from the repository's root: it
# writes a Go module proxy holding the repository's modules at the newest
# version of CHANGELOG.md, built from the working tree (scripts/modproxy,
# which first checks the go.mod files and go.work), sets $version, and
# exports the environment of a module user outside the repository: no
# workspace, that proxy first, then the module cache already on this
# machine, then GOPROXY's own. The library's versions go into a module
# cache of their own, removed on exit with the proxy, so that none is
# kept beside the released ones nor outlives the working tree it was
# built from.

proxy_tmp=$(mktemp -d)
trap 'rm -rf "$proxy_tmp"' EXIT
version=$(go run ./scripts/modproxy -out "$proxy_tmp/proxy" .)
cache=$(go env GOMODCACHE)
upstream=$(go env GOPROXY)
export GOWORK=off
export GOFLAGS="${GOFLAGS:-} -mod=mod -modcacherw"
export GONOSUMDB="github.com/wheeltimer/*${GONOSUMDB:+,$GONOSUMDB}"
export GOMODCACHE="$proxy_tmp/modcache"
export GOPROXY="file://$proxy_tmp/proxy,file://$cache/cache/download,$upstream"
