#!/usr/bin/env bash
# Builds the real krew (kubectl's plugin manager, for the krew manifest's install test,
# cmd/sidesync-image's TestKrewInstall) from the Go module proxy into a cache directory outside
# the repository, and prints the binary's path.
#
#   dir: ${SIDESYNC_KREW_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/sidesync-ci/krew}
set -euo pipefail
cd "$(dirname "$0")/.."
version=v0.4.3
dir="${SIDESYNC_KREW_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/sidesync-ci/krew}"
exec bash .ci/build-gotool.sh "$dir" krew "sigs.k8s.io/krew/cmd/krew@$version"
