#!/usr/bin/env bash
# Builds the real kubectl (for the krew install test, cmd/sidesync-image's TestKrewInstall, which
# runs `kubectl sidesync version` as a user does) into a cache directory outside the repository,
# and prints the binary's path. It is the Kubernetes that .ci/build-kube.sh builds, from the same
# wrapper module (<kube dir>/src/kube, whose go.mod pins k8s.io/kubernetes and its staging
# modules), copied and given cmd/kubectl, so that most of its packages are in GOCACHE already.
#
#   dir: ${SIDESYNC_KUBECTL_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/sidesync-ci/kubectl}
#
# A stamp file records what was built; the build is skipped while the stamp matches and the
# binary exists. Run .ci/build-kube.sh first.
set -euo pipefail
cache="${XDG_CACHE_HOME:-$HOME/.cache}/sidesync-ci"
kube="${SIDESYNC_KUBE_BIN:-$cache/kube}"
dir="${SIDESYNC_KUBECTL_BIN:-$cache/kubectl}"
wrapper="$kube/src/kube"
if [ ! -f "$wrapper/go.mod" ]; then
  echo "no $wrapper/go.mod: run .ci/build-kube.sh first" >&2
  exit 1
fi
version=$(sed -n 's/^require k8s.io\/kubernetes \(v[^ ]*\)$/\1/p' "$wrapper/go.mod")
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
want="kubectl k8s.io/kubernetes@$version $(go env GOVERSION) $(go env GOOS)/$(go env GOARCH)"
built() { [ -x "$dir/kubectl" ] && [ -f "$dir/stamp" ] && [ "$(cat "$dir/stamp")" = "$want" ]; }
if built; then
  echo "kubectl $version already built" >&2
  echo "$dir/kubectl"
  exit 0
fi
exec 9>"$dir/.lock"
flock 9
if built; then
  echo "$dir/kubectl"
  exit 0
fi

echo "building kubectl ($version) into $dir" >&2
start=$SECONDS
rm -f "$dir/stamp"
export CGO_ENABLED=0 GOFLAGS="-mod=mod -buildvcs=false" GOTOOLCHAIN="${GOTOOLCHAIN:-local}" GOWORK=off
src="$dir/src"
rm -rf "$src"
mkdir -p "$src"
sed 's#^module .*#module sidesync.invalid/kubectlbuild#' "$wrapper/go.mod" >"$src/go.mod"
cp "$wrapper/go.sum" "$src/go.sum"
cat >"$src/tools.go" <<'GO'
//go:build tools

// Package tools pins the program that .ci/build-kubectl.sh builds.
package tools

import _ "k8s.io/kubernetes/cmd/kubectl"
GO
(
  cd "$src"
  go mod tidy >&2
  v=k8s.io/component-base/version
  major=${version#v}; minor=${major#*.}; major=${major%%.*}; minor=${minor%%.*}
  go build -trimpath \
    "-ldflags=-s -w -X $v.gitVersion=$version -X $v.gitMajor=$major -X $v.gitMinor=$minor -X $v.gitTreeState=clean" \
    -o "$dir/kubectl.new" k8s.io/kubernetes/cmd/kubectl
)
mv -f "$dir/kubectl.new" "$dir/kubectl"
printf '%s\n' "$want" >"$dir/stamp"
echo "built kubectl in $((SECONDS - start))s, $(stat -c %s "$dir/kubectl") bytes" >&2
echo "$dir/kubectl"
