#!/bin/sh
# tests/e2e/docs/examples.sh - every example program of doc/language.md runs
# and prints exactly what the page shows under it.
#
# An example is a fenced block whose info string starts with `tj`, followed
# (blank lines between are allowed) by a fenced block whose info string
# starts with `output`:
#
#   ```tj [FILE.tj] [explain] [VAR=value ...] [--option ...]
#   print(1 + 2)
#   ```
#
#   ```output [exit=N]
#   3
#   ```
#
# The program is written to FILE (default prog.tj) in a scratch folder and
# run there as `tjit run --no-db [--option ...] FILE` (`tjit explain` with
# `explain`), with the VAR=value pairs in its environment. The output block
# is its whole stdout followed by its whole stderr; exit=N is its exit status
# (default 0). A `tj` block without an output block after it is an error, so
# that no example goes unchecked: fragments that do not run are fenced
# without `tj`.
#
# Usage: tests/e2e/docs/examples.sh [PAGE.md]   (default doc/language.md)
# Environment: TJIT (default ./tjit), TJ_SRCDIR (the top source folder;
# default: three levels above this script), TJ_E2E_TIMEOUT (seconds per
# example, default 60).
set -u
set -f  # the words after `tj` are not globbed
top=${TJ_SRCDIR:-$(cd "$(dirname "$0")/../../.." && pwd)}
page=${1:-$top/doc/language.md}
name=${1:-doc/language.md}
tjit=${TJIT:-./tjit}
case $tjit in /*) ;; *) tjit=$(pwd)/$tjit ;; esac
[ -x "$tjit" ] || { echo "examples.sh: no tjit binary at $tjit (set TJIT)" >&2; exit 99; }
[ -r "$page" ] || { echo "examples.sh: cannot read $page" >&2; exit 99; }
timeout_s=${TJ_E2E_TIMEOUT:-60}
tmo=
command -v timeout >/dev/null 2>&1 && tmo="timeout $timeout_s"

work=$(mktemp -d "${TMPDIR:-/tmp}/tjit-doc.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

# split the page: example N gets $work/N/{info,prog,expected,exit,line}
awk -v work="$work" '
function fail(msg) { printf "%s:%d: %s\n", FILENAME, NR, msg > "/dev/stderr"; bad = 1; exit 1 }
/^```/ && !infence {
	infence = 1
	info = substr($0, 4)
	split(info, w, " ")
	if (w[1] == "tj") {
		if (want_output) fail("a tj block where an output block was expected")
		n++; kind = "tj"; dir = work "/" n
		system("mkdir -p \"" dir "\"")
		rest = info; sub(/^tj[ ]*/, "", rest)
		print rest > (dir "/info"); close(dir "/info")
		print NR > (dir "/line"); close(dir "/line")
		printf "" > (dir "/prog")
	} else if (w[1] == "output") {
		if (!want_output) fail("an output block with no tj block before it")
		kind = "output"; want_output = 0
		code = 0
		for (i = 2; i in w; i++) if (w[i] ~ /^exit=[0-9]+$/) code = substr(w[i], 6)
		print code > (dir "/exit"); close(dir "/exit")
		printf "" > (dir "/expected")
	} else {
		if (want_output) fail("the tj block before has no output block")
		kind = "other"
	}
	next
}
/^```/ && infence {
	infence = 0
	if (kind == "tj") { close(dir "/prog"); want_output = 1 }
	if (kind == "output") close(dir "/expected")
	next
}
infence && kind == "tj" { print > (dir "/prog"); next }
infence && kind == "output" { print > (dir "/expected"); next }
want_output && !/^[ \t]*$/ { fail("the tj block before has no output block") }
END {
	if (bad) exit 1
	if (infence) fail("unterminated fenced block")
	if (want_output) fail("the last tj block has no output block")
	print n + 0 > (work "/count")
}
' "$page" || { echo "FAIL: $name: examples badly marked"; exit 1; }

count=$(cat "$work/count")
[ "$count" -gt 0 ] || { echo "FAIL: no example in $name"; exit 1; }
failed=0
i=1
while [ "$i" -le "$count" ]; do
	d=$work/$i
	line=$(cat "$d/line")
	file=prog.tj cmd=run
	set --
	envs=
	for w in $(cat "$d/info"); do
		case $w in
		*.tj) file=$w ;;
		explain) cmd=explain ;;
		--*) set -- "$@" "$w" ;;
		*=*) envs="$envs $w" ;;
		*) echo "FAIL: $name:$line: unknown word '$w' after tj"; failed=$((failed + 1)); i=$((i + 1)); continue 2 ;;
		esac
	done
	mkdir -p "$d/run"
	cp "$d/prog" "$d/run/$file"
	(
		cd "$d/run" || exit 99
		# shellcheck disable=SC2086
		env -u TJIT_LOGS -u TJIT_DB -u TJIT_INJECT_BUG TJIT_CACHE_DIR="$work/cache" $envs \
			$tmo "$tjit" "$cmd" --no-db "$@" "$file" >../stdout 2>../stderr
		echo $? >../status
	)
	cat "$d/stdout" "$d/stderr" >"$d/actual"
	status=$(cat "$d/status")
	want=$(cat "$d/exit")
	if ! diff -u "$d/expected" "$d/actual" >"$d/diff"; then
		echo "FAIL: $name:$line: the example prints something else (- the page, + tjit):"
		sed 1,2d "$d/diff"
		failed=$((failed + 1))
	elif [ "$status" != "$want" ]; then
		echo "FAIL: $name:$line: exit status $status, the page says $want"
		failed=$((failed + 1))
	fi
	i=$((i + 1))
done
if [ "$failed" -ne 0 ]; then
	echo "FAIL: $failed of $count examples of $name"
	exit 1
fi
echo "PASS: the $count examples of $name print what the page says"
