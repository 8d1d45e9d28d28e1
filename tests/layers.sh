#!/bin/sh
# tests/layers.sh - the files of core/ only include and call down the layers.
#
# core/LAYERS lists the layers bottom to top; a file's layer is the folder
# of core/ it sits in (core/lang/vm.c is in lang). Fails, naming the file,
# the line and the header, when a file includes a header of a layer above
# its own, when a file of core/ is in no layer, or when two layers have a
# header of the same name (the -I flags would pick one). Headers that are
# not in core/ (db.h, config.h, the system's) are not checked.
#
# With the core library built (its objects in TJ_BUILDDIR/core), it also
# fails when an object calls or reads a symbol defined in a layer above
# its own, and when an object of a shared object that tjit opens at run
# time (core/codegen/libtjcodegen.so: automake names its objects
# libNAME_so-FILE.o) uses a symbol of any other file of core/: the shared
# object links no core code.
#
# Environment: TJ_SRCDIR (the top source folder; default: the folder above
# this script), TJ_BUILDDIR (default: the current folder).
set -u
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
top=${TJ_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
build=${TJ_BUILDDIR:-.}
[ -f "$top/core/LAYERS" ] || { echo "layers.sh: no core/LAYERS under $top (set TJ_SRCDIR)" >&2; exit 99; }

syms=$(mktemp "${TMPDIR:-/tmp}/layers.XXXXXX") || exit 99
trap 'rm -f "$syms"' EXIT
# (objects in the layers' folders only: an in-tree build keeps stale ones
# at core/'s top level from before the move)
objs=$(cd "$build" 2>/dev/null && find core -mindepth 2 -name '*.o' 2>/dev/null | sort)
if [ -n "$objs" ]; then
	(cd "$build" && nm -A -g $objs) >"$syms" 2>/dev/null || { echo "layers.sh: nm failed" >&2; exit 99; }
else
	echo "layers.sh: no objects under $build/core: checking the includes only"
fi

cd "$top" || exit 99
find core -type f \( -name '*.c' -o -name '*.h' -o -name '*.def' \) | sort |
awk -v layers_file=core/LAYERS -v syms="$syms" '
function base(p) { sub(/.*\//, "", p); return p }
function stem(p) { p = base(p); sub(/\.[^.]*$/, "", p); return p }
function dir(p) { if (p !~ /\//) return ""; sub(/\/[^\/]*$/, "", p); return p }
# the layer of a file: the folder of core/ it sits in
function layer_of(p,   d) {
	d = dir(p)
	sub(/^core\/?/, "", d)
	sub(/\/.*/, "", d)
	return (d in rank) ? d : ""
}
function fail(msg) { print "FAIL: " msg; failed++ }
BEGIN {
	n = 0
	while ((getline line < layers_file) > 0) {
		sub(/#.*/, "", line)
		gsub(/[ \t]/, "", line)
		if (line != "")
			rank[line] = n++
	}
	if (n == 0) { print "layers.sh: no layers in " layers_file; exit 99 }
}
{ files[++nf] = $0 }
END {
	if (n == 0)
		exit 99
	for (i = 1; i <= nf; i++) {
		f = files[i]
		if (base(f) == "LAYERS")
			continue
		L = layer_of(f)
		if (L == "") {
			fail(f ": in no layer (put it in a folder named in core/LAYERS)")
			continue
		}
		layer[f] = L
		b = base(f)
		if ((b in where) && layer_of(where[b]) != L)
			fail(f ": a header of the same name is in " where[b])
		where[b] = f
		if (!(stem(f) in by_stem) || f ~ /\.c$/)
			by_stem[stem(f)] = f
	}
	# includes
	for (i = 1; i <= nf; i++) {
		f = files[i]
		if (!(f in layer))
			continue
		ln = 0
		while ((getline line < f) > 0) {
			ln++
			if (line !~ /^[ \t]*#[ \t]*include[ \t]*"/)
				continue
			h = line
			sub(/^[^"]*"/, "", h)
			sub(/".*/, "", h)
			hp = dir(f) "/" h
			if (!(hp in layer))
				hp = where[base(h)]
			if (hp == "" || !(hp in layer))
				continue
			if (rank[layer[hp]] > rank[layer[f]])
				fail(f ":" ln ": includes " h " of layer " layer[hp] ", above its layer " layer[f])
			nincl++
		}
		close(f)
	}
	# symbols: "path/libtjcore_a-name.o: ADDR T sym" or "path/...o:  U sym"
	# (automake names an object libNAME_a-FILE.o, or libNAME_so-FILE.o
	# for a shared object built as a program)
	while ((getline line < syms) > 0) {
		split(line, w, " ")
		o = w[1]; sub(/:.*/, "", o)
		src = stem(o)
		if (src ~ /^lib[A-Za-z0-9_]*_so-/)
			in_so[substr(src, index(src, "-") + 1)] = src
		sub(/^lib[A-Za-z0-9_]*_(a|so)-/, "", src)
		nw = 0
		for (j in w) nw++
		sym = w[nw]; type = w[nw - 1]
		if (type == "U")
			uses[++nu] = src " " sym
		else if (type ~ /^[A-TV-Z]$/)
			def[sym] = src
	}
	close(syms)
	for (i = 1; i <= nu; i++) {
		split(uses[i], u, " ")
		if (!(u[2] in def) || !(u[1] in by_stem) || !(def[u[2]] in by_stem))
			continue
		fl = layer[by_stem[u[1]]]; dl = layer[by_stem[def[u[2]]]]
		ncalls++
		if ((u[1] in in_so) && !(def[u[2]] in in_so)) {
			fail(by_stem[u[1]] ": uses " u[2] " of " by_stem[def[u[2]]] ": a file of a shared object (" in_so[u[1]] ".o) links no core code")
			continue
		}
		if (rank[dl] <= rank[fl])
			continue
		fail(by_stem[u[1]] ": uses " u[2] " of " by_stem[def[u[2]]] ", layer " dl ", above its layer " fl)
	}
	if (failed) {
		print failed " include(s) or call(s) up the layers (core/LAYERS: " n " layers, bottom to top)"
		exit 1
	}
	printf "PASS: %d files in %d layers, %d includes and %d references between files stay in their layer or point down\n", nf, n, nincl, ncalls
}
' || exit

# The check must be able to fail: a tree of two layers where the lower one
# includes a header of the upper one and, when a C compiler is at hand
# ($CC, else cc), calls a function of it.
[ -n "${TJ_LAYERS_SELF_TEST:-}" ] && exit 0
tree=$(mktemp -d "${TMPDIR:-/tmp}/layers.XXXXXX") || exit 99
trap 'rm -f "$syms"; rm -rf "$tree"' EXIT
mkdir -p "$tree/core/low" "$tree/core/high"
printf 'low\nhigh\n' >"$tree/core/LAYERS"
printf '#include "high.h"\n' >"$tree/core/low/low.h"
: >"$tree/core/high/high.h"
printf 'void high_fn(void);\nvoid low_fn(void) { high_fn(); }\n' >"$tree/core/low/low.c"
printf 'void high_fn(void) {}\n' >"$tree/core/high/high.c"
printf 'void low_fn(void);\nvoid shared_fn(void) { low_fn(); }\n' >"$tree/core/high/shared.c"
calls=
if (cd "$tree" && ${CC:-cc} -c -o core/low/low.o core/low/low.c &&
	${CC:-cc} -c -o core/high/high.o core/high/high.c &&
	${CC:-cc} -c -o core/high/libx_so-shared.o core/high/shared.c) >/dev/null 2>&1; then
	calls=1
else
	echo "layers.sh: no C compiler: the self-test checks includes only"
fi
got=$(TJ_LAYERS_SELF_TEST=1 TJ_SRCDIR="$tree" TJ_BUILDDIR="$tree" sh "$self")
case $got in
*"FAIL: core/low/low.h:1: includes high.h of layer high, above its layer low"*) ;;
*) echo "FAIL: an include up the layers went unnoticed: $got"; exit 1 ;;
esac
[ -z "$calls" ] && exit 0
case $got in
*"FAIL: core/low/low.c: uses high_fn of core/high/high.c, layer high, above its layer low"*) ;;
*) echo "FAIL: a call up the layers went unnoticed: $got"; exit 1 ;;
esac
case $got in
*"FAIL: core/high/shared.c: uses low_fn of core/low/low.c: a file of a shared object (libx_so-shared.o) links no core code"*) ;;
*) echo "FAIL: a shared object using the core went unnoticed: $got"; exit 1 ;;
esac
