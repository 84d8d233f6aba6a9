#!/usr/bin/env bash
# Builds a real kube-apiserver and a real etcd from source, through the Go module proxy, into a
# cache directory outside the repository, for the integration tests in internal/kubetest.
#
#   bash .ci/build-kube.sh            # prints the directory that holds kube-apiserver and etcd
#
# The directory is ${SIDESYNC_KUBE_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/sidesync-ci/kube}.
# Nothing of Kubernetes or etcd is committed: the script writes two throwaway wrapper modules
# under <dir>/src, each requiring the pinned version, and `go build`s the upstream main packages.
# A stamp file records the pinned versions; when it matches and both binaries exist, the script
# does nothing (well under a second). Change a version below and the next run rebuilds.
set -euo pipefail

# Pinned versions. k8s.io/kubernetes replaces every k8s.io/<staging> module with ./staging/...
# in its own go.mod, which does not apply to a dependency, so the wrapper pins each staging
# module to the matching release instead: v1.X.Y goes with v0.X.Y.
KUBE_VERSION=v1.37.2
ETCD_VERSION=v3.7.3
STAGING_VERSION="v0.${KUBE_VERSION#v1.}"
# Bump when the build recipe (flags, wrapper modules) changes, to force a rebuild.
RECIPE=1

out="${SIDESYNC_KUBE_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/sidesync-ci/kube}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
stamp="kubernetes=$KUBE_VERSION staging=$STAGING_VERSION etcd=$ETCD_VERSION recipe=$RECIPE $(go env GOOS)/$(go env GOARCH)"

up_to_date() {
  [ -x "$out/kube-apiserver" ] && [ -x "$out/etcd" ] && [ -f "$out/stamp" ] &&
    [ "$(cat "$out/stamp")" = "$stamp" ]
}

if up_to_date; then
  echo "kube binaries up to date ($stamp)" >&2
  echo "$out"
  exit 0
fi

# One build at a time per directory; a second caller waits, then finds the binaries up to date.
exec 9>"$out/.lock"
flock 9
if up_to_date; then
  echo "kube binaries up to date ($stamp)" >&2
  echo "$out"
  exit 0
fi

echo "building kube-apiserver $KUBE_VERSION and etcd $ETCD_VERSION into $out" >&2
start=$SECONDS
rm -f "$out/stamp"

# Static, small, reproducible binaries; the wrapper modules may edit their own go.mod/go.sum.
export CGO_ENABLED=0
export GOFLAGS="-mod=mod -buildvcs=false"
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}" GOWORK=off

# --- kube-apiserver -------------------------------------------------------------------------
src="$out/src/kube"
rm -rf "$src"
mkdir -p "$src"
# The staging modules are those that k8s.io/kubernetes requires at v0.0.0 (and replaces with
# ./staging/src/k8s.io/<name>); read them from its go.mod so that a version bump needs no list.
kube_gomod=$(cd "$src" && go list -m -f '{{.GoMod}}' "k8s.io/kubernetes@$KUBE_VERSION")
mapfile -t STAGING_MODULES < <(sed -n 's#^[[:space:]]*k8s\.io/\([^ ]*\) v0\.0\.0$#\1#p' "$kube_gomod")
if [ "${#STAGING_MODULES[@]}" -lt 10 ]; then
  echo "found only ${#STAGING_MODULES[@]} staging modules in $kube_gomod" >&2
  exit 1
fi
{
  echo "// Throwaway wrapper module written by .ci/build-kube.sh; not part of sidesync."
  echo "module sidesync.invalid/kubebuild"
  echo
  echo "go 1.26.0"
  echo
  echo "require k8s.io/kubernetes $KUBE_VERSION"
  echo
  echo "replace ("
  for m in "${STAGING_MODULES[@]}"; do
    echo "	k8s.io/$m => k8s.io/$m $STAGING_VERSION"
  done
  echo ")"
} >"$src/go.mod"
cat >"$src/tools.go" <<'EOF'
//go:build tools

// Package tools pins the programs that .ci/build-kube.sh builds.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
EOF
(
  cd "$src"
  t=$SECONDS
  go mod tidy >&2
  echo "kube: modules resolved in $((SECONDS - t))s" >&2
  t=$SECONDS
  # What Kubernetes' own build stamps (hack/lib/version.sh), so /version tells the truth.
  v=k8s.io/component-base/version
  major=${KUBE_VERSION#v}; minor=${major#*.}; major=${major%%.*}; minor=${minor%%.*}
  go build -trimpath \
    "-ldflags=-s -w -X $v.gitVersion=$KUBE_VERSION -X $v.gitMajor=$major -X $v.gitMinor=$minor -X $v.gitTreeState=clean" \
    -o "$out/kube-apiserver.new" k8s.io/kubernetes/cmd/kube-apiserver
  echo "kube: kube-apiserver built in $((SECONDS - t))s" >&2
)

# --- etcd -----------------------------------------------------------------------------------
# go.etcd.io/etcd/server/v3 is itself a main package (a wrapper of etcdmain.Main).
src="$out/src/etcd"
rm -rf "$src"
mkdir -p "$src"
cat >"$src/go.mod" <<EOF
// Throwaway wrapper module written by .ci/build-kube.sh; not part of sidesync.
module sidesync.invalid/etcdbuild

go 1.26.0

require go.etcd.io/etcd/server/v3 $ETCD_VERSION
EOF
cat >"$src/tools.go" <<'EOF'
//go:build tools

// Package tools pins the programs that .ci/build-kube.sh builds.
package tools

import _ "go.etcd.io/etcd/server/v3"
EOF
(
  cd "$src"
  t=$SECONDS
  go mod tidy >&2
  echo "etcd: modules resolved in $((SECONDS - t))s" >&2
  t=$SECONDS
  go build -trimpath "-ldflags=-s -w" -o "$out/etcd.new" go.etcd.io/etcd/server/v3
  echo "etcd: etcd built in $((SECONDS - t))s" >&2
)

mv -f "$out/kube-apiserver.new" "$out/kube-apiserver"
mv -f "$out/etcd.new" "$out/etcd"
"$out/kube-apiserver" --version >&2
"$out/etcd" --version >&2
echo "$stamp" >"$out/stamp"
echo "built in $((SECONDS - start))s: $(du -h "$out/kube-apiserver" | cut -f1) kube-apiserver, $(du -h "$out/etcd" | cut -f1) etcd" >&2
echo "$out"
