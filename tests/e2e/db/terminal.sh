#!/bin/sh
# tests/e2e/db/terminal.sh - what reaches a terminal, and hostile names.
#
# Two programs whose names and source lines come from an attacker: one in
# a file named "a';DROP TABLE runs;--.tj" (SQL in its name: every query
# binds it), one in a file whose name holds an escape sequence; each has
# a graph break on a line with escape sequences in a comment. Every tool's output -- tjit run with TJIT_LOGS=all,
# tjit explain, tjit-profile run and report (text and JSON), tjit-dot
# run and graph, an error's source line and traceback -- must hold no
# control character but the line end and the tab, and must show the
# escape as \x1b. The runs are all in the database, under their names.
# Then tjit-minify on such a program, and every tool's messages that name
# a database, a run or an argument.
# (tjit-tui's screens: tests/unit/check_tui.c.)
#
# Environment: TJIT, TJIT_PROFILE, TJIT_DOT, TJIT_TUI, TJIT_MINIFY
# (default: beside TJIT), TJ_SRCDIR. Exit 77 (skipped) without the sqlite3
# shell.
set -u

top=${TJ_SRCDIR:-$(cd "$(dirname "$0")/../../.." && pwd)}
top=$(cd "$top" && pwd) || exit 99
# shellcheck source=tests/e2e/lib.sh
. "$top/tests/e2e/lib.sh"
find_tools terminal.sh
find_minify terminal.sh
if ! command -v sqlite3 >/dev/null 2>&1; then
	echo "SKIP: no sqlite3 command-line shell"
	exit 77
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/tjit-term.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
unset TJIT_LOGS TJIT_DB NO_COLOR
LC_ALL=C
export LC_ALL
cd "$work" || exit 99

esc=$(printf '\033')
sql="a';DROP TABLE runs;--.tj"
named=$(printf 'e\033[2Jx.tj')
# the break is on line 3: print() with escape sequences in its comment
for f in "$sql" "$named"; do
	printf 'def f(x):\n    y = x + 1\n    print("ok")  # %s[2J%s]0;title\007\n    return y\n\ncf = compile(f)\nprint(cf(ones(2)))\n' \
		"$esc" "$esc" >"$f"
done

# clean NAME FILE: no control character but the line end and the tab
clean() {
	if LC_ALL=C grep -q "$(printf '[\001-\010\013-\037\177]')" "$2"; then
		bad "$1: a raw control character"
		LC_ALL=C grep -n "$(printf '[\001-\010\013-\037\177]')" "$2" | cat -v | sed 's/^/    /' | head -5
	else
		ok
	fi
}
# has NAME FILE TEXT: the file holds the text (fixed string)
has() {
	if grep -qF -- "$3" "$2"; then ok; else bad "$1: no '$3' in:"; sed 's/^/    /' "$2" | head -20; fi
}
shown_line='print("ok")  # \x1b[2J\x1b]0;title\x07'
shown_name='e\x1b[2Jx.tj'

for f in "$sql" "$named"; do
	expect 0 "run $f" env TJIT_LOGS=all "$tjit" run --db t.db "$f"
	same "run $f: stdout" "ok
tensor([2.0000, 2.0000])" "$work/out"
	clean "run $f: the logs" "$work/err"
	has "run $f: the logs" "$work/err" "$shown_line"
	[ "$f" = "$named" ] && has "the logs: the file name" "$work/err" "Graph break in user code at $shown_name:3"
	expect 0 "explain $f" "$tjit" explain --no-db "$f"
	clean "explain $f" "$work/out"
	has "explain $f" "$work/out" "$shown_line"
	expect 0 "tjit-profile run $f" "$prof" run --db t.db --color never "$f"
	clean "tjit-profile run $f" "$work/out"
	has "tjit-profile run $f: the break's line" "$work/out" "$shown_line"
done
has "tjit-profile run: the file name" "$work/out" "$shown_name:3 in f"

# the names went into the database through bound parameters
check_rows() {
	got=$(sqlite3 t.db "$2" 2>&1)
	if [ "$got" = "$3" ]; then ok; else bad "$1: got '$got', expected '$3'"; fi
}
check_rows "every run is logged under its name" \
	"SELECT group_concat(id || ' ' || tool || ' ' || (program = '$(printf '%s' "$sql" | sed "s/'/''/g")'), ', ') FROM runs" \
	"1 tjit run 1, 2 tjit-profile run 1, 3 tjit run 0, 4 tjit-profile run 0"
check_rows "the names as given" "SELECT count(*) FROM runs WHERE program = CAST(X'$(printf '%s' "$named" | od -An -tx1 | tr -d ' \n')' AS TEXT)" "2"
"$tjit" run --db fresh.db --eager "$sql" >/dev/null 2>&1
check_rows "the tables are all there (as in a fresh file)" "SELECT group_concat(name) FROM (SELECT name FROM sqlite_master ORDER BY name)" \
	"$(sqlite3 fresh.db 'SELECT group_concat(name) FROM (SELECT name FROM sqlite_master ORDER BY name)')"

for r in 1 3; do
	expect 0 "report $r" "$prof" report --db t.db --color always "$r"
	# the report's own colors are escape sequences: take them out first
	sed "s/$esc\[[0-9;]*m//g" "$work/out" >"$work/plain"
	clean "report $r" "$work/plain"
	has "report $r: the break's line" "$work/plain" "$shown_line"
	expect 0 "report --json $r" "$prof" report --db t.db --json "$r"
	clean "report --json $r" "$work/out"
	expect 0 "tjit-dot run $r" "$dot" run --db t.db "$r"
	clean "tjit-dot run $r" "$work/out"
	expect 0 "tjit-dot graph $r" "$dot" graph --db t.db --run "$r" --compile 0/0
	clean "tjit-dot graph $r" "$work/out"
done
expect 0 "report 1 again" "$prof" report --db t.db 1
has "report 1: the SQL name as given" "$work/out" "Run 1 of t.db · $sql"
expect 0 "tjit-dot run 3 again" "$dot" run --db t.db 3
has "tjit-dot run 3: the name, escaped for DOT" "$work/out" 'e\\x1b[2Jx.tj'
expect 0 "tjit-profile diff" "$prof" diff --db t.db 1 3
clean "tjit-profile diff" "$work/out"

# an error in a file with an escape in its name: its place, its source
# line, and a traceback's
errname=$(printf 'r\033[2J.tj')
printf 'def f():\n    return 1 / 0  # %s[2J\n\nf()\n' "$esc" >"$errname"
expect 1 "an error's source line" "$tjit" run --no-db "$errname"
clean "an error's source line" "$work/err"
same "an error's source line: the traceback and the error" 'Traceback (most recent call last):
  File "r\x1b[2J.tj", line 4, in <module>
    f()
  File "r\x1b[2J.tj", line 2, in f
    return 1 / 0  # \x1b[2J
r\x1b[2J.tj:2:12: error: division by zero
    return 1 / 0  # \x1b[2J
           ^' "$work/err"
printf 'x = 1 %s[2J\n' "$esc" >syntax.tj
expect 1 "a syntax error's line" "$tjit" run --no-db syntax.tj
clean "a syntax error's line" "$work/err"
same "a syntax error's line: the message" 'syntax.tj:1:7: error: invalid non-printable character U+001B
x = 1 \x1b[2J
      ^' "$work/err"

expect 2 "a missing file's name" "$tjit" run --no-db "$(printf 'm\033[2J.tj')"
same "a missing file's name: the message" "tjit: cannot read 'm\x1b[2J.tj': No such file or directory" "$work/err"

# tjit-minify's report and messages name the program, its graph and the
# repro's folder
mname=$(printf 'n\033[2Jr.tj')
printf '@compile\ndef f(x):\n    y = x * 2\n    z = y.relu()\n    w = z + 1\n    return w.sum()\n\nprint(f(ones(4, 4)))\n' >"$mname"
expect 0 "tjit-minify: a failure" env TJIT_INJECT_BUG=aot:compile_error "$minify" --db m.db "$mname"
clean "tjit-minify: the report" "$work/out"
empty "tjit-minify: stderr" "$work/err"
has "tjit-minify: the program" "$work/out" 'program: n\x1b[2Jr.tj'
has "tjit-minify: the graph" "$work/out" 'graph: 0/0 f (n\x1b[2Jr.tj:2)'
has "tjit-minify: the repro" "$work/out" 'repro: n\x1b[2Jr.minify/repro.tj'
expect 1 "tjit-minify: no failure" "$minify" --db m.db "$mname"
clean "tjit-minify: no failure: the report" "$work/out"
clean "tjit-minify: no failure: stderr" "$work/err"
has "tjit-minify: no failure: the program" "$work/out" 'program: n\x1b[2Jr.tj'
has "tjit-minify: no failure: the message" "$work/err" \
	'tjit-minify: n\x1b[2Jr.tj does not fail with backend inductor'
expect 1 "tjit-minify: a database in no folder" "$minify" --db "nofolder/$mname.db" "$mname"
clean "tjit-minify: a database in no folder" "$work/err"
has "tjit-minify: a database in no folder: its name" "$work/err" 'database: nofolder/n\x1b[2Jr.tj.db'

# every message that names a database, a run or an argument
nodb=$(printf 'no\033[2J.db')
expect 1 "tjit-profile report: no database" "$prof" report --db "$nodb"
same "tjit-profile report: no database: the message" "tjit-profile: no database at 'no\x1b[2J.db'" "$work/err"
expect 1 "tjit-dot run: no database" "$dot" run --db "$nodb"
same "tjit-dot run: no database: the message" "tjit-dot: no database at 'no\x1b[2J.db'" "$work/err"
expect 1 "tjit-tui: no database" "$tui" --db "$nodb"
same "tjit-tui: no database: the message" "tjit-tui: no database at 'no\x1b[2J.db'" "$work/err"
expect 1 "tjit-profile run: a database in no folder" "$prof" run --db "nofolder/$nodb" "$sql"
clean "tjit-profile run: a database in no folder" "$work/err"
has "tjit-profile run: a database in no folder: its name" "$work/err" 'database: nofolder/no\x1b[2J.db'
expect 0 "tjit run: a database in no folder" "$tjit" run --db "nofolder/$nodb" "$sql"
clean "tjit run: a database in no folder" "$work/err"
has "tjit run: a database in no folder: its name" "$work/err" 'database: nofolder/no\x1b[2J.db'
cdb=$(printf 'c\033[2J.db')
"$tjit" run --db "$cdb" "$sql" >/dev/null 2>&1
"$tjit" run --db "$cdb" "$sql" >/dev/null 2>&1
expect 0 "tjit-profile diff: the database's name" "$prof" diff --db "$cdb" 1 2
clean "tjit-profile diff: the database's name" "$work/out"
has "tjit-profile diff: the database's name" "$work/out" 'Run 2 against run 1 of c\x1b[2J.db'
expect 1 "tjit-dot graph: no such compile" "$dot" graph --db "$cdb" --compile 7/0
same "tjit-dot graph: no such compile: the message" 'tjit-dot: no compile 7/0 in run 2' "$work/err"
arg=$(printf 'x\033[2J')
for t in "$tjit" "$prof" "$dot"; do
	expect 2 "$(basename "$t"): an unknown command" "$t" "$arg"
	head -n 1 "$work/err" >"$work/first"
	same "$(basename "$t"): an unknown command: the message" "$(basename "$t"): unknown command 'x\x1b[2J'" \
		"$work/first"
done
expect 2 "tjit run: an unknown option" "$tjit" run "--$arg" "$sql"
has "tjit run: an unknown option: the message" "$work/err" "tjit run: unknown option '--x\x1b[2J'"
expect 2 "tjit run: an unexpected argument" "$tjit" run "$sql" "$arg"
has "tjit run: an unexpected argument: the message" "$work/err" "tjit run: unexpected argument 'x\x1b[2J'"
expect 2 "tjit run: a bad --cache-size-limit" "$tjit" run --cache-size-limit "$arg" "$sql"
has "tjit run: a bad --cache-size-limit: the message" "$work/err" "got 'x\x1b[2J'"
expect 2 "tjit-dot graph: a bad -T" "$dot" graph -T "$arg" 1
has "tjit-dot graph: a bad -T: the message" "$work/err" "got 'x\x1b[2J'"
expect 2 "tjit-profile report: a bad --color" "$prof" report --color "$arg"
has "tjit-profile report: a bad --color: the message" "$work/err" "got 'x\x1b[2J'"
expect 2 "tjit-tui: two databases" "$tui" a.db "$arg"
has "tjit-tui: two databases: the message" "$work/err" "unexpected argument 'x\x1b[2J'"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
