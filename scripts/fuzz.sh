#!/usr/bin/env bash
# Runs the native Go fuzz targets of the module, one at a time (a fuzzing run takes one target),
# for FUZZTIME each, and prints a table: target | package | execs | result. Exits non-zero if any
# target fails or none is found.
#
#   scripts/fuzz.sh                  # every target, FUZZTIME (default 10s) each
#   FUZZTIME=1m scripts/fuzz.sh 'Parse|^FuzzRead$'  # only the targets whose name matches
#   FUZZTARGETS=6 FUZZROTATE=$(git rev-list --count HEAD) scripts/fuzz.sh  # 6 of them, in turn
#
# The targets are found by grepping for "func Fuzz...(f *testing.F)" in *_test.go files, so a new
# one is never forgotten. A failing input is written to the package's testdata/fuzz/FuzzXxx/,
# where plain `go test` re-runs it; the end of a failing run's log is printed, and the logs of
# all runs are kept in FUZZLOGS if it is set (else they are removed with the other temporary
# files).
#
# Settings: FUZZTIME (default 10s), FUZZPARALLEL (fuzzing workers per target, default the number
# of CPUs, at most 2, so that a shared 2-core machine stays responsive), FUZZMINIMIZETIME (default
# 2s), FUZZLOGS, and, to fuzz only some of the targets in turn:
#   FUZZTARGETS  how many of the matching targets to fuzz (default: all);
#   FUZZFIRST    package directories whose targets come first (say, those a commit changed);
#   FUZZROTATE   a number (say, the commit's count) that picks the others: the targets, sorted by
#                package and name, are taken FUZZTARGETS at a time from position
#                FUZZROTATE*FUZZTARGETS (wrapping around), so that successive numbers walk
#                through all of them.
#
# Each package's test binary is built once, instrumented for fuzzing (go test -c -fuzz), into a
# temporary directory removed on exit, and runs each of its targets in the package's directory, as
# go test would, with go test's fuzzing cache ($GOCACHE/fuzz), so that the inputs found by
# earlier runs are where later runs, and `go test -fuzz`, start from.
#
# Two traps of go test -fuzz that this script avoids:
# - Each new input is minimised for up to -fuzzminimizetime, 60 s by default, during which its
#   worker reports nothing. A failing input found late was still being minimised when FUZZTIME
#   ran out, and the run ended in a bare "context deadline exceeded" with the input lost (this is
#   how FuzzRead's NEL bug first showed). Minimising for FUZZMINIMIZETIME keeps the input.
# - Go 1.26's fuzzing coordinator can fail a target with a bare "context deadline exceeded" at
#   the FUZZTIME boundary although nothing failed (golang/go#75804, fixed in Go 1.27). Such a run
#   (no failing input written, no other error) is run again by count, as many executions as it
#   reached (-test.fuzztime Nx: no deadline to race), under -test.timeout 10m so that an input
#   that hangs still fails, with the stacks. The table says "ok (again by count)".
set -euo pipefail

cd "$(dirname "$0")/.."

fuzztime=${FUZZTIME:-10s}
minimize=${FUZZMINIMIZETIME:-2s}
cpus=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
parallel=${FUZZPARALLEL:-$((cpus < 2 ? cpus : 2))}
filter=${1:-.}
# The test binaries, and the logs unless FUZZLOGS keeps them, go to a temporary directory that
# is removed however the script ends.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sidesync-fuzz.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
logs=${FUZZLOGS:-$tmp/logs}
bins=$tmp/bin
mkdir -p "$logs" "$bins"
trap 'exit 130' INT
trap 'exit 143' TERM

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

# choose keeps FUZZTARGETS of the targets: FUZZFIRST's, then FUZZROTATE's turn of the rest.
choose() {
	local n=$1 total=${#targets[@]} first=() rest=() t d picked=()
	for t in "${targets[@]}"; do
		for d in ${FUZZFIRST:-}; do
			if [[ ${t% *} == "${d#./}" ]]; then
				first+=("$t")
				continue 2
			fi
		done
		rest+=("$t")
	done
	picked=("${first[@]:0:n}")
	local want=$((n - ${#picked[@]})) r=${#rest[@]}
	if ((want > 0 && r > 0)); then
		local start=$(((${FUZZROTATE:-0} * n) % r)) i
		for ((i = 0; i < want && i < r; i++)); do
			picked+=("${rest[$(((start + i) % r))]}")
		done
	fi
	echo "fuzzing ${#picked[@]} of ${total} targets: ${#first[@]} in FUZZFIRST's packages (${FUZZFIRST:-none}) first, then FUZZROTATE=${FUZZROTATE:-0}'s turn of the others"
	targets=("${picked[@]}")
}
if [[ -n ${FUZZTARGETS:-} ]] && ((FUZZTARGETS < ${#targets[@]})); then
	choose "$FUZZTARGETS"
fi

gocache=$(go env GOCACHE)
module=$(go list -m)

# build builds the fuzzing test binary of package ./$dir once, into $bins.
build() {
	local bin="$bins/${dir//\//_}.test"
	if [[ ! -x $bin ]]; then
		go test -c -fuzz=. -o "$bin" "./${dir}" >&2
	fi
	echo "$bin"
}

# fuzz runs target $name of package $dir from its binary, in the package's directory, with the
# extra flags given.
fuzz() {
	(cd "$dir" && "$bin" -test.run '^$' -test.fuzz "^${name}\$" -test.fuzzminimizetime "$minimize" \
		-test.parallel "$parallel" -test.fuzzcachedir "$gocache/fuzz/$module/${dir#.}" -test.paniconexit0 "$@")
}

# execs_in: the executions of the last progress line ("fuzz: elapsed: 10s, execs: 123456 ...").
execs_in() { grep -oE 'execs: [0-9]+' "$1" | tail -n 1 | cut -d' ' -f2 || true; }

# bare_deadline: the run's only failure is Go's "context deadline exceeded" (no failing input
# written, no panic, no t.Fatal line).
bare_deadline() {
	grep -q '^    context deadline exceeded$' "$1" &&
		! grep -qE 'Failing input written|panic:|_test\.go:[0-9]+:' "$1"
}

echo "fuzzing ${#targets[@]} targets for ${fuzztime} each, ${parallel} workers${FUZZLOGS:+; logs in ${logs}}"
start=$SECONDS
failed=0
rows=()
for t in "${targets[@]}"; do
	dir=${t% *}
	name=${t#* }
	log="${logs}/${dir//\//_}.${name}.log"
	t0=$SECONDS
	if ! bin=$(build 2>"$log"); then
		result="FAIL (build)"
	elif fuzz -test.fuzztime "$fuzztime" >"$log" 2>&1; then
		result=ok
	elif bare_deadline "$log" && n=$(execs_in "$log") && [[ -n $n && $n -gt 0 ]] &&
		fuzz -test.fuzztime "${n}x" -test.timeout 10m >"${log%.log}.again.log" 2>&1; then
		result="ok (again by count)"
		cat "${log%.log}.again.log" >>"$log"
	else
		result=FAIL
	fi
	if [[ $result == FAIL* ]]; then
		failed=$((failed + 1))
	fi
	execs=$(execs_in "$log")
	rows+=("${name}|./${dir}|${execs:--}|${result} ($((SECONDS - t0))s)")
	printf '%-22s %-28s %10s  %s\n' "$name" "./${dir}" "${execs:--}" "${result} ($((SECONDS - t0))s)"
	if [[ $result == FAIL* ]]; then
		echo "---- ${name}: the end of its log${FUZZLOGS:+ (${log})}"
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
