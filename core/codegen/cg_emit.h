/* cg_emit.h - inside libtjcodegen.so: the LLVM IR of one loop IR kernel
 * (cg_emit.c), the inline math it uses (cg_math.c), and the order of its
 * loops' instructions (cg_schedule.c). */
#ifndef TJ_CG_EMIT_H
#define TJ_CG_EMIT_H

#include <stdbool.h>

#include <llvm-c/Core.h>

#include "loopir.h"

/* Adds to mod (in its context) the function k->name with the signature of
 * loop_kernel_fn, built with the IR builder (never IR text), and an
 * internal always-inline body whose buffer pointers are noalias. 0, or -1
 * with a malloc'd message in *err naming the kernel and the node (an op
 * and dtype it does not support, a malformed kernel); never aborts. */
int cg_emit_kernel(LLVMModuleRef mod, const struct lkernel *k, char **err);

/* A call of the overloaded intrinsic name ("llvm.fabs") on args, typed
 * by args[0]; NULL when LLVM does not know it. */
LLVMValueRef cg_math_intrinsic(LLVMBuilderRef b, LLVMModuleRef mod, const char *name, LLVMValueRef *args, int n);

/* Whether in is a call of a function whose name starts with prefix
 * ("llvm.fmuladd.": the intrinsic at any type); false for anything else. */
bool cg_calls(LLVMValueRef in, const char *prefix);

/* Whether d is sigmoid's denominator 1 + p 2^n as cg_math_unary builds
 * it (one FMA of p, 2^n and 1): then its p and 2^n. */
bool cg_math_sigmoid_denominator(LLVMValueRef d, LLVMValueRef *p, LLVMValueRef *pow2n);

/* The value of a float-only unary op (exp, log, sqrt, rsqrt, sin, cos,
 * tanh, sigmoid, gelu, silu, reciprocal) on x, a float or double, emitted
 * as inline arithmetic that vectorizes (doc/codegen-math.md gives each
 * approximation and its error); NULL for any other op. The costly ones
 * are loop_unop_is_transcendental's (loopir.h). */
LLVMValueRef cg_math_unary(LLVMBuilderRef b, LLVMModuleRef mod, unop op, LLVMValueRef x);

/* After optimizing, on a host of 16 vector registers: each use of a
 * polynomial's coefficient (a load of a global, cg_math.c's kc, hoisted
 * out of the loops and splatted once) in another block loads it again
 * just before it, and float vector constants are loaded from globals in
 * the blocks that use them, so that instructions take them from memory
 * rather than from registers kept, or spilled, across the loop. 0, or
 * -1 when out of memory (the module is still valid). */
int cg_math_coefficients_in_memory(LLVMModuleRef mod);

/* Whether g is one of the constants' globals (tjc.*) that nothing
 * writes: a constant, or the module's own global that only loads use
 * (IR text from elsewhere may name a global so and store to it).
 * cg_math_coefficients_in_memory and cg_schedule_loops move loads of
 * such a global, and only of such a one. */
bool cg_math_unwritten_global(LLVMValueRef g);

/* After optimizing (cg_schedule.c): the instructions of each block that
 * loops on itself (a vector body, an innermost loop) sorted by their
 * height, the longest path of latencies from each to the block's end,
 * highest first, so that an iteration's longest chain starts first. A
 * block that calls out, or holds an atomic or volatile access, keeps its
 * order; a store stays after the loads and stores before it. 0, or -1
 * when out of memory (the module is still valid). */
int cg_schedule_loops(LLVMModuleRef mod);

#endif
