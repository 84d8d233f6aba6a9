#!/usr/bin/env bash
# Builds Istio's pilot-agent (the real istio-proxy agent, used by the tests in
# internal/testing/realsidecar) from the Go module proxy into a cache directory outside the
# repository, with the Envoy bootstrap template it needs, and prints the directory.
#
#   dir: ${SIDESYNC_ISTIO_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/sidesync-ci/istio}
#   $dir/pilot-agent             the agent, stripped
#   $dir/envoy_bootstrap.json    tools/packaging/common/envoy_bootstrap.json of the same module
#
# `go install pkg@version` builds it from the module as published (istio.io/istio has no
# replace directives), so no wrapper module is needed and nothing of Istio is in this
# repository. A stamp file records what was built; the build is skipped while the stamp
# matches and both files exist.
set -euo pipefail

# istio.io/istio is published without tags; this is the commit of 2026-08-27 on master.
version=v0.0.0-20260827124520-eed52ebb66ad

dir="${SIDESYNC_ISTIO_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/sidesync-ci/istio}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
stamp="$dir/stamp"
want="pilot-agent istio.io/istio@$version $(go env GOVERSION) $(go env GOOS)/$(go env GOARCH)"

if [ -x "$dir/pilot-agent" ] && [ -f "$dir/envoy_bootstrap.json" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "pilot-agent $version already built" >&2
  echo "$dir"
  exit 0
fi

# One build at a time per directory; a second caller waits, then finds it built.
exec 9>"$dir/.lock"
flock 9
if [ -x "$dir/pilot-agent" ] && [ -f "$dir/envoy_bootstrap.json" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "$dir"
  exit 0
fi

echo "building pilot-agent ($version) into $dir" >&2
start=$(date +%s)
rm -f "$stamp"
export GOWORK=off GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
tmp="$dir/tmpbin"
rm -rf "$tmp"
mkdir -p "$tmp"
# Outside any module, so that go install reads only istio.io/istio's own go.mod.
(cd "$tmp" && CGO_ENABLED=0 GOBIN="$tmp" go install -trimpath -ldflags="-s -w" "istio.io/istio/pilot/cmd/pilot-agent@$version")
moddir=$(cd "$tmp" && go mod download -json "istio.io/istio@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
cp "$moddir/tools/packaging/common/envoy_bootstrap.json" "$dir/envoy_bootstrap.json.tmp"
chmod 0644 "$dir/envoy_bootstrap.json.tmp"
mv -f "$dir/envoy_bootstrap.json.tmp" "$dir/envoy_bootstrap.json"
mv -f "$tmp/pilot-agent" "$dir/pilot-agent"
rm -rf "$tmp"
printf '%s\n' "$want" >"$stamp"
echo "built in $(( $(date +%s) - start ))s, $(stat -c %s "$dir/pilot-agent") bytes" >&2
echo "$dir"
