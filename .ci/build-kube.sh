#!/usr/bin/env bash
# Builds a real Kubernetes control plane and node from source, through the Go module proxy, into a
# cache directory outside the repository, for the integration tests in internal/testing/kubetest (the API
# server alone, and a whole node that runs Jobs): kube-apiserver, kube-controller-manager,
# kube-scheduler, kubelet, etcd, and containerd with its runc shim and ctr; and beside them the API
# server of the oldest Kubernetes sidesync supports (kubeversion.Oldest), alone, in <dir>/1.33,
# for the tests that run the same checks on the oldest and the newest release.
#
#   bash .ci/build-kube.sh            # prints the directory that holds them
#
# The directory is ${SIDESYNC_KUBE_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/sidesync-ci/kube}.
# Nothing of Kubernetes, etcd or containerd is committed: the script writes throwaway wrapper
# modules under <dir>/src, each requiring the pinned version, and `go build`s the upstream main
# packages. runc comes from Debian (apt-get, when it is missing and the script runs as root).
# A stamp file records the pinned versions; when it matches and every binary exists, the script
# does nothing (well under a second). Change a version below and the next run rebuilds. The old
# API server has its own stamp (<dir>/1.33/stamp): each part rebuilds only when its own changes.
set -euo pipefail

# Pinned versions. k8s.io/kubernetes replaces every k8s.io/<staging> module with ./staging/...
# in its own go.mod, which does not apply to a dependency, so the wrapper pins each staging
# module to the matching release instead: v1.X.Y goes with v0.X.Y.
KUBE_VERSION=v1.37.2
ETCD_VERSION=v3.7.3
CONTAINERD_VERSION=v2.4.2
STAGING_VERSION="v0.${KUBE_VERSION#v1.}"
# The oldest release the injector's chart accepts (kubeversion.Oldest), its API server only: the
# tests run it with the etcd above (v3.7.3 serves 1.33's etcd v3.5 client; no second etcd).
OLDEST_KUBE_VERSION=v1.33.13
# Bump when the build recipe (flags, wrapper modules) changes, to force a rebuild.
RECIPE=2

out="${SIDESYNC_KUBE_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/sidesync-ci/kube}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
stamp="kubernetes=$KUBE_VERSION staging=$STAGING_VERSION etcd=$ETCD_VERSION containerd=$CONTAINERD_VERSION recipe=$RECIPE $(go env GOOS)/$(go env GOARCH)"
KUBE_PROGRAMS=(kube-apiserver kube-controller-manager kube-scheduler kubelet)
CONTAINERD_PROGRAMS=(containerd containerd-shim-runc-v2 ctr)
oldest_minor=${OLDEST_KUBE_VERSION#v}; oldest_minor=${oldest_minor%.*} # 1.33
oldest="$out/$oldest_minor"
oldest_stamp="kubernetes=$OLDEST_KUBE_VERSION staging=v0.${OLDEST_KUBE_VERSION#v1.} programs=kube-apiserver recipe=$RECIPE $(go env GOOS)/$(go env GOARCH)"

# runc, which containerd's shim runs, the CNI plugins that give pods their network, and ip,
# which sets up the node's loopback, are Debian's: the only parts not built from source here.
if { ! command -v runc >/dev/null || [ ! -x /usr/lib/cni/ptp ] || ! command -v ip >/dev/null; } &&
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing runc, containernetworking-plugins and iproute2 from Debian" >&2
  export DEBIAN_FRONTEND=noninteractive
  debs=(runc containernetworking-plugins iproute2)
  apt-get install -y -q "${debs[@]}" >&2 ||
    { apt-get update -q >&2 && apt-get install -y -q "${debs[@]}" >&2; } ||
    echo "could not install ${debs[*]}: the node tests will skip" >&2
fi

up_to_date() {
  local p
  for p in "${KUBE_PROGRAMS[@]}" etcd "${CONTAINERD_PROGRAMS[@]}"; do
    [ -x "$out/$p" ] || return 1
  done
  [ -f "$out/stamp" ] && [ "$(cat "$out/stamp")" = "$stamp" ]
}
oldest_up_to_date() {
  [ -x "$oldest/kube-apiserver" ] && [ -f "$oldest/stamp" ] && [ "$(cat "$oldest/stamp")" = "$oldest_stamp" ]
}

if up_to_date && oldest_up_to_date; then
  echo "kube binaries up to date ($stamp; $oldest_stamp)" >&2
  echo "$out"
  exit 0
fi

# One build at a time per directory; a second caller waits, then finds the binaries up to date.
exec 9>"$out/.lock"
flock 9

# Static, small, reproducible binaries; the wrapper modules may edit their own go.mod/go.sum.
export CGO_ENABLED=0
export GOFLAGS="-mod=mod -buildvcs=false"
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}" GOWORK=off

# build_kube VERSION SRC DEST PROGRAM...: writes a wrapper module in SRC that requires
# k8s.io/kubernetes VERSION, its staging modules pinned to the matching v0.X.Y, and builds the
# named programs of k8s.io/kubernetes/cmd into DEST, stamped as Kubernetes' own build stamps them.
build_kube() {
  local version=$1 src=$2 dest=$3
  shift 3
  local programs=("$@") staging kube_gomod m p t
  staging="v0.${version#v1.}"
  rm -rf "$src"
  mkdir -p "$src" "$dest"
  # k8s.io/kubernetes replaces every k8s.io/<staging> module with ./staging/... in its own
  # go.mod, which does not apply to a dependency, so the wrapper pins each to the matching
  # release. The staging modules are those that it requires at v0.0.0; read them from its go.mod
  # so that a version bump needs no list.
  kube_gomod=$(cd "$src" && go list -m -f '{{.GoMod}}' "k8s.io/kubernetes@$version")
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
    echo "require k8s.io/kubernetes $version"
    echo
    echo "replace ("
    for m in "${STAGING_MODULES[@]}"; do
      echo "	k8s.io/$m => k8s.io/$m $staging"
    done
    echo ")"
  } >"$src/go.mod"
  {
    echo "//go:build tools"
    echo
    echo "// Package tools pins the programs that .ci/build-kube.sh builds."
    echo "package tools"
    echo
    echo "import ("
    for p in "${programs[@]}"; do
      echo "	_ \"k8s.io/kubernetes/cmd/$p\""
    done
    echo ")"
  } >"$src/tools.go"
  (
    cd "$src"
    t=$SECONDS
    go mod tidy >&2
    echo "kube $version: modules resolved in $((SECONDS - t))s" >&2
    t=$SECONDS
    # What Kubernetes' own build stamps (hack/lib/version.sh), so /version tells the truth.
    local v=k8s.io/component-base/version major minor
    major=${version#v}; minor=${major#*.}; major=${major%%.*}; minor=${minor%%.*}
    go build -trimpath \
      "-ldflags=-s -w -X $v.gitVersion=$version -X $v.gitMajor=$major -X $v.gitMinor=$minor -X $v.gitTreeState=clean" \
      -o "$dest/" "${programs[@]/#/k8s.io/kubernetes/cmd/}"
    echo "kube $version: ${programs[*]} built in $((SECONDS - t))s" >&2
  )
}

# --- the oldest supported release's API server ------------------------------------------------
if ! oldest_up_to_date; then
  echo "building kube-apiserver $OLDEST_KUBE_VERSION into $oldest" >&2
  start=$SECONDS
  rm -rf "$oldest/stamp" "$oldest/new"
  build_kube "$OLDEST_KUBE_VERSION" "$out/src/kube-$oldest_minor" "$oldest/new" kube-apiserver
  mv -f "$oldest/new/kube-apiserver" "$oldest/kube-apiserver"
  rmdir "$oldest/new"
  "$oldest/kube-apiserver" --version >&2
  echo "$oldest_stamp" >"$oldest/stamp"
  echo "kube-apiserver $OLDEST_KUBE_VERSION built in $((SECONDS - start))s: $(du -h "$oldest/kube-apiserver" | cut -f1)" >&2
fi

if up_to_date; then
  echo "kube binaries up to date ($stamp)" >&2
  echo "$out"
  exit 0
fi

echo "building Kubernetes $KUBE_VERSION (${KUBE_PROGRAMS[*]}), etcd $ETCD_VERSION and containerd $CONTAINERD_VERSION into $out" >&2
start=$SECONDS
rm -f "$out/stamp"
rm -rf "$out/new"
mkdir -p "$out/new"

# --- Kubernetes -----------------------------------------------------------------------------
build_kube "$KUBE_VERSION" "$out/src/kube" "$out/new" "${KUBE_PROGRAMS[@]}"

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
  go build -trimpath "-ldflags=-s -w" -o "$out/new/etcd" go.etcd.io/etcd/server/v3
  echo "etcd: etcd built in $((SECONDS - t))s" >&2
)

# --- containerd -----------------------------------------------------------------------------
# Its go.mod has no replace directives, so a wrapper module that requires it builds it as
# released. The tags leave out snapshotters that need cgo or kernel parts; the node uses overlayfs.
src="$out/src/containerd"
rm -rf "$src"
mkdir -p "$src"
cat >"$src/go.mod" <<EOF
// Throwaway wrapper module written by .ci/build-kube.sh; not part of sidesync.
module sidesync.invalid/containerdbuild

go 1.26.0

require github.com/containerd/containerd/v2 $CONTAINERD_VERSION
EOF
cat >"$src/tools.go" <<'EOF'
//go:build tools

// Package tools pins the programs that .ci/build-kube.sh builds.
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
EOF
(
  cd "$src"
  t=$SECONDS
  go mod tidy >&2
  echo "containerd: modules resolved in $((SECONDS - t))s" >&2
  t=$SECONDS
  v=github.com/containerd/containerd/v2/version
  go build -trimpath -tags "no_btrfs no_devmapper no_zfs" \
    "-ldflags=-s -w -X $v.Version=$CONTAINERD_VERSION" \
    -o "$out/new/" "${CONTAINERD_PROGRAMS[@]/#/github.com/containerd/containerd/v2/cmd/}"
  echo "containerd: ${CONTAINERD_PROGRAMS[*]} built in $((SECONDS - t))s" >&2
)

for p in "${KUBE_PROGRAMS[@]}" etcd "${CONTAINERD_PROGRAMS[@]}"; do
  mv -f "$out/new/$p" "$out/$p"
done
rmdir "$out/new"
"$out/kube-apiserver" --version >&2
"$out/kubelet" --version >&2
"$out/etcd" --version >&2
"$out/containerd" --version >&2
echo "$stamp" >"$out/stamp"
echo "built in $((SECONDS - start))s: $(du -ch "${KUBE_PROGRAMS[@]/#/$out/}" "$out/etcd" "${CONTAINERD_PROGRAMS[@]/#/$out/}" | tail -1 | cut -f1) in all" >&2
echo "$out"
