#!/bin/sh
# tests/e2e/run.sh - runs tj programs and compares what they print with the
# expectations beside them.
#
# A test is either
#   NAME.tj    run as `tjit run tests/e2e/.../NAME.tj`, or
#   NAME.args  one line of arguments for tjit (for a missing file, another
#              command or options); a NAME.tj beside it is then only data.
# Its expectations, beside it:
#   NAME.out     the whole stdout (always present, maybe empty)
#   NAME.err     the whole stderr (only when not empty)
#   NAME.status  the exit status (only when not 0)
# and, when the test needs them, environment variables for tjit:
#   NAME.env     one VAR=value a line (no spaces in values; '#' lines are
#                comments), e.g. TJIT_LOGS=graph_breaks
#
# Usage: tests/e2e/run.sh [--update] [TEST...]
#   TEST is a path (relative to the top source folder) of a .tj or .args
#   file, or a folder of them; default: all of tests/e2e.
#   --update writes the expectations from what tjit prints now (for a human
#   who has checked the differences, never for CI).
# Environment: TJIT (default: ./tjit, then TOP/tjit), TJ_SRCDIR (the top
# source folder; default: two levels above this script), TJ_E2E_TIMEOUT
# (seconds per program, default 60).
#
# Every .tj test without a .env runs three times: as it is, with compile()
# switched off (`tjit run --eager`), and with every compile() on stage 2
# (`tjit run --backend aot_eager`), against the same expectations, so that
# compiled, eager and aot_eager runs print exactly the same
# (tests/e2e/compile_only, logs, explain, profile, db, cli and docs print
# what compiling did, and run once).
#
# Programs run in a scratch folder in which tests/ and examples/ link to the
# source tree, so that every path that tjit prints is relative and the same
# in every build (in-tree, VPATH, distcheck), and whatever tjit writes into
# its working folder (tjit.db) lands outside the sources.
set -u

update=0
case ${1-} in
--update) update=1; shift ;;
-h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac

top=${TJ_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
top=$(cd "$top" && pwd) || exit 99
tjit=${TJIT:-}
if [ -z "$tjit" ]; then
	if [ -x ./tjit ]; then tjit=./tjit; else tjit=$top/tjit; fi
fi
case $tjit in /*) ;; *) tjit=$(pwd)/$tjit ;; esac
if [ ! -x "$tjit" ]; then
	echo "run.sh: no tjit binary at $tjit (set TJIT)" >&2
	exit 99
fi
timeout_s=${TJ_E2E_TIMEOUT:-60}

work=$(mktemp -d "${TMPDIR:-/tmp}/tjit-e2e.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
mkdir "$work/run"
ln -s "$top/tests" "$work/run/tests"
ln -s "$top/examples" "$work/run/examples"

# What tjit prints must not depend on the caller's environment.
unset TJIT_LOGS TJIT_DB TJIT_INJECT_BUG
LC_ALL=C
export LC_ALL

# The list of tests, relative to $top, in a stable order.
[ $# -eq 0 ] && set -- tests/e2e
for arg in "$@"; do
	arg=${arg#"$top"/}
	arg=${arg#./}
	if [ -d "$top/$arg" ]; then
		(cd "$top" && find "$arg" -name '*.tj' -o -name '*.args')
	else
		echo "$arg"
	fi
done | LC_ALL=C sort -u >"$work/list"

pass=0
fail=0
failed=

# run_tjit ARGS...: tjit with ARGS (and $envs) in the run folder; its
# stdout, stderr and status in $work/out, $work/err and $status
run_tjit() {
	# shellcheck disable=SC2086 # the variables are split into words
	(cd "$work/run" && exec env $envs timeout "$timeout_s" "$tjit" "$@") \
		>"$work/out" 2>"$work/err" </dev/null
	status=$?
}

# check LABEL ARGS...: runs tjit with ARGS (and $envs) and compares with the
# expectations of $stem; updates them with --update (the first way only).
check() {
	label=$1
	shift
	run_tjit "$@"
	# LeakSanitizer's own tracer sometimes crashes at exit on a loaded
	# machine (a known fault of the sanitizer runtime, seen also with
	# programs that start no thread and load no LLVM): one rerun, then it
	# counts.
	if grep -q "LeakSanitizer has encountered a fatal error" "$work/err"; then
		echo "note: $label: LeakSanitizer's tracer failed at exit; run again"
		run_tjit "$@"
	fi

	ok=1
	if [ -f "$top/$stem.out" ]; then exp_out=$top/$stem.out; else exp_out=/dev/null; fi
	if [ -f "$top/$stem.err" ]; then exp_err=$top/$stem.err; else exp_err=/dev/null; fi
	if [ -f "$top/$stem.status" ]; then exp_status=$(cat "$top/$stem.status"); else exp_status=0; fi
	{
		if [ ! -f "$top/$stem.out" ]; then
			echo "missing $stem.out (run with --update to create it)"
		fi
		if ! cmp -s "$exp_out" "$work/out"; then
			echo "stdout differs:"
			diff -u --label "$stem.out (expected)" --label "stdout (tjit $*)" "$exp_out" "$work/out"
		fi
		if ! cmp -s "$exp_err" "$work/err"; then
			echo "stderr differs:"
			diff -u --label "$stem.err (expected)" --label "stderr (tjit $*)" "$exp_err" "$work/err"
		fi
		if [ "$status" != "$exp_status" ]; then
			if [ "$status" -eq 124 ]; then
				echo "exit status: expected $exp_status, got a timeout after ${timeout_s}s"
			elif [ "$status" -gt 128 ]; then
				echo "exit status: expected $exp_status, got $status (killed by signal $((status - 128)))"
			else
				echo "exit status: expected $exp_status, got $status"
			fi
		fi
	} >"$work/report"
	[ -f "$top/$stem.out" ] || ok=0
	[ -s "$work/report" ] && ok=0

	if [ $ok -eq 1 ]; then
		pass=$((pass + 1))
		echo "PASS: $label"
	elif [ $update -eq 1 ] && [ "$label" = "$t" ]; then
		cp "$work/out" "$top/$stem.out"
		if [ -s "$work/err" ]; then cp "$work/err" "$top/$stem.err"; else rm -f "$top/$stem.err"; fi
		if [ $status -ne 0 ]; then echo $status >"$top/$stem.status"; else rm -f "$top/$stem.status"; fi
		pass=$((pass + 1))
		echo "UPDATED: $label"
		sed 's/^/    /' "$work/report"
	else
		fail=$((fail + 1))
		failed="$failed $label"
		echo "FAIL: $label"
		sed 's/^/    /' "$work/report"
	fi
}

while IFS= read -r t; do
	stem=${t%.*}
	case $t in
	*.tj) [ -f "$top/$stem.args" ] && continue
	      args="run $t" ;;
	*.args) args=$(sed 1q "$top/$t") ;;
	*) echo "run.sh: $t: not a .tj or .args file" >&2; fail=$((fail + 1)); continue ;;
	esac

	envs=
	[ -f "$top/$stem.env" ] && envs=$(grep -v '^#' "$top/$stem.env")

	# shellcheck disable=SC2086 # the arguments are split into words
	check "$t" $args

	# The second way: every program whose output cannot depend on compiling
	# (no logs, no explain, not a testing-only backend) must print exactly
	# the same with compile() switched off (--eager).
	case $t in
	*.tj) ;;
	*) continue ;;
	esac
	[ -n "$envs" ] && continue
	case $t in
	tests/e2e/compile_only/*|tests/e2e/logs/*|tests/e2e/explain/*|tests/e2e/profile/*|tests/e2e/db/*|tests/e2e/cli/*|tests/e2e/docs/*) continue ;;
	esac
	check "$t (--eager)" run --eager "$t"

	# The third way: the same programs must also print exactly the same
	# with every compile() on stage 2 (--backend aot_eager). None of them
	# prints its backend's name today; one that does would be listed here
	# with its reason, and skipped.
	check "$t (--backend aot_eager)" run --backend aot_eager "$t"
	check "$t (--backend inductor)" run --backend inductor "$t"
done <"$work/list"

if [ $fail -ne 0 ]; then
	echo "failed:$failed" | fold -s -w 78
fi
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
