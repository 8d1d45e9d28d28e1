#!/bin/sh
# tests/e2e/db/bad_files.sh - every tool on every kind of bad database
# file: one clear line on stderr, exit status 1 (tjit run warns and runs
# the program without a log, as documented), never a crash, and the file's
# bytes unchanged (sha256 before and after).
#
# The bad files: a tjit database cut in half, one whose first page is
# damaged, a text file, a binary file (tjit's own first 8 KiB), another
# application's SQLite database (without and with a user_version of its
# own), a tjit database of a newer schema version, a directory, and a
# read-only file (the reading tools read it; tjit run warns). The tools:
# tjit run --db, tjit explain --db, tjit-profile run / report / diff,
# tjit-dot run / graph, tjit-tui (which opens its database before it
# looks for a terminal: with stdin not a terminal, a good file ends at
# "not a terminal", a bad one before it), tjit-minify (which, as tjit run,
# warns and goes on without a log).
#
# Environment: TJIT, TJIT_PROFILE, TJIT_DOT, TJIT_TUI, TJIT_MINIFY (default: beside
# TJIT), TJ_SRCDIR. Exit 77 (skipped) without the sqlite3 shell or
# sha256sum. The read-only case needs a user the file's mode binds: as
# root, it runs the tools as nobody through setpriv, else skips that case.
set -u

top=${TJ_SRCDIR:-$(cd "$(dirname "$0")/../../.." && pwd)}
top=$(cd "$top" && pwd) || exit 99
# shellcheck source=tests/e2e/lib.sh
. "$top/tests/e2e/lib.sh"
find_tools bad_files.sh
find_minify bad_files.sh
for c in sqlite3 sha256sum; do
	if ! command -v $c >/dev/null 2>&1; then
		echo "SKIP: no $c"
		exit 77
	fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/tjit-bad.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
unset TJIT_LOGS TJIT_DB NO_COLOR
LC_ALL=C
export LC_ALL
mkdir "$work/files" && cd "$work/files" || exit 99

cat >p.tj <<'TJ'
def f(x):
    return x + 1

print(compile(f)(ones(2)))
TJ
"$tjit" run --db good.db p.tj >/dev/null 2>&1 || { echo "bad_files.sh: tjit run failed" >&2; exit 99; }
# one file, no WAL beside it: what a copied or archived database looks like
sqlite3 good.db 'PRAGMA journal_mode = DELETE' >/dev/null || exit 99
# a database as tjit run leaves it: its last rows still in its -wal file
mkdir walsrc && "$tjit" run --db walsrc/w.db p.tj >/dev/null 2>&1 && [ -s walsrc/w.db-wal ] || {
	echo "bad_files.sh: tjit run left no -wal file" >&2
	exit 99
}

# make KIND: bad.db afresh
make_bad() {
	rm -rf bad.db bad.db-wal bad.db-shm
	case $1 in
	truncated) head -c "$(($(wc -c <good.db) / 2))" good.db >bad.db ;;
	damaged) cp good.db bad.db && printf '\377\377\377\377' |
		dd of=bad.db bs=1 seek=100 conv=notrunc 2>/dev/null ;;
	text) printf 'a text file, long enough to look like a header to SQLite\n' >bad.db ;;
	binary) head -c 8192 "$tjit" >bad.db ;;
	other) sqlite3 bad.db "CREATE TABLE contacts (name TEXT); INSERT INTO contacts VALUES ('x')" ;;
	other_version) sqlite3 bad.db "CREATE TABLE runs (x); PRAGMA user_version = 3" ;;
	newer) cp good.db bad.db && sqlite3 bad.db 'PRAGMA user_version = 99' ;;
	directory) mkdir bad.db ;;
	read_only) cp good.db bad.db && chmod 444 bad.db ;;
	wal_read_only) cp walsrc/w.db bad.db && cp walsrc/w.db-wal bad.db-wal && chmod 444 bad.db bad.db-wal ;;
	esac
}
# the file's bytes, or a directory's listing
state() {
	if [ -d bad.db ]; then ls -a bad.db; else sha256sum <bad.db; fi
}

# try KIND STATUS STDERR TOOL ARGS...: on a fresh bad file of KIND
try() {
	t_kind=$1 t_want=$2 t_err=$3
	shift 3
	make_bad "$t_kind"
	case $t_kind in read_only | wal_read_only) chmod a-w . ;; esac
	before=$(state)
	$as "$@" >"$work/out" 2>"$work/err" </dev/null
	t_st=$?
	chmod u+w .
	name="$t_kind: $(basename "$1") $2"
	if [ "$t_st" -eq "$t_want" ]; then ok; else bad "$name: exit status $t_st, expected $t_want"; fi
	if [ -n "$t_err" ]; then same "$name: stderr" "$t_err" "$work/err"; else empty "$name: stderr" "$work/err"; fi
	if [ "$(state)" = "$before" ]; then ok; else bad "$name: the file changed"; fi
}

# every tool on KIND: WRITER is the writer's reason, READER the readers'
every_tool() {
	kind=$1 writer=$2 reader=$3
	try "$kind" 0 "tjit: database: $writer (running without a log)" "$tjit" run --db bad.db p.tj
	same "$kind: tjit run ran the program" "tensor([2.0000, 2.0000])" "$work/out"
	try "$kind" 0 "tjit: database: $writer (running without a log)" "$tjit" explain --db bad.db p.tj
	try "$kind" 1 "tjit-profile: database: $writer" "$prof" run --db bad.db p.tj
	try "$kind" 1 "tjit-profile: $reader" "$prof" report --db bad.db
	try "$kind" 1 "tjit-profile: $reader" "$prof" report --json --db bad.db
	try "$kind" 1 "tjit-profile: $reader" "$prof" diff --db bad.db 1 1
	try "$kind" 1 "tjit-dot: $reader" "$dot" run --db bad.db
	try "$kind" 1 "tjit-dot: $reader" "$dot" graph --db bad.db 1
	try "$kind" 1 "tjit-tui: $reader" "$tui" bad.db
	# the minifier logs as tjit run does: without a log, the file left alone
	try "$kind" 1 "tjit-minify: database: $writer (minifying without a log)
tjit-minify: p.tj does not fail with backend eager: 3 runs printed what the eager run printed" \
		"$minify" --backend eager --db bad.db -o m.d p.tj
}

as=
every_tool truncated "bad.db is damaged: database disk image is malformed" \
	"'bad.db' is damaged: database disk image is malformed"
every_tool damaged "bad.db is damaged: database disk image is malformed" \
	"'bad.db' is damaged: database disk image is malformed"
every_tool text "bad.db is not a tjit database (nor any SQLite database)" "'bad.db' is not a tjit database"
every_tool binary "bad.db is not a tjit database (nor any SQLite database)" "'bad.db' is not a tjit database"
every_tool other "bad.db is not a tjit database (it has tables but no schema version)" \
	"'bad.db' is not a tjit database"
every_tool other_version "bad.db is not a tjit database (schema version 3, but not tjit's tables)" \
	"'bad.db' is not a tjit database"
# the version this build writes (db/db.h)
v=$(sed -n 's/^#define DB_SCHEMA_VERSION \([0-9][0-9]*\).*/\1/p' "$top/db/db.h")
every_tool newer "bad.db has schema version 99, this tjit understands up to $v: it needs a tjit that understands version 99" \
	"database bad.db has schema version 99, this tjit understands up to $v: it needs a tjit that understands version 99"
every_tool directory "bad.db: Is a directory" "cannot open 'bad.db': Is a directory"

# read-only: the writers refuse it, the readers read it (in a folder the
# user may not write either: no -wal or -shm file can be made beside it)
if [ "$(id -u)" -eq 0 ]; then
	if command -v setpriv >/dev/null 2>&1 &&
		setpriv --reuid=65534 --regid=65534 --clear-groups "$tjit" --version >/dev/null 2>&1; then
		as="setpriv --reuid=65534 --regid=65534 --clear-groups"
	else
		as=skip
	fi
fi
if [ "$as" = skip ]; then
	echo "SKIP (read-only case): root, and no setpriv to run the tools as another user"
else
	chmod 755 "$work" "$work/files" && chmod 644 p.tj good.db
	mkdir -m 777 "$work/mout" # the minifier's output folder, for the other user
	# (eager: the other user may not read the code generator in the build
	# tree, and the log is what is tried here)
	try read_only 0 "tjit: database: bad.db: the file is read-only (running without a log)" \
		"$tjit" run --backend eager --db bad.db p.tj
	same "read_only: tjit run ran the program" "tensor([2.0000, 2.0000])" "$work/out"
	try read_only 1 "tjit-profile: database: bad.db: the file is read-only" "$prof" run --db bad.db p.tj
	try read_only 1 "tjit-minify: database: bad.db: the file is read-only (minifying without a log)
tjit-minify: p.tj does not fail with backend eager: 3 runs printed what the eager run printed" \
		"$minify" --backend eager --db bad.db -o "$work/mout/m.d" p.tj
	try read_only 0 "" "$prof" report --db bad.db
	head -1 "$work/out" >"$work/out1"
	same "read_only: the report" "Run 1 of bad.db · p.tj" "$work/out1"
	try read_only 0 "" "$prof" diff --db bad.db 1 1
	try read_only 0 "" "$dot" run --db bad.db
	head -1 "$work/out" >"$work/out1"
	same "read_only: the drawing" 'digraph "run 1" {' "$work/out1"
	try read_only 0 "" "$dot" graph --db bad.db 1
	try read_only 1 \
		"tjit-tui: not a terminal: tjit-tui needs one on its input and output (tjit-profile report prints a run as text)" \
		"$tui" bad.db
	if [ -e bad.db-wal ] || [ -e bad.db-shm ]; then bad "read_only: a -wal or -shm file was made"; else ok; fi
	# with its -wal beside it, no -shm, in that folder: SQLite cannot read
	# the last rows; the readers say why
	wal_why="cannot read 'bad.db': its last rows are in 'bad.db-wal', which SQLite reads through a 'bad.db-shm' file that it cannot make in that folder: copy the database and its -wal file to a folder you can write, or open it once with tjit where you can"
	try wal_read_only 1 "tjit-profile: $wal_why" "$prof" report --db bad.db
	try wal_read_only 1 "tjit-dot: $wal_why" "$dot" run --db bad.db
fi

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
