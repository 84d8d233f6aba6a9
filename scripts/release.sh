#!/usr/bin/env bash
# Builds sidesync's release binaries: static (CGO_ENABLED=0, so they run in scratch and
# distroless images), stripped, reproducible (-trimpath), and every program stamped the same way
# (internal/shared/buildinfo) with the version and the commit it was built from, which its `version`
# prints and which names the image kubectl-sidesync puts into pods.
#
#   scripts/release.sh [OUTDIR]        # default OUTDIR: dist
#
# Writes OUTDIR/PROGRAM-OS-ARCH for each program (PROGRAMS, default: sidesync kubectl-sidesync
# sidesync-image) and each platform (PLATFORMS, default: linux/amd64 linux/arm64) and prints
# their paths. Then the packages, with sidesync-image (this machine's build; built for it when
# it is not among the binaries): with kubectl-sidesync among the programs, its krew archives
# OUTDIR/kubectl-sidesync-OS-ARCH.tar.gz (the binary and LICENSE) for each platform and the krew
# manifest OUTDIR/sidesync.yaml; with sidesync-image among them (it adds the charts to the
# image), the Helm charts OUTDIR/sidesync-{injector,rescuer}-X.Y.Z.tgz (X.Y.Z the version
# without its v) and OUTDIR/index.yaml. See docs/INSTALL.md. The Dockerfile builds the image's binary with it too. The version is `git describe --tags` when the commit is
# tagged (v1.2.3), else a Go pseudo-version (v0.0.0-20261202150405-abcdef123456); a dirty tree
# adds "-dirty". VERSION and COMMIT in the environment override both (for builds outside git).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-dist}"
mkdir -p "$out"

git_() { git -c safe.directory="$PWD" "$@"; }
commit="${COMMIT:-$(git_ rev-parse HEAD 2>/dev/null || echo unknown)}"
if [ -z "${VERSION:-}" ]; then
  if VERSION=$(git_ describe --tags --exact-match --match 'v[0-9]*' 2>/dev/null); then
    :
  elif stamp=$(TZ=UTC git_ log -1 --format=%cd --date=format-local:%Y%m%d%H%M%S 2>/dev/null); then
    VERSION="v0.0.0-$stamp-${commit:0:12}"
  else
    VERSION="v0.0.0-unknown"
  fi
  if [ -n "$(git_ status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    VERSION="$VERSION-dirty"
    commit="$commit-dirty"
  fi
fi

stamp="github.com/sidesync/sidesync/internal/shared/buildinfo"
programs=${PROGRAMS:-sidesync kubectl-sidesync sidesync-image}
# One go build per platform for all the programs (one package graph, compiled in parallel), into
# a directory of its own beside the binaries, removed however the script ends.
tmp=$(mktemp -d "$out/.release.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
platforms=${PLATFORMS:-linux/amd64 linux/arm64}
for platform in $platforms; do
  os=${platform%/*} arch=${platform#*/}
  pkgs=()
  for program in $programs; do pkgs+=("./cmd/$program"); done
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -buildvcs=false \
    -ldflags="-s -w -X $stamp.version=$VERSION -X $stamp.commit=$commit" -o "$tmp/" "${pkgs[@]}"
  for program in $programs; do
    bin="$out/$program-$os-$arch"
    mv -f "$tmp/$program" "$bin"
    echo "$bin"
  done
done

# The packages, written by sidesync-image for this machine: the one just built, or one built here.
has() { [[ " $programs " == *" $1 "* ]]; }
has kubectl-sidesync || has sidesync-image || exit 0
host=$(go env GOOS)/$(go env GOARCH)
tool="$out/sidesync-image-${host/\//-}"
if ! has sidesync-image || [[ " $platforms " != *" $host "* ]]; then
  tool="$tmp/sidesync-image"
  CGO_ENABLED=0 go build -trimpath -buildvcs=false \
    -ldflags="-s -w -X $stamp.version=$VERSION -X $stamp.commit=$commit" -o "$tool" ./cmd/sidesync-image
fi
if has kubectl-sidesync; then
  "$tool" krew --version "$VERSION" --dist "$out" --platforms "$platforms" --license LICENSE
fi
if has sidesync-image; then
  "$tool" charts --version "$VERSION" --out "$out"
fi
