#!/usr/bin/env bash
# Runs every native Go fuzz target of the module, one at a time (go test -fuzz takes one target),
# for FUZZTIME each, and prints a table: target | package | execs | result. Exits non-zero if any
# target fails or none is found.
#
#   scripts/fuzz.sh                  # every target, FUZZTIME (default 10s) each
#   FUZZTIME=1m scripts/fuzz.sh 'Parse|^FuzzRead$'  # only the targets whose name matches
#
# The targets are found by grepping for "func Fuzz...(f *testing.F)" in *_test.go files, so a new
# one is never forgotten. A failing input is written by go test to the package's
# testdata/fuzz/FuzzXxx/, where plain `go test` re-runs it; the log of each run is kept in
# FUZZLOGS (a temporary directory by default) and the end of a failing one is printed.
#
# Settings: FUZZTIME (default 10s), FUZZPARALLEL (fuzzing workers per target, default the number
# of CPUs, at most 2, so that a shared 2-core machine stays responsive), FUZZMINIMIZETIME (default
# 2s), FUZZLOGS.
#
# Two traps of go test -fuzz that this script avoids:
# - Each new input is minimised for up to -fuzzminimizetime, 60 s by default, during which its
#   worker reports nothing. A failing input found late was still being minimised when FUZZTIME
#   ran out, and the run ended in a bare "context deadline exceeded" with the input lost (this is
#   how FuzzRead's NEL bug first showed). Minimising for FUZZMINIMIZETIME keeps the input.
# - Go 1.26's fuzzing coordinator can fail a target with a bare "context deadline exceeded" at
#   the FUZZTIME boundary although nothing failed (golang/go#75804, fixed in Go 1.27). Such a run
#   (no failing input written, no other error) is run again by count, as many executions as it
#   reached (-fuzztime Nx: no deadline to race), under -timeout 10m so that an input that hangs
#   still fails, with the stacks. The table says "ok (again by count)".
set -euo pipefail

cd "$(dirname "$0")/.."

fuzztime=${FUZZTIME:-10s}
minimize=${FUZZMINIMIZETIME:-2s}
cpus=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
parallel=${FUZZPARALLEL:-$((cpus < 2 ? cpus : 2))}
filter=${1:-.}
logs=${FUZZLOGS:-$(mktemp -d "${TMPDIR:-/tmp}/sidesync-fuzz.XXXXXX")}
mkdir -p "$logs"

# Every target as "dir name", sorted by package then name.
mapfile -t targets < <(
	grep -rE --include='*_test.go' --exclude-dir=testdata --exclude-dir=vendor --exclude-dir=.git \
		-o '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' . |
		sed -E -e 's#^\./([^/]*_test\.go:)#././\1#' -e 's#^\./(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\(.*#\1 \2#' |
		awk -v re="$filter" '$2 ~ re' | sort -u
)
if ((${#targets[@]} == 0)); then
	echo "fuzz.sh: no fuzz target matches ${filter}" >&2
	exit 1
fi

# fuzz runs target $name of package $dir with the extra flags given.
fuzz() { go test -run '^$' -fuzz "^${name}\$" -fuzzminimizetime "$minimize" -parallel "$parallel" "$@" "./${dir}"; }

# execs_in: the executions of the last progress line ("fuzz: elapsed: 10s, execs: 123456 ...").
execs_in() { grep -oE 'execs: [0-9]+' "$1" | tail -n 1 | cut -d' ' -f2 || true; }

# bare_deadline: the run's only failure is Go's "context deadline exceeded" (no failing input
# written, no panic, no t.Fatal line).
bare_deadline() {
	grep -q '^    context deadline exceeded$' "$1" &&
		! grep -qE 'Failing input written|panic:|_test\.go:[0-9]+:' "$1"
}

echo "fuzzing ${#targets[@]} targets for ${fuzztime} each, ${parallel} workers; logs in ${logs}"
start=$SECONDS
failed=0
rows=()
for t in "${targets[@]}"; do
	dir=${t% *}
	name=${t#* }
	log="${logs}/${dir//\//_}.${name}.log"
	t0=$SECONDS
	if fuzz -fuzztime "$fuzztime" >"$log" 2>&1; then
		result=ok
	elif bare_deadline "$log" && n=$(execs_in "$log") && [[ -n $n && $n -gt 0 ]] &&
		fuzz -fuzztime "${n}x" -timeout 10m >"${log%.log}.again.log" 2>&1; then
		result="ok (again by count)"
		cat "${log%.log}.again.log" >>"$log"
	else
		result=FAIL
		failed=$((failed + 1))
	fi
	execs=$(execs_in "$log")
	rows+=("${name}|./${dir}|${execs:--}|${result} ($((SECONDS - t0))s)")
	printf '%-22s %-28s %10s  %s\n' "$name" "./${dir}" "${execs:--}" "${result} ($((SECONDS - t0))s)"
	if [[ $result == FAIL ]]; then
		echo "---- ${name}: end of ${log}"
		tail -n 25 "$log" | sed 's/^/    /'
		echo "----"
	fi
done

echo
printf '| %-22s | %-28s | %10s | %-12s |\n' target package execs result
printf '| %-22s | %-28s | %10s | %-12s |\n' "$(printf -- '-%.0s' {1..22})" "$(printf -- '-%.0s' {1..28})" "$(printf -- '-%.0s' {1..10})" "$(printf -- '-%.0s' {1..12})"
for r in "${rows[@]}"; do
	IFS='|' read -r n p e res <<<"$r"
	printf '| %-22s | %-28s | %10s | %-12s |\n' "$n" "$p" "$e" "$res"
done
echo
echo "${#targets[@]} targets, ${failed} failed, wall time $((SECONDS - start))s"
((failed == 0))
