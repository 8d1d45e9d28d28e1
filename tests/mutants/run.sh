#!/bin/sh
# tests/mutants/run.sh - plants each bug of tests/mutants/mutants.txt in a
# copy of the tree, one at a time, and runs the tests on it: a bug that no
# test catches is a gap in the suite (doc/testing.md, "Mutation checks").
#
# Usage: tests/mutants/run.sh [--list] [NAME...]
#   NAME     only the mutants whose name starts with NAME (A01, I, ...)
#   --list   print the mutants' names and titles, run nothing
# Environment: MUTANT_TESTS, the tests each mutant runs (default: every
# unit test, tests/e2e/run.sh, tests/fuzz/tjdiff, and the database's
# (check.sh and bad_files.sh), the profiler's and tjit-dot's scripts; the
# slow ones, such as kill.sh and the
# minifier's matrix, are left out); MUTANT_JOBS (make's
# -j, default 2); MUTANT_DIR (the copy, default a fresh temporary folder,
# removed at the end).
# Exit status: 0 when every mutant was caught, 1 when one survived, 2 when
# a mutant no longer applies (its text is gone from the file) or the copy
# did not build.
set -u

top=$(cd "$(dirname "$0")/../.." && pwd) || exit 2
list=$top/tests/mutants/mutants.txt
jobs=${MUTANT_JOBS:-2}

# the mutants, one "name<TAB>title<TAB>file<TAB>old<TAB>new" line each
records() {
	awk '
	/^#/ || /^[ \t]*$/ { if (name != "") flush(); next }
	/^name: / { if (name != "") flush(); split(substr($0, 7), p, " "); name = p[1]; title = substr($0, 8 + length(name)); next }
	/^file: / { file = substr($0, 7); next }
	/^old: / { old = substr($0, 6); next }
	/^new: / { new = substr($0, 6); hasnew = 1; next }
	{ printf "%s: line %d not understood\n", FILENAME, NR > "/dev/stderr"; bad = 1 }
	function flush() {
		if (file == "" || old == "" || !hasnew) { printf "%s: mutant %s is incomplete\n", FILENAME, name > "/dev/stderr"; bad = 1 }
		printf "%s\t%s\t%s\t%s\t%s\n", name, title, file, old, new
		name = title = file = old = new = ""; hasnew = 0
	}
	END { if (name != "") flush(); exit bad }' "$list"
}

wanted() {
	[ $# -eq 1 ] && return 0
	n=$1; shift
	for p in "$@"; do case $n in "$p"*) return 0 ;; esac; done
	return 1
}

if [ "${1-}" = --list ]; then
	shift
	records | while IFS='	' read -r name title file old new; do
		wanted "$name" ${1+"$@"} && printf '%-5s %s (%s)\n' "$name" "$title" "$file"
	done
	exit 0
fi
tsv=$(records) || exit 2

work=${MUTANT_DIR:-}
if [ -z "$work" ]; then
	work=$(mktemp -d "${TMPDIR:-/tmp}/tjit-mutants.XXXXXX") || exit 2
	trap 'rm -rf "$work"' EXIT
fi
trap 'exit 130' INT TERM
echo "mutants: building a copy of the tree in $work"
git -C "$top" ls-files -z | (cd "$top" && xargs -0 tar cf -) | (cd "$work" && tar xf -) || exit 2
( cd "$work" && ./autogen.sh && ./configure && make -j"$jobs" && make -j"$jobs" check TESTS= ) \
	>"$work/build.log" 2>&1 || { echo "mutants: the copy did not build (see $work/build.log)"; exit 2; }
tests=${MUTANT_TESTS:-"$(cd "$work" && make -s print-unit-tests) tests/e2e/run.sh tests/fuzz/tjdiff tests/e2e/db/check.sh tests/e2e/db/bad_files.sh tests/e2e/profile/check.sh tests/e2e/dot/check.sh"}

# $o and $n: OLD and NEW with their \n and \t made characters
unescape='my ($o, $n) = map { my $s = $_; $s =~ s/\\n/\n/g; $s =~ s/\\t/\t/g; $s } ($ENV{OLD}, $ENV{NEW} // "");'
caught=0 survived=0 stale=0
printf '%s\n' "$tsv" >"$work/mutants.tsv"
while IFS='	' read -r name title file old new; do
	wanted "$name" ${1+"$@"} || continue
	f=$work/$file
	n=$(OLD=$old perl -0ne "$unescape"' $n = () = /\Q$o\E/g; print $n' "$f" 2>/dev/null)
	if [ "$n" != 1 ]; then
		echo "STALE    $name $title: the text occurs ${n:-0} times in $file"
		stale=$((stale + 1))
		continue
	fi
	cp "$f" "$work/orig"
	OLD=$old NEW=$new perl -0pi -e "$unescape"' s/\Q$o\E/$n/' "$f"
	# no kernel cached for the last mutant, no failure of its left over
	rm -rf "$work/tests/kernel-cache" "$work/test-suite.log"
	if (cd "$work" && make -j"$jobs" check TESTS="$tests") >"$work/$name.log" 2>&1; then
		echo "SURVIVED $name $title"
		survived=$((survived + 1))
	else
		failed=$(grep -h '^FAIL: ' "$work/test-suite.log" 2>/dev/null | sed 's/^FAIL: //; s/ (--[^)]*)$//' | sort -u | head -4 | tr '\n' ' ')
		echo "caught   $name $title: ${failed:-the build failed}"
		caught=$((caught + 1))
	fi
	cp "$work/orig" "$f"
done <"$work/mutants.tsv"
echo "mutants: $caught caught, $survived survived, $stale stale"
[ "$stale" -gt 0 ] && exit 2
[ "$survived" -gt 0 ] && exit 1
exit 0
