#!/usr/bin/env bash
# Builds the Google Cloud SQL Auth Proxy v2 (a real sidecar used by the tests in
# internal/testing/realsidecar) from the Go module proxy into a cache directory outside
# the repository, and prints the path of the binary.
#
#   dir: ${SIDESYNC_CLOUDSQL_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/sidesync-ci/cloudsql}
#   bin: $dir/cloud-sql-proxy
#
# The throwaway wrapper module is generated in $dir/src; none of the proxy's code
# lives in the repository. A stamp file records what was built; the build is
# skipped while the stamp matches and the binary exists.
set -euo pipefail

version=v2.28.0
# v2.28.0 asks for a google.golang.org/genproto pseudo-version that the module
# proxy does not serve; pin one that is.
genproto=v0.0.0-20261026165753-2ffab32bce7e

dir="${SIDESYNC_CLOUDSQL_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/sidesync-ci/cloudsql}"
bin="$dir/cloud-sql-proxy"
stamp="$dir/stamp"
want="cloud-sql-proxy $version genproto=$genproto $(go env GOVERSION)"

if [ -x "$bin" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "cloud-sql-proxy $version already built" >&2
  echo "$bin"
  exit 0
fi

echo "building cloud-sql-proxy $version into $dir" >&2
start=$(date +%s)
src="$dir/src"
rm -rf "$src" "$stamp"
mkdir -p "$src"

cat >"$src/go.mod" <<MOD
module sidesync.invalid/cloudsqlproxy

go 1.26

require github.com/GoogleCloudPlatform/cloud-sql-proxy/v2 $version

replace google.golang.org/genproto => google.golang.org/genproto $genproto
MOD

# Same as the proxy's own main.go.
cat >"$src/main.go" <<'GO'
// Command cloud-sql-proxy wraps the Cloud SQL Auth Proxy v2 for sidesync's tests.
package main

import "github.com/GoogleCloudPlatform/cloud-sql-proxy/v2/cmd"

func main() {
	cmd.Execute()
}
GO

(
  cd "$src"
  # -mod=mod fills in go.mod and go.sum for the packages built only; `go mod tidy` would
  # also fetch the dependencies' test dependencies (about 950 MB of module cache, not 780).
  export GOWORK=off GOTOOLCHAIN=local GOFLAGS="-buildvcs=false -mod=mod"
  CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$bin.tmp" .
)
mv -f "$bin.tmp" "$bin"
printf '%s\n' "$want" >"$stamp"
echo "built in $(( $(date +%s) - start ))s, $(stat -c %s "$bin") bytes" >&2
echo "$bin"
