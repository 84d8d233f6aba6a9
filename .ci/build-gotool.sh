#!/usr/bin/env bash
# Builds one Go command from the Go module proxy, as released, into a cache directory outside
# the repository, and prints the binary's path; .ci/build-{helm,krew}.sh call it. A stamp file
# records what was built; the build is skipped while the stamp matches and the binary exists.
#
#   bash .ci/build-gotool.sh DIR NAME PKG@VERSION
#
# `go install pkg@version` reads only the module's own go.mod (run outside any module), so no
# wrapper module is needed and nothing of the tool is in this repository.
set -euo pipefail
dir=$1 name=$2 pkg=$3
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
stamp="$dir/stamp"
want="$name $pkg $(go env GOVERSION) $(go env GOOS)/$(go env GOARCH)"
built() { [ -x "$dir/$name" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; }

if built; then
  echo "$name ${pkg#*@} already built" >&2
  echo "$dir/$name"
  exit 0
fi
# One build at a time per directory; a second caller waits, then finds it built.
exec 9>"$dir/.lock"
flock 9
if built; then
  echo "$dir/$name"
  exit 0
fi

echo "building $name ($pkg) into $dir" >&2
start=$SECONDS
rm -f "$stamp"
export GOWORK=off GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
tmp="$dir/tmpbin"
rm -rf "$tmp"
mkdir -p "$tmp"
(cd "$tmp" && CGO_ENABLED=0 GOBIN="$tmp" go install -trimpath -ldflags="-s -w" "$pkg")
mv -f "$tmp/$(basename "${pkg%@*}")" "$dir/$name"
rm -rf "$tmp"
printf '%s\n' "$want" >"$stamp"
echo "built $name in $((SECONDS - start))s, $(stat -c %s "$dir/$name") bytes" >&2
echo "$dir/$name"
