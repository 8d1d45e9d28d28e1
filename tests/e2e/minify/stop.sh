#!/bin/sh
# tests/e2e/minify/stop.sh - tjit-minify stopped before its end
# (doc/minify.md, "Stopping early"): a run that --max-seconds cut short is
# neither a hang nor a failure, only the end of the session's time; a
# session stopped by --max-queries records what it found (an unconfirmed
# failure as unknown, a classified one as stopped); SIGTERM and SIGINT
# kill the running candidate, remove the work files, close the session as
# interrupted and exit 128 + N.
#
# Usage: tests/e2e/minify/stop.sh
# Environment: as check.sh.
set -u

top=${TJ_SRCDIR:-$(cd "$(dirname "$0")/../../.." && pwd)}
top=$(cd "$top" && pwd) || exit 99
# shellcheck source=tests/e2e/lib.sh
. "$top/tests/e2e/lib.sh"
find_minify stop.sh
have_sqlite=1
command -v sqlite3 >/dev/null 2>&1 || have_sqlite=0
[ $have_sqlite -eq 1 ] || echo "note: no sqlite3 shell: the database checks are skipped"

work=$(mktemp -d "${TMPDIR:-/tmp}/tjit-minify-stop.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
unset TJIT_LOGS TJIT_DB TJIT_INJECT_BUG NO_COLOR
LC_ALL=C
export LC_ALL
cd "$work" || exit 99

# sql NAME DB QUERY EXPECTED
sql() {
	[ $have_sqlite -eq 1 ] || return 0
	got=$(sqlite3 "$2" "$3" 2>&1)
	if [ "$got" = "$4" ]; then ok; else bad "$1: $3 gave '$got', expected '$4'"; fi
}

# relu in a compiled function: the planted bugs' target
printf '@compile\ndef f(x):\n    y = x * 2\n    z = y.relu()\n    w = z + 1\n    return w.sum()\n\nmanual_seed(0)\nprint(f(randn(4, 4)))\n' >relu.tj

# ---- --max-seconds: a run cut at the session's limit ----

# a correct program that runs for many seconds: its eager reference is
# cut, which says nothing of the program (before: "hang", not a compiler bug)
printf '@compile\ndef f(x):\n    return (x * 2).sum()\ns = 0\nfor i in range(1000000000):\n    s = s + i\nprint(f(ones(3)), s)\n' >slow.tj
expect 1 "--max-seconds: the reference" "$minify" --db slow.db -o slow.d --max-seconds 0.5 slow.tj
same "--max-seconds: the reference: the report" "program: slow.tj
backend: inductor
failure: unknown
stopped: --max-seconds 0.5 reached
runs: 1" "$work/out"
same "--max-seconds: the reference: stderr" "tjit-minify: stopped: --max-seconds 0.5 reached
tjit-minify: the failure was not confirmed: the eager reference was cut short" "$work/err"
sql "--max-seconds: the reference: session" slow.db "SELECT failure, stage IS NULL, result, ended_at IS NOT NULL
	FROM minify_sessions" "unknown|1|not_reproduced|1"
sql "--max-seconds: the reference: steps" slow.db "SELECT phase, candidate, outcome, ms < 5000 FROM minify_steps" \
	"classify|eager reference: cut short|cut_short|1"

# a hang with a time limit of its own: the runs that waited out their
# limit are hangs, the one the session's time cut is not counted
expect 1 "--max-seconds: a hang" env TJIT_INJECT_BUG=aot:hang "$minify" --db hang.db -o hang.d --timeout 0.5 \
	--max-seconds 1.3 relu.tj
grep -q '^failure: unknown$' "$work/out" && grep -q '^stopped: --max-seconds 1.3 reached$' "$work/out" && ok ||
	bad "--max-seconds: a hang: the report: $(cat "$work/out")"
sql "--max-seconds: a hang: session" hang.db "SELECT failure, result FROM minify_sessions" "unknown|not_reproduced"
sql "--max-seconds: a hang: the last step" hang.db "SELECT candidate LIKE 'inductor run _: cut short', outcome
	FROM minify_steps ORDER BY id DESC LIMIT 1" "1|cut_short"
sql "--max-seconds: a hang: each hang took its limit" hang.db "SELECT count(*) FROM minify_steps
	WHERE outcome = 'fails' AND ms < 500" "0"

# ---- --max-queries: what was found is recorded ----

# before the failure is confirmed: unknown (not "none", which says it does not fail)
expect 1 "--max-queries 3" env TJIT_INJECT_BUG=inductor:accuracy "$minify" --db q3.db -o q3.d --max-queries 3 relu.tj
same "--max-queries 3: the report" "program: relu.tj
backend: inductor
failure: unknown
stopped: --max-queries 3 reached
runs: 3" "$work/out"
same "--max-queries 3: stderr" "tjit-minify: stopped: --max-queries 3 reached
tjit-minify: the failure was not confirmed: 2 of 3 runs made" "$work/err"
sql "--max-queries 3: session" q3.db "SELECT failure, result FROM minify_sessions" "unknown|not_reproduced"

# classified and bisected, then stopped: the failure and stage kept, the
# whole program the repro on disk, not checked
expect 1 "--max-queries 6" env TJIT_INJECT_BUG=inductor:accuracy "$minify" --db q6.db -o q6.d --max-queries 6 relu.tj
same "--max-queries 6: the report" "program: relu.tj
backend: inductor
failure: accuracy
signature: accuracy
detail: output line 1: got tensor(39.0067), expected tensor(31.0067)
stage: inductor
stopped: --max-queries 6 reached
runs: 6
repro: q6.d/repro.tj" "$work/out"
same "--max-queries 6: stderr" "tjit-minify: stopped: --max-queries 6 reached
tjit-minify: q6.d/repro.tj: not checked: the limits ran out" "$work/err"
sql "--max-queries 6: session" q6.db "SELECT failure, stage, result, repro_path FROM minify_sessions" \
	"accuracy|inductor|stopped|q6.d/repro.tj"

# ---- a signal: the candidate killed, the work files removed ----

# children: the processes whose parent is $c_parent
children() {
	for f in /proc/[0-9]*/stat; do
		# (read, not cat: a scan must take milliseconds, not the 0.5 s a
		# candidate lives)
		read -r line 2>/dev/null <"$f" || continue
		# (after the command's name, which may hold spaces: state, parent)
		# shellcheck disable=SC2086
		set -- ${line##*) }
		[ "${2:-}" = "$c_parent" ] && { d=${f#/proc/}; echo "${d%/stat}"; }
	done
	return 0
}
# wait_for WHAT: up to 30 s until the shell test WHAT holds
wait_for() {
	i=0
	while ! eval "$1"; do
		i=$((i + 1))
		[ $i -ge 600 ] && return 1
		sleep 0.05
	done
}

if [ -r /proc/self/stat ]; then
	# SIGTERM while a candidate of the shrink hangs
	(exec env TJIT_INJECT_BUG=aot:hang "$minify" --db term.db -o term.d --timeout 0.5 relu.tj \
		>"$work/out" 2>"$work/err" </dev/null) &
	p=$!
	c_parent=$p
	# (a candidate that has just started, so that the signal comes while
	# it runs, not between two runs)
	if wait_for '[ -e term.d/candidate.tj ]' && first=$(children) &&
		wait_for 'kid=$(children); [ -n "$kid" ] && [ "$kid" != "$first" ]'; then
		kill -TERM $p
		wait $p
		st=$?
		[ $st -eq 143 ] && ok || bad "SIGTERM: exit status $st, expected 143"
		if kill -0 $kid 2>/dev/null; then bad "SIGTERM: the candidate $kid still runs"; else ok; fi
		left=$(cd term.d && ls candidate.tj candidate.tjt values.tjt values.tj inputs.tjt 2>/dev/null)
		[ -z "$left" ] && ok || bad "SIGTERM: work files left: $left"
		[ -s term.d/repro.tj ] && ok || bad "SIGTERM: no repro so far"
		grep -q '^stopped: interrupted by SIGTERM$' "$work/out" && ok || bad "SIGTERM: the report: $(cat "$work/out")"
		grep -q '^tjit-minify: term.d/repro.tj: not checked: interrupted$' "$work/err" && ok ||
			bad "SIGTERM: stderr: $(cat "$work/err")"
		sql "SIGTERM: session" term.db "SELECT failure, stage, result, ended_at IS NOT NULL FROM minify_sessions" \
			"hang|aot_eager|interrupted|1"
		sql "SIGTERM: the last step" term.db "SELECT phase, outcome FROM minify_steps ORDER BY id DESC LIMIT 1" \
			"shrink|cut_short"
		sql "SIGTERM: the run" term.db "SELECT exit_status FROM runs" "143"
	else
		kill -KILL $p 2>/dev/null
		bad "SIGTERM: no candidate of the shrink in 30 s"
	fi

	# SIGINT while classifying (a script's background job ignores
	# SIGINT: env gives it back its default first)
	if env --default-signal=INT true 2>/dev/null; then
		(exec env --default-signal=INT TJIT_INJECT_BUG=aot:hang "$minify" --db int.db -o int.d --timeout 20 \
			relu.tj >"$work/out" 2>"$work/err" </dev/null) &
		p=$!
		c_parent=$p
		t0=$(date +%s)
		# (a candidate that has run for 0.3 s: the first of the three
		# runs, which hangs, not the short eager reference)
		if wait_for 'kid=$(children); sleep 0.3; [ -n "$kid" ] && [ "$(children)" = "$kid" ]'; then
			kill -INT $p
			wait $p
			st=$?
			[ $st -eq 130 ] && ok || bad "SIGINT: exit status $st, expected 130"
			[ $(($(date +%s) - t0)) -lt 15 ] && ok || bad "SIGINT: the hang was waited out"
			if [ -n "$kid" ] && kill -0 $kid 2>/dev/null; then bad "SIGINT: the candidate $kid still runs"; else ok; fi
			same "SIGINT: the report" "program: relu.tj
backend: inductor
failure: unknown
stopped: interrupted by SIGINT
runs: $(grep '^runs: ' "$work/out" | cut -c7-)" "$work/out"
			sql "SIGINT: session" int.db "SELECT failure, result, ended_at IS NOT NULL FROM minify_sessions" \
				"unknown|interrupted|1"
			sql "SIGINT: the last step" int.db "SELECT outcome FROM minify_steps ORDER BY id DESC LIMIT 1" "cut_short"
		else
			kill -KILL $p 2>/dev/null
			bad "SIGINT: no candidate in 30 s"
		fi
	else
		echo "note: no env --default-signal: SIGINT is not checked"
	fi
else
	echo "note: no /proc: the signals are not checked"
fi

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
