#!/usr/bin/env bash
# Builds the real helm CLI (for the packaged charts' install test, cmd/sidesync-image's
# TestHelmInstallFromOCI) from the Go module proxy, at the version of helm.sh/helm/v4 that
# go.mod requires (the library that packages the charts), into a cache directory outside the
# repository, and prints the binary's path.
#
#   dir: ${SIDESYNC_HELM_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/sidesync-ci/helm}
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(go list -m -f '{{.Version}}' helm.sh/helm/v4)
dir="${SIDESYNC_HELM_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/sidesync-ci/helm}"
exec bash .ci/build-gotool.sh "$dir" helm "helm.sh/helm/v4/cmd/helm@$version"
