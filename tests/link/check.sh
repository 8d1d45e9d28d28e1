#!/bin/sh
# tests/link/check.sh - the tools that only read the database link no
# compiler: tjit-tui and tjit-dot must define no symbol of the VM, the
# values, tensors and their kernels, BLAS, autograd, the tracer, the graph
# IR, guards, the frame evaluator, the backends or the compile log
# (ARCHITECTURE.md: viz/ and tui/ read the database, never the core's
# memory). A tool that links core/libtjcore.a for one function drags those
# in, and this fails, naming the symbols.
#
# As a control, tjit (which runs programs) must show vm_new: otherwise nm
# cannot see the symbols (a stripped binary) and the check proves nothing.
#
# Then no tool links libLLVM (its load costs every start about 17 ms),
# nor, outside a sanitizer build, the code generator's shared object: only
# that object links libLLVM, and tjit opens it on the first inductor
# compile (doc/codegen.md); as a control, that object must need libLLVM.
# Skipped without readelf.
# Environment: TJIT, TJIT_PROFILE, TJIT_TUI, TJIT_DOT (default: ./tjit,
# ./tjit-profile, ./tjit-tui, ./tjit-dot), CODEGEN_SO (default: beside
# tjit, core/codegen/libtjcodegen.so), NM (default nm), READELF (default
# readelf).
set -u
nm=${NM:-nm}
tjit=${TJIT:-./tjit}
# the modules of core/libtjcore.a, by their prefixes
core='vm|val|obj|str|tuple|list|func|bound|iter|range|slice|cell|tensor|strided|ops|blas|cblas|autograd|rng|trace|tracer|graph|guards|frame_eval|compiled_fn|compile|compile_log|explain|backend|builtins|lexer|parser|ast|code|run_program|run_load'
pattern="^($core)(_|\$)"

symbols() { # the symbols a binary defines, one a line
	"$nm" --defined-only "$1" 2>/dev/null | awk 'NF == 3 && $2 ~ /[A-Z]/ { print $3 }'
}

command -v "$nm" >/dev/null 2>&1 || { echo "check.sh: no $nm" >&2; exit 99; }
[ -x "$tjit" ] || { echo "check.sh: no tjit binary at $tjit (set TJIT)" >&2; exit 99; }
if ! symbols "$tjit" | grep -qx vm_new; then
	echo "FAIL: $nm shows no vm_new in $tjit: its symbols cannot be read"
	exit 1
fi

status=0
for tool in "${TJIT_TUI:-./tjit-tui}" "${TJIT_DOT:-./tjit-dot}"; do
	[ -x "$tool" ] || { echo "check.sh: no binary at $tool" >&2; exit 99; }
	found=$(symbols "$tool" | grep -E "$pattern")
	if [ -n "$found" ]; then
		echo "FAIL: $(basename "$tool") links the compiler's modules:"
		echo "$found" | sort | head -20 | sed 's/^/  /'
		status=1
	else
		echo "PASS: $(basename "$tool") links no VM, tensor, tracer or compile-log module"
	fi
done

readelf=${READELF:-readelf}
if ! command -v "$readelf" >/dev/null 2>&1; then
	echo "SKIP: no $readelf: the libLLVM check"
	exit $status
fi
needs_llvm() { "$readelf" -d "$1" 2>/dev/null | grep 'NEEDED' | grep -q 'libLLVM'; }
# nor the code generator itself, which needs it, except in a sanitizer
# build, which links it into every program on purpose (doc/testing.md:
# LeakSanitizer and libraries dlopen'ed after threads start)
needs_codegen() { "$readelf" -d "$1" 2>/dev/null | grep 'NEEDED' | grep -q 'libtjcodegen'; }
sanitized=0
"$nm" "$tjit" 2>/dev/null | grep -q ' __asan_init$' && sanitized=1
so=${CODEGEN_SO:-$(dirname "$tjit")/core/codegen/libtjcodegen.so}
[ -f "$so" ] || { echo "check.sh: no code generator at $so (set CODEGEN_SO)" >&2; exit 99; }
if ! needs_llvm "$so"; then
	echo "FAIL: $readelf shows no libLLVM needed by $so: the check proves nothing"
	exit 1
fi
for tool in "$tjit" "${TJIT_PROFILE:-./tjit-profile}" "${TJIT_TUI:-./tjit-tui}" "${TJIT_DOT:-./tjit-dot}"; do
	[ -x "$tool" ] || { echo "check.sh: no binary at $tool" >&2; exit 99; }
	if needs_llvm "$tool"; then
		echo "FAIL: $(basename "$tool") links libLLVM: only $(basename "$so") may"
		status=1
	elif [ $sanitized = 0 ] && needs_codegen "$tool"; then
		echo "FAIL: $(basename "$tool") links $(basename "$so"), and so libLLVM: it must open it on first use"
		status=1
	else
		echo "PASS: $(basename "$tool") does not link libLLVM"
	fi
done
exit $status
