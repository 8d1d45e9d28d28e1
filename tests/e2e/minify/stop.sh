#!/bin/sh
# tests/e2e/minify/stop.sh - tjit-minify stopped before its end
# (doc/minify.md, "Stopping early"): a run that --max-seconds cut short is
# neither a hang nor a failure, only the end of the session's time; a
# session stopped by --max-queries records what it found (an unconfirmed
# failure as unknown, a classified one as stopped).
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

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
