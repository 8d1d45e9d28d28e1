#!/bin/sh
# tests/e2e/minify/matrix.sh - tjit-minify on a matrix of planted bugs
# (issue 13): {compile error, run-time error, crash, accuracy} x
# {aot_eager, inductor} (TJIT_INJECT_BUG; inductor's run-time error is its
# crash, a faulting store in the kernel) and the three
# relu_*_TESTING_ONLY backends, each in generated programs of 10, 100 and
# 1000 ops (gen.sh: one relu, two graph breaks, a recompile; and four
# cells where only the recompile takes the relu). Each cell
# must exit 0, report the failure's class and the right stage, shrink
# the failing graph to the relu and at most two other ops, and write a
# repro that fails alone (exit 1; a crash by its signal) and passes with
# the bug switched off. Then: the same seed gives a byte-identical repro
# twice; a hang (aot:hang) is found and shrunk under --timeout; a flaky
# failure (aot:flaky, every other run) is reported as such.
#
# Prints one line a cell: its stage, the ops left of the failing graph's,
# the candidates (all, and those of the shrink with the sqlite3 shell)
# and the time.
#
# Usage: tests/e2e/minify/matrix.sh
# Environment: TJIT, TJIT_MINIFY, TJ_SRCDIR (as check.sh);
# MATRIX_SIZES (default "10 100 1000"); MATRIX_BIG (default all: the
# cells of 1000 ops, or the label of one; `make check-asan` keeps one).
set -u

top=${TJ_SRCDIR:-$(cd "$(dirname "$0")/../../.." && pwd)}
top=$(cd "$top" && pwd) || exit 99
# shellcheck source=tests/e2e/lib.sh
. "$top/tests/e2e/lib.sh"
find_minify matrix.sh
have_sqlite=1
command -v sqlite3 >/dev/null 2>&1 || have_sqlite=0
have_timeout=1
command -v timeout >/dev/null 2>&1 || have_timeout=0
sizes=${MATRIX_SIZES:-10 100 1000}
big=${MATRIX_BIG:-all}
gen=$top/tests/e2e/minify/gen.sh

work=$(mktemp -d "${TMPDIR:-/tmp}/tjit-matrix.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
unset TJIT_LOGS TJIT_DB TJIT_INJECT_BUG NO_COLOR
LC_ALL=C
export LC_ALL
cd "$work" || exit 99

now() { date +%s.%N; }
tstart=$(now)
# runrepro DIR ENV... -- ARGS: the repro of DIR alone (in a shell of its
# own, whose "Segmentation fault" stays out of the log); its status in rst
runrepro() {
	r_dir=$1
	shift
	sh -c 'cd "$1" && shift && "$@" >"$0/rout" 2>"$0/rerr" </dev/null' "$work" "$r_dir" "$@" 2>/dev/null
	rst=$?
}

# the repro's graph: the statements of def repro, comments dropped
repro_body() {
	sed -n '/^def repro/,/^    return/p' "$1" | grep '^    v_' | sed 's/  *#.*//'
}

# cell NAME BUG BACKEND CLASS STAGE N SEED [late]: the program of N ops
# (late: the relu in the second call only, a recompile's graph), minified
cell() {
	name=$1 bug=$2 backend=$3 class=$4 stage=$5 n=$6 seed=$7 late=${8:-}
	[ "$bug" = - ] && bug=
	"$gen" "$n" "$seed" $late >"$name.tj" || { bad "$name: gen.sh $n $seed $late"; return; }
	t0=$(now)
	# (a build with AddressSanitizer reports each crash: unsymbolized, it
	# costs 50 ms, not a second)
	nosym=
	[ "$class" = crash ] && nosym="ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}symbolize=0"
	# (a generous time limit: under a sanitizer a 1000-op inductor compile is slow)
	expect 0 "$name" env ${bug:+TJIT_INJECT_BUG=$bug} $nosym "$minify" --db "$name.db" --backend "$backend" \
		--timeout 300 -o "$name.d" "$name.tj"
	t1=$(now)
	grep -q "^failure: $class\$" "$work/out" && ok || bad "$name: $(grep '^failure' "$work/out"), expected $class"
	grep -q "^stage: $stage\$" "$work/out" && ok || bad "$name: $(grep '^stage' "$work/out"), expected $stage"
	if [ -n "$late" ]; then
		grep -q "^graph: [0-9]*/1 f ($name.tj:2)\$" "$work/out" && ok ||
			bad "$name: $(grep '^graph' "$work/out"), expected a recompile's"
	fi
	shrunk=$(sed -n 's/^shrunk: //p' "$work/out")
	case $shrunk in
	[123]" of "*" ops: "*relu*) ok ;;
	*) bad "$name: shrunk: '$shrunk', expected the relu and at most two other ops" ;;
	esac
	repro=$name.d/repro.tj
	repro_body "$repro" >"$work/body"
	nbody=$(wc -l <"$work/body")
	if [ "$nbody" -ge 1 ] && [ "$nbody" -le 3 ] && grep -q '= relu(' "$work/body"; then ok; else
		bad "$name: the repro's graph is not the relu and at most two other ops:"
		sed 's/^/    /' "$work/body"
	fi
	# the repro alone: it fails as the program did
	runrepro "$name.d" env ${bug:+TJIT_INJECT_BUG=$bug} "$tjit" run --no-db --backend "$backend" repro.tj
	case $class in
	crash)
		# (a build with AddressSanitizer catches the signal, reports, exits 1)
		if [ $rst -eq 139 ] || { [ $rst -eq 1 ] && grep -q 'ERROR: AddressSanitizer: SEGV' "$work/rerr"; }; then
			ok
		else
			bad "$name: the repro exits $rst, not by SIGSEGV"
		fi ;;
	accuracy)
		if [ $rst -eq 1 ] && grep -q 'differs from the float64 eager run$' "$work/rout"; then ok; else
			bad "$name: the repro exits $rst without a wrong output"; fi ;;
	*)
		if [ $rst -eq 1 ] && grep -q ": error: .*relu" "$work/rerr"; then ok; else
			bad "$name: the repro exits $rst without its error"; sed 's/^/    /' "$work/rerr"; fi ;;
	esac
	# and passes without the bug (a testing backend's bug is the backend)
	case $backend in
	*_TESTING_ONLY) runrepro "$name.d" "$tjit" run --no-db --backend eager repro.tj ;;
	*) runrepro "$name.d" "$tjit" run --no-db --backend "$backend" repro.tj ;;
	esac
	[ $rst -eq 0 ] && ok || { bad "$name: the repro exits $rst without the bug"; sed 's/^/    /' "$work/rerr"; }
	nshrink=?
	[ $have_sqlite -eq 1 ] && nshrink=$(sqlite3 "$name.db" "SELECT count(*) FROM minify_steps WHERE phase = 'shrink'")
	printf '%-26s %-32s %-16s %-22s runs %3s shrink %3s %6.2f s\n' "$name" "$(sed -n 's/^stage: //p' "$work/out")" \
		"$(sed -n 's/^graph: \([^ ]*\) .*/graph \1/p' "$work/out")" "$shrunk" "$(sed -n 's/^runs: //p' "$work/out")" "$nshrink" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')"
}

# ---- the matrix ----

# NAME BUG BACKEND CLASS STAGE, one a line
cells='aot:compile_error aot:compile_error inductor compile_error aot_eager
aot:runtime_error aot:runtime_error inductor runtime_error aot_eager
aot:crash aot:crash inductor crash aot_eager
aot:accuracy aot:accuracy inductor accuracy aot_eager
inductor:compile_error inductor:compile_error inductor compile_error inductor
inductor:runtime_error inductor:runtime_error inductor crash inductor
inductor:crash inductor:crash inductor crash inductor
inductor:accuracy inductor:accuracy inductor accuracy inductor
relu_compile_error - relu_compile_error_TESTING_ONLY compile_error relu_compile_error_TESTING_ONLY
relu_runtime_error - relu_runtime_error_TESTING_ONLY runtime_error relu_runtime_error_TESTING_ONLY
relu_accuracy_error - relu_accuracy_error_TESTING_ONLY accuracy relu_accuracy_error_TESTING_ONLY'

i=0
for n in $sizes; do
	echo "$cells" | while read -r label bug backend class stage; do
		i=$((i + 1))
		[ "$n" -ge 1000 ] && [ "$big" != all ] && [ "$big" != "$label" ] && continue
		# (another seed a cell: the relu moves between the three graphs)
		cell "$(echo "$label" | tr : _)-$n" "$bug" "$backend" "$class" "$stage" "$n" $((n + i))
		echo "$pass $fail" >"$work/counts"
	done
	read -r pass fail <"$work/counts"
done

# the relu in the recompile only (the second call's graph, F/1)
echo "$cells" | grep -E '^(aot:runtime_error|inductor:crash|inductor:accuracy|relu_compile_error) ' |
	while read -r label bug backend class stage; do
		cell "$(echo "$label" | tr : _)-late-100" "$bug" "$backend" "$class" "$stage" 100 7 late
		echo "$pass $fail" >"$work/counts"
	done
read -r pass fail <"$work/counts"

# ---- the same seed, the same repro, byte for byte ----

# (the whole minification, and one stopped in the middle of the shrink,
# whose repro still has 17 ops, their input random)
"$gen" 100 3 >seed.tj
for run in 1 2; do
	expect 0 "--seed 5, run $run" env TJIT_INJECT_BUG=aot:accuracy "$minify" --db seed.db --seed 5 \
		-o seed$run.d seed.tj
	expect 1 "--seed 5 --max-queries 11, run $run" env TJIT_INJECT_BUG=aot:accuracy "$minify" --db seed.db \
		--seed 5 --max-queries 11 -o part$run.d seed.tj
done
# (the repro and whatever else it reads, the candidates' log aside)
for d in seed part; do
	for f in "${d}1.d"/*; do
		case $f in */runs.db*) continue ;; esac
		if cmp "$f" "${d}2.d/${f##*/}"; then ok; else bad "--seed 5 twice: two ${f##*/}"; fi
	done
done
grep -q '^# tjit-minify repro of seed.tj: graph 0/0, 1 of 33 ops: relu$' seed1.d/repro.tj && ok ||
	bad "--seed 5: $(sed -n 1p seed1.d/repro.tj)"
case $(sed -n 1p part1.d/repro.tj) in
"# tjit-minify repro of seed.tj: graph 0/0, "[1-9][0-9]" of 33 ops: "*) ok ;;
*) bad "--seed 5 --max-queries 11: not stopped in the shrink: $(sed -n 1p part1.d/repro.tj)" ;;
esac

# ---- a hang: every candidate that shows it costs the time limit ----

if [ $have_timeout -eq 1 ]; then
	"$gen" 10 2 >hang.tj
	expect 0 "hang" env TJIT_INJECT_BUG=aot:hang "$minify" --db hang.db --timeout 1 -o hang.d hang.tj
	same "hang: the report" "program: hang.tj
backend: inductor
failure: hang
signature: hang
stage: aot_eager
graph: 1/0 f (hang.tj:2)
shrunk: 1 of 5 ops: relu
runs: 18
repro: hang.d/repro.tj" "$work/out"
	empty "hang: stderr" "$work/err"
	if [ $have_sqlite -eq 1 ]; then
		got=$(sqlite3 hang.db "SELECT group_concat(phase || ':' || outcome, ' ') FROM
			(SELECT phase, outcome FROM minify_steps ORDER BY id)")
		want="classify:passes classify:fails classify:fails classify:fails bisect:passes bisect:fails"
		want="$want locate:passes locate:fails record:passes record:passes shrink:fails shrink:fails shrink:fails shrink:passes"
		want="$want shrink:fails shrink:fails shrink:fails verify:fails"
		[ "$got" = "$want" ] && ok || bad "hang: steps: $got"
		got=$(sqlite3 hang.db "SELECT count(*) FROM minify_steps WHERE outcome = 'fails' AND ms < 1000")
		[ "$got" = 0 ] && ok || bad "hang: $got hanging candidates ended before the time limit"
	fi
	repro_body hang.d/repro.tj >"$work/body"
	same "hang: the repro's graph" "    v_relu = relu(v_mul)" "$work/body"
	runrepro hang.d timeout 3 env TJIT_INJECT_BUG=aot:hang "$tjit" run --no-db repro.tj
	[ $rst -eq 124 ] && ok || bad "hang: the repro exits $rst, expected to run until timeout kills it (124)"
	runrepro hang.d timeout 10 "$tjit" run --no-db repro.tj
	[ $rst -eq 0 ] && ok || bad "hang: the repro exits $rst without the bug"
else
	echo "note: no timeout command: the hang is not checked"
fi

# ---- a flaky failure: every other run fails (aot:flaky) ----

"$gen" 10 2 >flaky.tj
rm -f tjit-flaky.state
expect 1 "flaky" env TJIT_INJECT_BUG=aot:flaky "$minify" --db flaky.db -o flaky.d flaky.tj
same "flaky: the report" "program: flaky.tj
backend: inductor
failure: flaky
runs: 4" "$work/out"
same "flaky: stderr" "tjit-minify: flaky: the program failed 2 of 3 runs with backend inductor" "$work/err"
if [ $have_sqlite -eq 1 ]; then
	got=$(sqlite3 flaky.db "SELECT failure, result, (SELECT group_concat(outcome, ' ') FROM
		(SELECT outcome FROM minify_steps ORDER BY id)) FROM minify_sessions")
	[ "$got" = "flaky|not_reproduced|passes fails passes fails" ] && ok || bad "flaky: session and steps: $got"
fi

echo "$pass passed, $fail failed ($(awk -v a="$tstart" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }') s)"
[ $fail -eq 0 ]
