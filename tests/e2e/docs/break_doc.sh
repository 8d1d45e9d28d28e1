#!/bin/sh
# tests/e2e/docs/break_doc.sh - doc/graph-breaks.md is what
# `tjit --list-break-codes` prints from core/base/breaks.def: fails when the
# table changed and the page was not regenerated (`make update-break-doc`).
# Environment: TJIT (default ./tjit), TJ_SRCDIR (the top source folder;
# default: three levels above this script).
set -u
top=${TJ_SRCDIR:-$(cd "$(dirname "$0")/../../.." && pwd)}
tjit=${TJIT:-./tjit}
[ -x "$tjit" ] || { echo "break_doc.sh: no tjit binary at $tjit (set TJIT)" >&2; exit 99; }
out=$(mktemp "${TMPDIR:-/tmp}/break_doc.XXXXXX") || exit 99
trap 'rm -f "$out"' EXIT
"$tjit" --list-break-codes >"$out" || { echo "FAIL: tjit --list-break-codes failed"; exit 1; }
if ! diff -u "$top/doc/graph-breaks.md" "$out"; then
	echo "FAIL: doc/graph-breaks.md is out of date: run make update-break-doc"
	exit 1
fi
echo "PASS: doc/graph-breaks.md is up to date"
