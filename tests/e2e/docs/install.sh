#!/bin/sh
# tests/e2e/docs/install.sh - `make install` installs every page of doc/ and
# every man page of man/: each doc/*.md is in dist_doc_DATA and each
# man/*.1 in dist_man_MANS of Makefile.am, so that a page added later is not
# left out of the installed documentation.
# Environment: TJ_SRCDIR (the top source folder; default: three levels above
# this script).
set -u
top=${TJ_SRCDIR:-$(cd "$(dirname "$0")/../../.." && pwd)}
mk=$top/Makefile.am
[ -r "$mk" ] || { echo "install.sh: cannot read $mk" >&2; exit 99; }

# the files a variable lists, across its `=` and `+=` lines and their
# continuations
listed() {
	awk -v var="$1" '
	{ line = $0 }
	cont || line ~ "^" var "[ \t]*[+]?=" {
		sub("^" var "[ \t]*[+]?=", "", line)
		cont = (line ~ /\\$/)
		sub(/\\$/, "", line)
		n = split(line, w, /[ \t]+/)
		for (i = 1; i <= n; i++) if (w[i] != "") print w[i]
		next
	}
	' "$mk"
}

docs=$(listed dist_doc_DATA)
mans=$(listed dist_man_MANS)
failed=0 count=0
for f in "$top"/doc/*.md "$top"/man/*.1; do
	[ -e "$f" ] || continue
	rel=${f#"$top"/}
	count=$((count + 1))
	case $rel in
	doc/*) list=$docs var=dist_doc_DATA ;;
	*) list=$mans var=dist_man_MANS ;;
	esac
	if ! printf '%s\n' "$list" | grep -qxF "$rel"; then
		echo "FAIL: $rel is not installed: add it to $var in Makefile.am"
		failed=$((failed + 1))
	fi
done
[ "$count" -gt 0 ] || { echo "FAIL: no page found under $top/doc and $top/man"; exit 1; }
[ "$failed" -eq 0 ] || exit 1
echo "PASS: make install installs the $count pages of doc/ and man/"
