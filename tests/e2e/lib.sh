# tests/e2e/lib.sh - what the tools' check scripts share (sourced by
# tests/e2e/{profile,dot,tui,minify}/*.sh and tests/e2e/db/*.sh): finding
# the tools, counting checks, and comparing files, texts and exit
# statuses. The caller sets top (the source tree),
# work (its scratch folder) and update (1 under --update).

pass=0
fail=0

# find_tools SCRIPT: $tjit (made absolute) from TJIT, and $prof, $dot,
# $tui: tjit-profile, tjit-dot, tjit-tui beside it unless TJIT_PROFILE,
# TJIT_DOT, TJIT_TUI say where; exits 99 when one is not there
find_tools() {
	tjit=${TJIT:-./tjit}
	case $tjit in /*) ;; *) tjit=$(pwd)/$tjit ;; esac
	prof=${TJIT_PROFILE:-$(dirname "$tjit")/tjit-profile}
	dot=${TJIT_DOT:-$(dirname "$tjit")/tjit-dot}
	tui=${TJIT_TUI:-$(dirname "$tjit")/tjit-tui}
	for t in "$tjit" "$prof" "$dot" "$tui"; do
		[ -x "$t" ] || { echo "$1: no binary at $t (set TJIT...)" >&2; exit 99; }
	done
}
# find_minify SCRIPT: $tjit (made absolute) from TJIT and $minify,
# tjit-minify beside it unless TJIT_MINIFY says where; exits 99 when one
# is not there
find_minify() {
	tjit=${TJIT:-./tjit}
	case $tjit in /*) ;; *) tjit=$(pwd)/$tjit ;; esac
	minify=${TJIT_MINIFY:-$(dirname "$tjit")/tjit-minify}
	case $minify in /*) ;; *) minify=$(pwd)/$minify ;; esac
	for t in "$tjit" "$minify"; do
		[ -x "$t" ] || { echo "$1: no binary at $t (set TJIT, TJIT_MINIFY)" >&2; exit 99; }
	done
}
ok() { pass=$((pass + 1)); }
bad() {
	fail=$((fail + 1))
	printf 'FAIL: %s\n' "$*"
}

# compare NAME EXPECTED_FILE ACTUAL_FILE (--update rewrites an expected
# file of the source tree, never a scratch one)
compare() {
	if [ "${update:-0}" -eq 1 ] && [ "${2#"$top"/}" != "$2" ]; then
		cmp -s "$2" "$3" 2>/dev/null || { cp "$3" "$2"; echo "UPDATED: $2"; }
		ok
	elif cmp -s "$2" "$3"; then
		ok
	else
		bad "$1"
		diff -u --label "$2 (expected)" --label "$1 (got)" "$2" "$3" | sed 's/^/    /'
	fi
}

# expect STATUS NAME COMMAND...: runs it, stdout in $work/out, stderr in $work/err
expect() {
	e_want=$1
	e_name=$2
	shift 2
	"$@" >"$work/out" 2>"$work/err" </dev/null
	e_st=$?
	if [ "$e_st" -eq "$e_want" ]; then
		ok
	else
		bad "$e_name: exit status $e_st, expected $e_want"
		sed 's/^/    stderr: /' "$work/err"
	fi
}

# same NAME EXPECTED_TEXT FILE: the file is exactly the text (and a newline)
same() {
	printf '%s\n' "$2" >"$work/want"
	if cmp -s "$work/want" "$3"; then
		ok
	else
		bad "$1"
		diff -u --label expected --label got "$work/want" "$3" | sed 's/^/    /'
	fi
}

# empty NAME FILE
empty() {
	if [ -s "$2" ]; then bad "$1: not empty"; sed 's/^/    /' "$2"; else ok; fi
}
