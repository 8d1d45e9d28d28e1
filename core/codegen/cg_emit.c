/* cg_emit.c - the LLVM IR of one loop IR kernel, through the LLVM-C
 * builder.
 *
 * The kernel becomes two functions: `k_<hash>(bufs, syms, begin, end)`,
 * the loop_kernel_fn the caller runs, loads the buffer pointers and calls
 * the internal, always-inline `k_<hash>.body`, which takes each buffer as
 * a noalias parameter (the caller guarantees that distinct buffers do not
 * overlap); after inlining LLVM keeps that as alias scopes, so loops
 * vectorize without run-time overlap checks.
 *
 * Loops: every loop is guarded and bottom-tested:
 *
 *   cur:    br (start < end), ph, after
 *   ph:     br head                  (the loop's hoisting block)
 *   head:   i = phi [start, ph], [i + 1, latch]; body ...
 *   latch:  br (i + 1 < end), head, after
 *
 * Scope depth d counts the open loops: 0 is the function, outer var j is
 * at depth j + 1, a section's inner var j at depth nouter + 1 + j. A node's
 * home is the depth of the deepest var it reads (REDUCE values: nouter,
 * where they are known after their section's loops). A node is emitted on
 * first use: where the builder is when its home is the current depth,
 * else in the hoisting block of the loop just inside its home (executed
 * only when that loop runs, so a hoisted load is never speculated). Each
 * emitted value is memoized with the depth of the loop that holds it, and
 * forgotten when that loop closes.
 *
 * Semantics are the eager kernels' (tensor_pointwise.c, tensor_reduce.c,
 * tensor.c's conversions); the transcendentals are in cg_math.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/DebugInfo.h>

#include "cg_emit.h"

#define HOME_UNSET (-2)
#define HOME_BUSY (-3)

struct emit {
	const struct lkernel *k;
	LLVMContextRef cx;
	LLVMModuleRef mod;
	LLVMBuilderRef b;
	LLVMTypeRef t1, t8, t64, tf, td, tp;
	LLVMValueRef body;       /* the inner function */
	LLVMBasicBlockRef entry; /* allocas */
	LLVMValueRef *bufp;      /* the buffers' pointers (parameters) */
	LLVMValueRef syms, begin, end;
	LLVMValueRef *val;       /* memoized values of nodes */
	int *memo;               /* depth whose loop holds val[r], -1: none */
	int *home;               /* home depth of a node, HOME_UNSET until known */
	LLVMValueRef *acc, *acc_idx; /* REDUCE roots' accumulators (allocas) */
	int8_t *reads_load;      /* per node: 0 not known yet, 1 no, 2 it reads a buffer */
	bool checks;             /* the kernel checks its data (data_checked) */
	LLVMValueRef check_acc;  /* an i1 alloca: a check failed */
	LLVMValueRef check_out;  /* the body's last parameter: the int32 the wrapper finds at bufs[nbufs] */
	int depth;
	int var_depth[LOOP_MAX_VARS]; /* -1 while the var's loop is not open */
	LLVMValueRef var_val[LOOP_MAX_VARS];
	LLVMValueRef size[LOOP_MAX_VARS];
	LLVMBasicBlockRef hoist[LOOP_MAX_VARS + 2]; /* hoist[d]: the ph block of the loop at depth d */
	int heavy[LOOP_MAX_VARS + 2]; /* transcendentals emitted into each open loop's body */
	char **err;
	bool failed;
};

/* one open loop */
struct loop {
	LLVMValueRef iv, end;
	LLVMBasicBlockRef head, after;
};

/* the op names for messages (the object links no core symbol: not tensor.c's tables) */
#define X(n) #n,
static const char *const un_names[UNOP_COUNT] = {TENSOR_UNARY_OPS(X)};
static const char *const bin_names[BINOP_COUNT] = {TENSOR_BINARY_OPS(X)};
static const char *const red_names[REDOP_COUNT] = {TENSOR_REDUCE_OPS(X)};
#undef X
static const char *const lop_names[LOP_COUNT] = {"const", "var", "sym", "load", "unary", "binary",
						 "where", "cast", "reduce", "store"};

/* the first error wins; later ones (consequences) are dropped */
__attribute__((format(printf, 3, 4))) static LLVMValueRef fail(struct emit *e, lref r, const char *fmt, ...)
{
	if (e->failed)
		return NULL;
	e->failed = true;
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (!e->err)
		return NULL;
	char *s = malloc(strlen(msg) + 80);
	if (s) {
		if (r >= 0 && r < e->k->nnodes)
			sprintf(s, "kernel %s: node %d (%s): %s", e->k->name, (int)r,
				e->k->nodes[r].op < LOP_COUNT ? lop_names[e->k->nodes[r].op] : "?", msg);
		else
			sprintf(s, "kernel %s: %s", e->k->name, msg);
	}
	*e->err = s;
	return NULL;
}

static LLVMTypeRef reg_type(struct emit *e, int dt)
{
	switch (dt) {
	case DT_BOOL: return e->t1;
	case DT_INT64: return e->t64;
	case DT_FLOAT32: return e->tf;
	default: return e->td;
	}
}

static LLVMTypeRef mem_type(struct emit *e, int dt)
{
	return dt == DT_BOOL ? e->t8 : reg_type(e, dt);
}

static LLVMValueRef ci(struct emit *e, int64_t v)
{
	return LLVMConstInt(e->t64, (unsigned long long)v, 1);
}

static LLVMValueRef cfl(LLVMTypeRef t, double v)
{
	return LLVMConstReal(t, v);
}

/* ---- node homes ---- */

static int node_home(struct emit *e, lref r);

static int operand_home(struct emit *e, lref r, lref a, int h)
{
	if (a < 0)
		return h;
	int ha = node_home(e, a);
	if (ha < 0)
		return ha;
	return ha > h ? ha : h;
}

static int node_home(struct emit *e, lref r)
{
	const struct lkernel *k = e->k;
	if (r < 0 || r >= k->nnodes) {
		fail(e, -1, "node %d out of range", (int)r);
		return -1;
	}
	if (e->home[r] == HOME_BUSY) {
		fail(e, r, "the node depends on itself");
		return -1;
	}
	if (e->home[r] != HOME_UNSET)
		return e->home[r];
	const struct lnode *n = &k->nodes[r];
	int h = 0;
	switch (n->op) {
	case LOP_CONST:
	case LOP_SYM:
		break;
	case LOP_VAR:
		if (n->var < 0 || n->var >= k->nvars) {
			fail(e, r, "var %d out of range", n->var);
			return -1;
		}
		h = k->vars[n->var].section < 0 ? n->var + 1 : -1; /* inner vars: known when open */
		if (h < 0) {
			const struct lsection *s = &k->sections[k->vars[n->var].section];
			for (int j = 0; j < s->ninner; j++)
				if (s->inner[j] == n->var)
					h = k->nouter + 1 + j;
			if (h < 0) {
				fail(e, r, "var %d is in no loop of its section", n->var);
				return -1;
			}
		}
		break;
	case LOP_REDUCE:
		h = k->nouter;
		break;
	default:
		e->home[r] = HOME_BUSY;
		for (int i = 0; i < 3 && h >= 0; i++)
			h = operand_home(e, r, n->a[i], h);
		if (h < 0)
			return -1;
		break;
	}
	e->home[r] = h;
	return h;
}

/* ---- builder position: either the end of the current block, or just
 * before the terminator of a hoisting block ---- */

static void position_in(struct emit *e, LLVMBasicBlockRef bb)
{
	LLVMValueRef t = LLVMGetBasicBlockTerminator(bb);
	if (t)
		LLVMPositionBuilderBefore(e->b, t);
	else
		LLVMPositionBuilderAtEnd(e->b, bb);
}

/* ---- scalar ops ---- */

static LLVMValueRef node_value(struct emit *e, lref r);

static LLVMValueRef icmp(struct emit *e, LLVMIntPredicate p, LLVMValueRef a, LLVMValueRef b)
{
	return LLVMBuildICmp(e->b, p, a, b, "");
}

static LLVMValueRef fcmp(struct emit *e, LLVMRealPredicate p, LLVMValueRef a, LLVMValueRef b)
{
	return LLVMBuildFCmp(e->b, p, a, b, "");
}

static LLVMValueRef sel(struct emit *e, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b)
{
	return LLVMBuildSelect(e->b, c, a, b, "");
}

static LLVMValueRef intrinsic1(struct emit *e, const char *name, LLVMValueRef x)
{
	return cg_math_intrinsic(e->b, e->mod, name, &x, 1);
}

/* a -> dt with tensor.c's conversions: float -> int64 truncates, NaN and
 * out-of-range give INT64_MIN (as x86, without undefined behaviour);
 * -> bool is != 0 (NaN is true) */
static LLVMValueRef convert(struct emit *e, LLVMValueRef v, int from, int to)
{
	LLVMBuilderRef b = e->b;
	if (from == to)
		return v;
	LLVMTypeRef t = reg_type(e, to);
	if (to == DT_BOOL)
		return dtype_is_float(from) ? fcmp(e, LLVMRealUNE, v, cfl(reg_type(e, from), 0))
					    : icmp(e, LLVMIntNE, v, LLVMConstNull(reg_type(e, from)));
	if (from == DT_BOOL)
		return to == DT_INT64 ? LLVMBuildZExt(b, v, t, "") : LLVMBuildUIToFP(b, v, t, "");
	if (from == DT_INT64)
		return LLVMBuildSIToFP(b, v, t, "");
	if (to == DT_INT64) {
		LLVMTypeRef ft = reg_type(e, from);
		LLVMValueRef ok = LLVMBuildAnd(b, fcmp(e, LLVMRealOGE, v, cfl(ft, -9223372036854775808.0)),
					       fcmp(e, LLVMRealOLT, v, cfl(ft, 9223372036854775808.0)), "");
		return sel(e, ok, LLVMBuildFPToSI(b, v, t, ""), ci(e, INT64_MIN));
	}
	return to == DT_FLOAT64 ? LLVMBuildFPExt(b, v, t, "") : LLVMBuildFPTrunc(b, v, t, "");
}

static LLVMValueRef emit_unary(struct emit *e, lref r, const struct lnode *n, LLVMValueRef v)
{
	LLVMBuilderRef b = e->b;
	int dt = n->dt, op = n->sub;
	if (op == UNOP_logical_not) {
		int from = e->k->nodes[n->a[0]].dt;
		if (from == DT_BOOL)
			return LLVMBuildNot(b, v, "");
		return dtype_is_float(from) ? fcmp(e, LLVMRealOEQ, v, cfl(reg_type(e, from), 0))
					    : icmp(e, LLVMIntEQ, v, ci(e, 0));
	}
	if (e->k->nodes[n->a[0]].dt != dt)
		return fail(e, r, "unary %s of %s into %s", op < UNOP_COUNT ? un_names[op] : "?",
			    dtype_name(e->k->nodes[n->a[0]].dt), dtype_name(dt));
	if (dtype_is_float(dt)) {
		LLVMTypeRef t = reg_type(e, dt);
		switch (op) {
		case UNOP_neg: return LLVMBuildFNeg(b, v, "");
		case UNOP_abs: return intrinsic1(e, "llvm.fabs", v);
		case UNOP_relu: /* eager's (v > 0 || v != v) ? v : 0: NaN stays, -0
				 * gives +0; a compare and an and on x86, where
				 * max(0, v + 0) put an addition on the chain */
			return sel(e, fcmp(e, LLVMRealOLE, v, cfl(t, 0)), cfl(t, 0), v);
		case UNOP_sign: /* NaN gives 0, as eager */
			return sel(e, fcmp(e, LLVMRealOGT, v, cfl(t, 0)), cfl(t, 1),
				   sel(e, fcmp(e, LLVMRealOLT, v, cfl(t, 0)), cfl(t, -1), cfl(t, 0)));
		case UNOP_floor: return intrinsic1(e, "llvm.floor", v);
		case UNOP_ceil: return intrinsic1(e, "llvm.ceil", v);
		case UNOP_round: return intrinsic1(e, "llvm.roundeven", v);
		default: {
			LLVMValueRef m = cg_math_unary(b, e->mod, op, v);
			if (m)
				return m;
			break;
		}
		}
	} else if (dt == DT_INT64) {
		LLVMValueRef z = ci(e, 0);
		switch (op) {
		case UNOP_neg: return LLVMBuildSub(b, z, v, "");
		case UNOP_abs: return sel(e, icmp(e, LLVMIntSLT, v, z), LLVMBuildSub(b, z, v, ""), v);
		case UNOP_relu: return sel(e, icmp(e, LLVMIntSGT, v, z), v, z);
		case UNOP_sign:
			return LLVMBuildSub(b, LLVMBuildZExt(b, icmp(e, LLVMIntSGT, v, z), e->t64, ""),
					    LLVMBuildZExt(b, icmp(e, LLVMIntSLT, v, z), e->t64, ""), "");
		case UNOP_floor:
		case UNOP_ceil:
		case UNOP_round: return v;
		default: break;
		}
	} else {
		switch (op) { /* eager copies bool for these */
		case UNOP_abs:
		case UNOP_relu:
		case UNOP_sign:
		case UNOP_floor:
		case UNOP_ceil:
		case UNOP_round: return v;
		default: break;
		}
	}
	return fail(e, r, "unary %s on %s is not supported", op < UNOP_COUNT ? un_names[op] : "?",
		    dtype_name(dt));
}

/* ---- the checks of the data ----
 * What eager refuses on the values (an integer // or % by zero, an integer
 * to a negative integer power) the kernel computes anyway, without a trap,
 * and reports: each such operation ORs its condition into check_acc, and
 * the body ends by setting *check_out to 1 when one held. The runtime
 * then reruns the frame eagerly, which raises the error where eager code
 * would (inductor_run.c). Only operands read from buffers are checked:
 * index arithmetic divides by sizes, and a constant was seen by the trace. */

static bool reads_load(struct emit *e, lref r)
{
	if (r < 0 || r >= e->k->nnodes)
		return false;
	if (!e->reads_load[r]) {
		const struct lnode *n = &e->k->nodes[r];
		bool yes = n->op == LOP_LOAD || n->op == LOP_REDUCE;
		for (int i = 0; i < 3 && !yes; i++)
			yes = n->a[i] >= 0 && n->a[i] < r && reads_load(e, n->a[i]);
		e->reads_load[r] = yes ? 2 : 1;
	}
	return e->reads_load[r] == 2;
}

/* node r is an int64 //, % or ** whose right operand comes from the data */
static bool data_checked(struct emit *e, lref r)
{
	const struct lnode *n = &e->k->nodes[r];
	if (n->op != LOP_BINARY || n->a[0] < 0 || n->a[0] >= r || n->a[1] < 0 || n->a[1] >= r ||
	    e->k->nodes[n->a[0]].dt != DT_INT64 || n->dt != DT_INT64)
		return false;
	if (n->sub != BINOP_floordiv && n->sub != BINOP_mod && n->sub != BINOP_pow)
		return false;
	return reads_load(e, n->a[1]);
}

static void check_or(struct emit *e, LLVMValueRef bad)
{
	if (!e->check_acc)
		return;
	LLVMValueRef was = LLVMBuildLoad2(e->b, e->t1, e->check_acc, "");
	LLVMBuildStore(e->b, LLVMBuildOr(e->b, was, bad, ""), e->check_acc);
}

/* Python's // and % on int64; division by zero gives 0 and, for a divisor
 * from the data, fails the kernel's check; b == -1 never overflows */
static LLVMValueRef int_divmod(struct emit *e, LLVMValueRef a, LLVMValueRef d, lref dr, bool want_mod)
{
	LLVMBuilderRef b = e->b;
	LLVMValueRef z = ci(e, 0), one = ci(e, 1), m1 = ci(e, -1);
	if (reads_load(e, dr))
		check_or(e, icmp(e, LLVMIntEQ, d, z));
	LLVMValueRef bad = LLVMBuildOr(b, icmp(e, LLVMIntEQ, d, z), icmp(e, LLVMIntEQ, d, m1), "");
	LLVMValueRef sd = sel(e, bad, one, d);
	LLVMValueRef q = LLVMBuildSDiv(b, a, sd, ""), m = LLVMBuildSRem(b, a, sd, "");
	LLVMValueRef adj = LLVMBuildAnd(b, icmp(e, LLVMIntNE, m, z),
					icmp(e, LLVMIntSLT, LLVMBuildXor(b, m, d, ""), z), "");
	if (want_mod)
		return sel(e, adj, LLVMBuildAdd(b, m, d, ""), m);
	q = sel(e, adj, LLVMBuildSub(b, q, one, ""), q);
	q = sel(e, icmp(e, LLVMIntEQ, d, m1), LLVMBuildSub(b, z, a, ""), q);
	return sel(e, icmp(e, LLVMIntEQ, d, z), z, q);
}

/* a ** b on int64 by squaring, wrapping; b < 0 from the data fails the
 * kernel's check */
static LLVMValueRef int_pow(struct emit *e, LLVMValueRef a, LLVMValueRef p, lref pr)
{
	LLVMBuilderRef b = e->b;
	int64_t c;
	int steps = 63;
	const struct lnode *pn = &e->k->nodes[pr];
	if (reads_load(e, pr))
		check_or(e, icmp(e, LLVMIntSLT, p, ci(e, 0)));
	if (pn->op == LOP_CONST && (c = pn->c.i) >= 0)
		for (steps = 0; c; c >>= 1)
			steps++;
	LLVMValueRef res = ci(e, 1), x = a;
	for (int i = 0; i < steps; i++) {
		LLVMValueRef bit = icmp(e, LLVMIntNE, LLVMBuildAnd(b, p, ci(e, 1), ""), ci(e, 0));
		res = sel(e, bit, LLVMBuildMul(b, res, x, ""), res);
		if (i + 1 < steps) {
			x = LLVMBuildMul(b, x, x, "");
			p = LLVMBuildAShr(b, p, ci(e, 1), "");
		}
	}
	return res;
}

/* Python's // and % on floats, as tensor_pointwise.c's floordiv_f/mod_f */
static LLVMValueRef float_divmod(struct emit *e, LLVMValueRef a, LLVMValueRef d, bool want_mod)
{
	LLVMBuilderRef b = e->b;
	LLVMTypeRef t = LLVMTypeOf(a);
	LLVMValueRef z = cfl(t, 0), one = cfl(t, 1);
	LLVMValueRef m = LLVMBuildFRem(b, a, d, "");
	LLVMValueRef adj = LLVMBuildAnd(b, fcmp(e, LLVMRealUNE, m, z),
					LLVMBuildXor(b, fcmp(e, LLVMRealOLT, d, z), fcmp(e, LLVMRealOLT, m, z), ""),
					"");
	if (want_mod)
		return sel(e, adj, LLVMBuildFAdd(b, m, d, ""), m);
	LLVMValueRef div = LLVMBuildFDiv(b, LLVMBuildFSub(b, a, m, ""), d, "");
	div = sel(e, adj, LLVMBuildFSub(b, div, one, ""), div);
	LLVMValueRef q = LLVMBuildFDiv(b, a, d, "");
	LLVMValueRef args[2] = {z, q};
	LLVMValueRef signed_zero = cg_math_intrinsic(b, e->mod, "llvm.copysign", args, 2);
	LLVMValueRef fl = intrinsic1(e, "llvm.floor", div);
	fl = sel(e, fcmp(e, LLVMRealOGT, LLVMBuildFSub(b, div, fl, ""), cfl(t, 0.5)), LLVMBuildFAdd(b, fl, one, ""),
		 fl);
	LLVMValueRef res = sel(e, fcmp(e, LLVMRealOEQ, div, z), signed_zero, fl);
	return sel(e, fcmp(e, LLVMRealOEQ, d, z), q, res);
}

/* NaN-propagating maximum/minimum, exactly eager's NAN_MAX/NAN_MIN */
static LLVMValueRef float_maxmin(struct emit *e, LLVMValueRef a, LLVMValueRef d, bool is_max)
{
	LLVMValueRef pick_a = fcmp(e, is_max ? LLVMRealOGT : LLVMRealOLT, a, d);
	LLVMValueRef r = sel(e, pick_a, a, d);
	r = sel(e, fcmp(e, LLVMRealUNO, d, d), d, r);
	return sel(e, fcmp(e, LLVMRealUNO, a, a), a, r);
}

static LLVMValueRef emit_cmp(struct emit *e, int op, int dt, LLVMValueRef a, LLVMValueRef d)
{
	static const LLVMRealPredicate fp[] = {LLVMRealOEQ, LLVMRealUNE, LLVMRealOLT,
					       LLVMRealOLE, LLVMRealOGT, LLVMRealOGE};
	static const LLVMIntPredicate sp[] = {LLVMIntEQ, LLVMIntNE, LLVMIntSLT, LLVMIntSLE, LLVMIntSGT, LLVMIntSGE};
	static const LLVMIntPredicate up[] = {LLVMIntEQ, LLVMIntNE, LLVMIntULT, LLVMIntULE, LLVMIntUGT, LLVMIntUGE};
	int i = op - BINOP_eq;
	if (dtype_is_float(dt))
		return fcmp(e, fp[i], a, d);
	return icmp(e, dt == DT_BOOL ? up[i] : sp[i], a, d);
}

static LLVMValueRef truth(struct emit *e, int dt, LLVMValueRef v)
{
	return dt == DT_BOOL ? v : convert(e, v, dt, DT_BOOL);
}

/* the parts of v, node r's float32 tanh or sigmoid as cg_math.c builds
 * it: tanh is x (P / Q) (*x set), sigmoid 1 / (1 + exp(-x)) (*x NULL);
 * false for any other value */
static bool math_fraction(struct emit *e, lref r, LLVMValueRef v, LLVMValueRef *x, LLVMValueRef *num,
			  LLVMValueRef *den)
{
	const struct lnode *n = &e->k->nodes[r];
	if (n->op != LOP_UNARY || n->dt != DT_FLOAT32 || (n->sub != UNOP_tanh && n->sub != UNOP_sigmoid) ||
	    !LLVMIsAInstruction(v))
		return false;
	*x = NULL;
	if (n->sub == UNOP_tanh) {
		if (LLVMGetInstructionOpcode(v) != LLVMFMul)
			return false;
		*x = LLVMGetOperand(v, 0);
		v = LLVMGetOperand(v, 1);
		if (!LLVMIsAInstruction(v))
			return false;
	}
	if (LLVMGetInstructionOpcode(v) != LLVMFDiv)
		return false;
	*num = LLVMGetOperand(v, 0);
	*den = LLVMGetOperand(v, 1);
	return true;
}

/* d1 sig, two denominators of math_fraction, sig a sigmoid's. Where it is
 * 1 + p 2^n (cg_math_sigmoid_denominator), the product is
 * fma(p, d1 2^n, d1): d1 2^n is exact (a power of two; below 2^-126 for
 * tanh's Q only where p 2^n vanishes beside 1 anyway), so it rounds once
 * where d1 (1 + p 2^n) rounds twice, and the multiplication by d1 leaves
 * the chain of exp (it waits on the 2^n and Q, ready long before p).
 * d1 2^n overflows where 2^n is inf (d1 (1 + p 2^n) is inf there too) or,
 * for two sigmoids, where d1 2^n > FLT_MAX > d1 p 2^n: the quotient is
 * then 0 where eager's product is below 1.42 / FLT_MAX, within 2^-126 */
static LLVMValueRef denominator_product(struct emit *e, LLVMValueRef d1, LLVMValueRef sig)
{
	LLVMValueRef p, pow2n;
	if (!cg_math_sigmoid_denominator(sig, &p, &pow2n))
		return LLVMBuildFMul(e->b, d1, sig, "");
	LLVMValueRef args[3] = {p, LLVMBuildFMul(e->b, d1, pow2n, ""), d1};
	return cg_math_intrinsic(e->b, e->mod, "llvm.fmuladd", args, 3);
}

/* the float32 product of a sigmoid and a tanh or sigmoid (an LSTM's
 * sigmoid(o) * tanh(c), a gated unit's) with one division instead of
 * two, which cost the FMA pipes twice what a multiplication does:
 * tanh(a) sigmoid(b) = a (P / (Q (1 + exp(-b)))), and two sigmoids
 * 1 / ((1 + exp(-a)) (1 + exp(-b))), each product of denominators one FMA
 * where it can be (denominator_product). sigmoid's denominator is at least 1,
 * so P / fl(Q (1 + exp(-b))) is at most tanh's P / Q, and the product
 * never exceeds 1 in magnitude, as each factor does not. tanh's Q is
 * below 0.83 (cg_math.c, TANH_SCALE), so Q (1 + exp(-b)) overflows only
 * where 1 + exp(-b) is inf already (sigmoid is 0 there), and two
 * sigmoids' product of denominators only where their product is below
 * 1.42 / FLT_MAX: either gives 0, within 2^-126 of eager's. Below 2^-122
 * tanh's quotient is a denormal, and a scales its rounding: up to 9 ulp
 * there (doc/codegen-math.md). The functions' own divisions stay for
 * other uses, or are dead. Two tanh are left alone. NULL when the
 * operands are not such a pair. */
static LLVMValueRef fraction_product(struct emit *e, const struct lnode *n, LLVMValueRef a, LLVMValueRef d)
{
	LLVMValueRef x1, n1, d1, x2, n2, d2;
	if (!math_fraction(e, n->a[0], a, &x1, &n1, &d1) || !math_fraction(e, n->a[1], d, &x2, &n2, &d2) ||
	    (x1 && x2))
		return NULL;
	/* a sigmoid's denominator second (x2 NULL), tanh's or the other's first */
	LLVMValueRef den = x2 ? denominator_product(e, d2, d1) : denominator_product(e, d1, d2);
	LLVMValueRef q = LLVMBuildFDiv(e->b, x1 ? n1 : n2, den, "");
	return x1 || x2 ? LLVMBuildFMul(e->b, x1 ? x1 : x2, q, "") : q;
}

static LLVMValueRef emit_binary(struct emit *e, lref r, const struct lnode *n, LLVMValueRef a, LLVMValueRef d)
{
	LLVMBuilderRef b = e->b;
	int op = n->sub, dt = e->k->nodes[n->a[0]].dt;
	if (e->k->nodes[n->a[1]].dt != dt)
		return fail(e, r, "binary %s of %s and %s", op < BINOP_COUNT ? bin_names[op] : "?",
			    dtype_name(dt), dtype_name(e->k->nodes[n->a[1]].dt));
	if (op >= BINOP_eq && op <= BINOP_ge)
		return emit_cmp(e, op, dt, a, d);
	if (op == BINOP_logical_and || op == BINOP_logical_or) {
		LLVMValueRef x = truth(e, dt, a), y = truth(e, dt, d);
		return op == BINOP_logical_and ? LLVMBuildAnd(b, x, y, "") : LLVMBuildOr(b, x, y, "");
	}
	if (n->dt != dt)
		goto unsupported;
	if (dtype_is_float(dt)) {
		switch (op) {
		case BINOP_add: return LLVMBuildFAdd(b, a, d, "");
		case BINOP_sub: return LLVMBuildFSub(b, a, d, "");
		case BINOP_mul: {
			LLVMValueRef q = fraction_product(e, n, a, d);
			return q ? q : LLVMBuildFMul(b, a, d, "");
		}
		case BINOP_div: return LLVMBuildFDiv(b, a, d, "");
		case BINOP_pow: {
			const struct lnode *pn = &e->k->nodes[n->a[1]];
			if (pn->op == LOP_CONST && pn->c.f == 2.0) /* eager's x ** 2 is x * x */
				return LLVMBuildFMul(b, a, a, "");
			LLVMValueRef args[2] = {a, d};
			return cg_math_intrinsic(b, e->mod, "llvm.pow", args, 2);
		}
		case BINOP_floordiv: return float_divmod(e, a, d, false);
		case BINOP_mod: return float_divmod(e, a, d, true);
		case BINOP_maximum: return float_maxmin(e, a, d, true);
		case BINOP_minimum: return float_maxmin(e, a, d, false);
		default: break;
		}
	} else if (dt == DT_INT64) {
		switch (op) {
		case BINOP_add: return LLVMBuildAdd(b, a, d, "");
		case BINOP_sub: return LLVMBuildSub(b, a, d, "");
		case BINOP_mul: return LLVMBuildMul(b, a, d, "");
		case BINOP_pow: return int_pow(e, a, d, n->a[1]);
		case BINOP_floordiv: return int_divmod(e, a, d, n->a[1], false);
		case BINOP_mod: return int_divmod(e, a, d, n->a[1], true);
		case BINOP_maximum: return sel(e, icmp(e, LLVMIntSGT, a, d), a, d);
		case BINOP_minimum: return sel(e, icmp(e, LLVMIntSLT, a, d), a, d);
		default: break;
		}
	} else {
		switch (op) {
		case BINOP_add:
		case BINOP_maximum: return LLVMBuildOr(b, a, d, "");
		case BINOP_mul:
		case BINOP_minimum: return LLVMBuildAnd(b, a, d, "");
		default: break;
		}
	}
unsupported:
	return fail(e, r, "binary %s on %s is not supported", op < BINOP_COUNT ? bin_names[op] : "?",
		    dtype_name(dt));
}

static LLVMValueRef buf_addr(struct emit *e, lref r, int buf, LLVMValueRef idx)
{
	if (buf < 0 || buf >= e->k->nbufs)
		return fail(e, r, "buffer %d out of range", buf);
	return LLVMBuildInBoundsGEP2(e->b, mem_type(e, e->k->bufs[buf].dt), e->bufp[buf], &idx, 1, "");
}

static LLVMValueRef emit_load(struct emit *e, lref r, const struct lnode *n, LLVMValueRef idx)
{
	LLVMValueRef p = buf_addr(e, r, n->var, idx);
	if (!p)
		return NULL;
	int dt = e->k->bufs[n->var].dt;
	if (dt != n->dt)
		return fail(e, r, "load of %s from a %s buffer", dtype_name(n->dt), dtype_name(dt));
	LLVMValueRef v = LLVMBuildLoad2(e->b, mem_type(e, dt), p, "");
	LLVMSetAlignment(v, dtype_size(dt));
	return dt == DT_BOOL ? icmp(e, LLVMIntNE, v, LLVMConstNull(e->t8)) : v;
}

static LLVMValueRef emit_const(struct emit *e, lref r, const struct lnode *n)
{
	switch (n->dt) {
	case DT_BOOL: return LLVMConstInt(e->t1, n->c.i != 0, 0);
	case DT_INT64: return ci(e, n->c.i);
	case DT_FLOAT32:
	case DT_FLOAT64: return cfl(reg_type(e, n->dt), n->dt == DT_FLOAT32 ? (double)(float)n->c.f : n->c.f);
	default: return fail(e, r, "constant of dtype %d", n->dt);
	}
}

/* the node's own instruction(s), its operands emitted */
static LLVMValueRef emit_op(struct emit *e, lref r, const struct lnode *n)
{
	LLVMValueRef a[3] = {NULL, NULL, NULL};
	int nargs = n->op == LOP_WHERE ? 3 : n->op == LOP_BINARY ? 2 : 1;
	for (int i = 0; i < nargs; i++) {
		if (n->a[i] < 0 || n->a[i] >= e->k->nnodes)
			return fail(e, r, "operand %d missing", i);
		if (!(a[i] = node_value(e, n->a[i])))
			return NULL;
	}
	switch (n->op) {
	case LOP_LOAD:
		if (e->k->nodes[n->a[0]].dt != DT_INT64)
			return fail(e, r, "index of dtype %s", dtype_name(e->k->nodes[n->a[0]].dt));
		return emit_load(e, r, n, a[0]);
	case LOP_UNARY: return emit_unary(e, r, n, a[0]);
	case LOP_BINARY: return emit_binary(e, r, n, a[0], a[1]);
	case LOP_WHERE:
		if (e->k->nodes[n->a[0]].dt != DT_BOOL || e->k->nodes[n->a[1]].dt != n->dt ||
		    e->k->nodes[n->a[2]].dt != n->dt)
			return fail(e, r, "where of mismatched dtypes");
		return sel(e, a[0], a[1], a[2]);
	case LOP_CAST: return convert(e, a[0], e->k->nodes[n->a[0]].dt, n->dt);
	default: return fail(e, r, "op %d is not a value", n->op);
	}
}

static LLVMValueRef node_value(struct emit *e, lref r)
{
	const struct lkernel *k = e->k;
	if (e->failed)
		return NULL;
	if (r < 0 || r >= k->nnodes)
		return fail(e, -1, "node %d out of range", (int)r);
	const struct lnode *n = &k->nodes[r];
	if (n->dt >= DT_COUNT)
		return fail(e, r, "dtype %d", n->dt);
	if (n->op == LOP_CONST)
		return emit_const(e, r, n);
	if (n->op == LOP_VAR) {
		if (n->var < 0 || n->var >= k->nvars || e->var_depth[n->var] < 0)
			return fail(e, r, "var %d is read outside its loop", n->var);
		return e->var_val[n->var];
	}
	if (e->memo[r] >= 0)
		return e->val[r];
	if (n->op == LOP_REDUCE)
		return fail(e, r, "the reduction is read before its section ends");
	if (n->op == LOP_STORE)
		return fail(e, r, "a store has no value");
	int h = node_home(e, r);
	if (h < 0)
		return NULL;
	if (h > e->depth)
		return fail(e, r, "reads a var whose loop is not open here");
	LLVMBasicBlockRef here = LLVMGetInsertBlock(e->b);
	int at = e->depth;
	if (h < e->depth) {
		at = h + 1;
		position_in(e, e->hoist[at]);
	}
	LLVMValueRef v;
	if (n->op == LOP_SYM) {
		if (n->var < 0 || n->var >= k->nsyms)
			return fail(e, r, "symbol %d out of range (%d symbols)", n->var, k->nsyms);
		LLVMValueRef i = ci(e, n->var);
		LLVMValueRef p = LLVMBuildInBoundsGEP2(e->b, e->t64, e->syms, &i, 1, "");
		v = LLVMBuildLoad2(e->b, e->t64, p, "");
		LLVMSetAlignment(v, 8);
	} else {
		v = emit_op(e, r, n);
		if (v && n->op == LOP_UNARY && dtype_is_float(n->dt) && loop_unop_is_transcendental(n->sub))
			e->heavy[h]++; /* in the body of loop h, where it was placed */
	}
	position_in(e, here);
	if (!v)
		return NULL;
	e->val[r] = v;
	e->memo[r] = at;
	return v;
}

/* ---- loops ---- */

static void loop_open(struct emit *e, struct loop *l, int var, LLVMValueRef start, LLVMValueRef end)
{
	LLVMBuilderRef b = e->b;
	LLVMBasicBlockRef ph = LLVMAppendBasicBlockInContext(e->cx, e->body, "ph");
	l->head = LLVMAppendBasicBlockInContext(e->cx, e->body, "loop");
	l->after = LLVMAppendBasicBlockInContext(e->cx, e->body, "after");
	l->end = end;
	LLVMBuildCondBr(b, icmp(e, LLVMIntSLT, start, end), ph, l->after);
	LLVMPositionBuilderAtEnd(b, ph);
	LLVMBuildBr(b, l->head);
	LLVMPositionBuilderAtEnd(b, l->head);
	l->iv = LLVMBuildPhi(b, e->t64, "");
	LLVMAddIncoming(l->iv, &start, &ph, 1);
	e->depth++;
	e->hoist[e->depth] = ph;
	e->var_depth[var] = e->depth;
	e->var_val[var] = l->iv;
}

/* The loop vectorizer interleaves a loop (IC copies of the vector body an
 * iteration) to hide its operations' latency, most of all a reduction's
 * accumulator. A body with a transcendental (an inline polynomial of tens
 * of operations) has independent work enough in one copy, and each copy
 * costs its compile time again: a row normalization's sum of exp of a
 * chain was interleaved four times, and its kernel took half again as
 * long to compile for no faster code. Its loop says interleave count 1. */
static void no_interleave(struct emit *e, LLVMValueRef latch_br)
{
	LLVMMetadataRef temp = LLVMTemporaryMDNode(e->cx, NULL, 0);
	LLVMMetadataRef count[2] = {LLVMMDStringInContext2(e->cx, "llvm.loop.interleave.count", 26),
				    LLVMValueAsMetadata(LLVMConstInt(LLVMInt32TypeInContext(e->cx), 1, 0))};
	LLVMMetadataRef ops[2] = {temp, LLVMMDNodeInContext2(e->cx, count, 2)};
	LLVMMetadataRef id = LLVMMDNodeInContext2(e->cx, ops, 2);
	LLVMMetadataReplaceAllUsesWith(temp, id); /* the loop's ID is its own first operand */
	LLVMSetMetadata(latch_br, LLVMGetMDKindIDInContext(e->cx, "llvm.loop", 9), LLVMMetadataAsValue(e->cx, id));
}

static void loop_close(struct emit *e, struct loop *l, int var)
{
	LLVMBuilderRef b = e->b;
	LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
	LLVMValueRef next = LLVMBuildNSWAdd(b, l->iv, ci(e, 1), "");
	LLVMAddIncoming(l->iv, &next, &latch, 1);
	LLVMValueRef br = LLVMBuildCondBr(b, icmp(e, LLVMIntSLT, next, l->end), l->head, l->after);
	if (e->heavy[e->depth]) /* an inner loop's heavy body is its outer loop's too */
		no_interleave(e, br);
	e->heavy[e->depth - 1] += e->heavy[e->depth];
	e->heavy[e->depth] = 0;
	LLVMPositionBuilderAtEnd(b, l->after);
	for (int r = 0; r < e->k->nnodes; r++)
		if (e->memo[r] >= e->depth)
			e->memo[r] = -1;
	e->var_depth[var] = -1;
	e->depth--;
}

/* ---- reductions ---- */

static LLVMValueRef entry_alloca(struct emit *e, LLVMTypeRef t)
{
	LLVMBuilderRef ab = LLVMCreateBuilderInContext(e->cx);
	LLVMValueRef first = LLVMGetFirstInstruction(e->entry);
	if (first)
		LLVMPositionBuilderBefore(ab, first);
	else
		LLVMPositionBuilderAtEnd(ab, e->entry);
	LLVMValueRef a = LLVMBuildAlloca(ab, t, "acc");
	LLVMDisposeBuilder(ab);
	return a;
}

/* the start value of a reduction accumulated in dt */
static LLVMValueRef reduce_init(struct emit *e, int op, int dt)
{
	LLVMTypeRef t = reg_type(e, dt);
	bool is_max = op == REDOP_max || op == REDOP_argmax;
	switch (op) {
	case REDOP_sum: return LLVMConstNull(t);
	case REDOP_prod: return dtype_is_float(dt) ? cfl(t, 1) : LLVMConstInt(t, 1, 0);
	default:
		if (dtype_is_float(dt))
			return cfl(t, is_max ? -__builtin_inf() : __builtin_inf());
		if (dt == DT_BOOL)
			return LLVMConstInt(t, !is_max, 0);
		return ci(e, is_max ? INT64_MIN : INT64_MAX);
	}
}

static int reduce_begin(struct emit *e, lref r)
{
	const struct lnode *n = &e->k->nodes[r];
	if (n->sub != REDOP_sum && n->sub != REDOP_prod && n->sub != REDOP_max && n->sub != REDOP_min &&
	    n->sub != REDOP_argmax && n->sub != REDOP_argmin) {
		fail(e, r, "reduction %s is not supported", n->sub < REDOP_COUNT ? red_names[n->sub] : "?");
		return -1;
	}
	if (n->a[0] < 0 || n->a[0] >= e->k->nnodes || e->k->nodes[n->a[0]].dt >= DT_COUNT) {
		fail(e, r, "operand 0 missing");
		return -1;
	}
	bool arg = n->sub == REDOP_argmax || n->sub == REDOP_argmin;
	if (arg && n->dt != DT_INT64) {
		fail(e, r, "%s accumulated in %s", red_names[n->sub], dtype_name(n->dt));
		return -1;
	}
	int vdt = arg ? e->k->nodes[n->a[0]].dt : n->dt;
	e->acc[r] = entry_alloca(e, reg_type(e, vdt));
	LLVMBuildStore(e->b, reduce_init(e, n->sub, vdt), e->acc[r]);
	if (arg) {
		e->acc_idx[r] = entry_alloca(e, e->t64);
		LLVMBuildStore(e->b, ci(e, 0), e->acc_idx[r]);
	}
	return 0;
}

/* the position in the section's iteration order, linearized */
static LLVMValueRef section_index(struct emit *e, const struct lsection *s)
{
	LLVMValueRef lin = ci(e, 0);
	for (int j = 0; j < s->ninner; j++) {
		int v = s->inner[j];
		lin = j ? LLVMBuildAdd(e->b, LLVMBuildMul(e->b, lin, e->size[v], ""), e->var_val[v], "")
			: e->var_val[v];
	}
	return lin;
}

/* reassoc alone: the loop vectorizer may then add (multiply) in another
 * order. With nsz as well, InstCombine's FAddCombine takes the summed
 * expression into the reassociation and folds it: acc + (b - b) became
 * acc for an infinite or NaN b (tests/e2e/compile/inductor_sum_nan.tj) */
static void fast_reassoc(LLVMValueRef inst)
{
	if (LLVMIsAInstruction(inst))
		LLVMSetFastMathFlags(inst, LLVMFastMathAllowReassoc);
}

static int reduce_step(struct emit *e, lref r, const struct lsection *s)
{
	LLVMBuilderRef b = e->b;
	const struct lnode *n = &e->k->nodes[r];
	LLVMValueRef x = node_value(e, n->a[0]);
	if (!x)
		return -1;
	int xdt = e->k->nodes[n->a[0]].dt, op = n->sub;
	bool arg = op == REDOP_argmax || op == REDOP_argmin;
	int dt = arg ? xdt : n->dt;
	if (!arg)
		x = convert(e, x, xdt, dt);
	LLVMTypeRef t = reg_type(e, dt);
	LLVMValueRef acc = LLVMBuildLoad2(b, t, e->acc[r], ""), nv;
	bool f = dtype_is_float(dt);
	if (op == REDOP_sum || op == REDOP_prod) {
		if (dt == DT_BOOL)
			nv = op == REDOP_sum ? LLVMBuildOr(b, acc, x, "") : LLVMBuildAnd(b, acc, x, "");
		else if (f)
			fast_reassoc(nv = op == REDOP_sum ? LLVMBuildFAdd(b, acc, x, "") : LLVMBuildFMul(b, acc, x, ""));
		else
			nv = op == REDOP_sum ? LLVMBuildAdd(b, acc, x, "") : LLVMBuildMul(b, acc, x, "");
	} else if (!arg) {
		bool is_max = op == REDOP_max;
		if (f) {
			LLVMValueRef args[2] = {acc, x};
			nv = cg_math_intrinsic(b, e->mod, is_max ? "llvm.maximum" : "llvm.minimum", args, 2);
		} else if (dt == DT_BOOL) { /* any / all: vectorizes */
			nv = is_max ? LLVMBuildOr(b, acc, x, "") : LLVMBuildAnd(b, acc, x, "");
		} else {
			LLVMIntPredicate p = dt == DT_BOOL ? (is_max ? LLVMIntUGT : LLVMIntULT)
							   : (is_max ? LLVMIntSGT : LLVMIntSLT);
			nv = sel(e, icmp(e, p, x, acc), x, acc);
		}
	} else {
		/* eager's ARG_PICK: the first best wins, the first NaN beats all */
		bool is_max = op == REDOP_argmax;
		LLVMValueRef pick;
		if (f)
			pick = LLVMBuildAnd(b, fcmp(e, LLVMRealORD, acc, acc),
					    LLVMBuildOr(b, fcmp(e, LLVMRealUNO, x, x),
							fcmp(e, is_max ? LLVMRealOGT : LLVMRealOLT, x, acc), ""),
					    "");
		else
			pick = icmp(e, dt == DT_BOOL ? (is_max ? LLVMIntUGT : LLVMIntULT)
						     : (is_max ? LLVMIntSGT : LLVMIntSLT),
				    x, acc);
		LLVMValueRef idx = LLVMBuildLoad2(b, e->t64, e->acc_idx[r], "");
		LLVMBuildStore(b, sel(e, pick, section_index(e, s), idx), e->acc_idx[r]);
		nv = sel(e, pick, x, acc);
	}
	LLVMBuildStore(b, nv, e->acc[r]);
	return 0;
}

static int emit_store(struct emit *e, lref r)
{
	const struct lnode *n = &e->k->nodes[r];
	for (int i = 0; i < 2; i++)
		if (n->a[i] < 0 || n->a[i] >= e->k->nnodes) {
			fail(e, r, "operand %d missing", i);
			return -1;
		}
	LLVMValueRef idx = node_value(e, n->a[0]);
	LLVMValueRef v = idx ? node_value(e, n->a[1]) : NULL;
	if (!v)
		return -1;
	if (n->var < 0 || n->var >= e->k->nbufs) {
		fail(e, r, "buffer %d out of range", n->var);
		return -1;
	}
	int dt = e->k->bufs[n->var].dt;
	if (e->k->nodes[n->a[1]].dt != dt || e->k->nodes[n->a[0]].dt != DT_INT64) {
		fail(e, r, "store of %s into a %s buffer", dtype_name(e->k->nodes[n->a[1]].dt), dtype_name(dt));
		return -1;
	}
	LLVMValueRef p = buf_addr(e, r, n->var, idx);
	if (dt == DT_BOOL)
		v = LLVMBuildZExt(e->b, v, e->t8, "");
	LLVMSetAlignment(LLVMBuildStore(e->b, v, p), dtype_size(dt));
	return 0;
}

static int emit_section(struct emit *e, const struct lsection *s)
{
	const struct lkernel *k = e->k;
	if (s->ninner < 0 || s->ninner > LOOP_MAX_VARS || s->nroots < 0 || (s->nroots && !s->roots))
		return fail(e, -1, "malformed section"), -1;
	for (int i = 0; i < s->nroots; i++) {
		lref r = s->roots[i];
		if (r < 0 || r >= k->nnodes || (k->nodes[r].op != LOP_REDUCE && k->nodes[r].op != LOP_STORE))
			return fail(e, r, "a section root must be a store or a reduction"), -1;
		if (k->nodes[r].op == LOP_REDUCE && reduce_begin(e, r) < 0)
			return -1;
	}
	struct loop loops[LOOP_MAX_VARS];
	for (int j = 0; j < s->ninner; j++) {
		int v = s->inner[j];
		if (v < 0 || v >= k->nvars || e->var_depth[v] >= 0)
			return fail(e, -1, "section loop over a bad var %d", v), -1;
		loop_open(e, &loops[j], v, ci(e, 0), e->size[v]);
	}
	for (int i = 0; i < s->nroots && !e->failed; i++) {
		lref r = s->roots[i];
		if (k->nodes[r].op == LOP_STORE)
			emit_store(e, r);
		else
			reduce_step(e, r, s);
	}
	for (int j = s->ninner - 1; j >= 0; j--)
		loop_close(e, &loops[j], s->inner[j]);
	for (int i = 0; i < s->nroots && !e->failed; i++) {
		lref r = s->roots[i];
		if (k->nodes[r].op != LOP_REDUCE)
			continue;
		const struct lnode *n = &k->nodes[r];
		bool arg = n->sub == REDOP_argmax || n->sub == REDOP_argmin;
		e->val[r] = arg ? LLVMBuildLoad2(e->b, e->t64, e->acc_idx[r], "")
				: LLVMBuildLoad2(e->b, reg_type(e, n->dt), e->acc[r], "");
		e->memo[r] = e->depth;
	}
	return e->failed ? -1 : 0;
}

/* ---- the functions ---- */

/* the body: outer loops around the sections */
static int emit_body(struct emit *e)
{
	const struct lkernel *k = e->k;
	LLVMBuilderRef b = e->b;
	e->entry = LLVMAppendBasicBlockInContext(e->cx, e->body, "entry");
	LLVMPositionBuilderAtEnd(b, e->entry);
	if (e->checks) {
		e->check_acc = LLVMBuildAlloca(b, e->t1, "check");
		LLVMBuildStore(b, LLVMConstInt(e->t1, 0, 0), e->check_acc);
	}
	for (int v = 0; v < k->nvars; v++) {
		/* sizes: int64 expressions of symbols, once at entry */
		if (v == 0 && k->nouter > 0)
			continue;
		int h = node_home(e, k->vars[v].size);
		if (h < 0)
			return -1;
		if (h != 0)
			return fail(e, k->vars[v].size, "the size of var %d reads a var", v), -1;
		if (!(e->size[v] = node_value(e, k->vars[v].size)))
			return -1;
	}
	LLVMBasicBlockRef ret = LLVMAppendBasicBlockInContext(e->cx, e->body, "ret");
	struct loop outer[LOOP_MAX_VARS];
	if (k->nouter == 0) { /* runs once when the range is not empty */
		LLVMBasicBlockRef once = LLVMAppendBasicBlockInContext(e->cx, e->body, "once");
		LLVMBuildCondBr(b, icmp(e, LLVMIntSLT, e->begin, e->end), once, ret);
		LLVMPositionBuilderAtEnd(b, once);
	}
	for (int v = 0; v < k->nouter; v++)
		loop_open(e, &outer[v], v, v ? ci(e, 0) : e->begin, v ? e->size[v] : e->end);
	for (int s = 0; s < k->nsections && !e->failed; s++)
		emit_section(e, &k->sections[s]);
	if (e->failed)
		return -1;
	for (int v = k->nouter - 1; v >= 0; v--)
		loop_close(e, &outer[v], v);
	LLVMBuildBr(b, ret);
	LLVMPositionBuilderAtEnd(b, ret);
	if (e->checks) {
		/* once a call, by any thread: an atomic store */
		LLVMBasicBlockRef set = LLVMAppendBasicBlockInContext(e->cx, e->body, "check_failed");
		LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(e->cx, e->body, "done");
		LLVMBuildCondBr(b, LLVMBuildLoad2(b, e->t1, e->check_acc, ""), set, done);
		LLVMPositionBuilderAtEnd(b, set);
		LLVMValueRef st = LLVMBuildStore(b, LLVMConstInt(LLVMInt32TypeInContext(e->cx), 1, 0), e->check_out);
		LLVMSetOrdering(st, LLVMAtomicOrderingMonotonic);
		LLVMSetAlignment(st, 4);
		LLVMBuildBr(b, done);
		LLVMPositionBuilderAtEnd(b, done);
	}
	LLVMBuildRetVoid(b);
	return 0;
}

static void add_attr(struct emit *e, LLVMValueRef fn, unsigned idx, const char *name)
{
	unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
	LLVMAddAttributeAtIndex(fn, idx, LLVMCreateEnumAttribute(e->cx, kind, 0));
}

/* the exported wrapper: loads bufs[i] and calls the body */
static void emit_wrapper(struct emit *e, LLVMTypeRef body_ty)
{
	const struct lkernel *k = e->k;
	LLVMTypeRef params[4] = {e->tp, e->tp, e->t64, e->t64};
	LLVMValueRef fn = LLVMAddFunction(e->mod, k->name, LLVMFunctionType(LLVMVoidTypeInContext(e->cx), params, 4, 0));
	add_attr(e, fn, LLVMAttributeFunctionIndex, "nounwind");
	LLVMPositionBuilderAtEnd(e->b, LLVMAppendBasicBlockInContext(e->cx, fn, "entry"));
	int n = k->nbufs + 3 + e->checks;
	LLVMValueRef *args = calloc(n, sizeof *args);
	if (!args) {
		fail(e, -1, "out of memory");
		return;
	}
	for (int i = 0; i < k->nbufs + e->checks; i++) {
		/* bufs[nbufs]: where a kernel with checks reports a failed one,
		 * the body's last parameter */
		int to = i < k->nbufs ? i : n - 1;
		LLVMValueRef ix = ci(e, i);
		LLVMValueRef p = LLVMBuildInBoundsGEP2(e->b, e->tp, LLVMGetParam(fn, 0), &ix, 1, "");
		args[to] = LLVMBuildLoad2(e->b, e->tp, p, "");
		LLVMSetAlignment(args[to], 8);
	}
	for (int i = 0; i < 3; i++)
		args[k->nbufs + i] = LLVMGetParam(fn, 1 + i);
	LLVMBuildCall2(e->b, body_ty, e->body, args, n, "");
	LLVMBuildRetVoid(e->b);
	free(args);
}

static int emit_alloc(struct emit *e)
{
	int n = e->k->nnodes > 0 ? e->k->nnodes : 1;
	e->val = calloc(n, sizeof *e->val);
	e->acc = calloc(n, sizeof *e->acc);
	e->acc_idx = calloc(n, sizeof *e->acc_idx);
	e->memo = malloc(n * sizeof *e->memo);
	e->home = malloc(n * sizeof *e->home);
	e->bufp = calloc(e->k->nbufs + 1, sizeof *e->bufp);
	e->reads_load = calloc(n, 1);
	if (!e->val || !e->acc || !e->acc_idx || !e->memo || !e->home || !e->bufp || !e->reads_load)
		return -1;
	for (int i = 0; i < n; i++)
		e->memo[i] = -1, e->home[i] = HOME_UNSET;
	for (int v = 0; v < LOOP_MAX_VARS; v++)
		e->var_depth[v] = -1;
	return 0;
}

static bool kernel_shape_ok(struct emit *e)
{
	const struct lkernel *k = e->k;
	if (k->nvars < 0 || k->nvars > LOOP_MAX_VARS || k->nouter < 0 || k->nouter > k->nvars || k->nbufs < 0 ||
	    k->nsyms < 0 || k->nsections < 0 || k->nnodes < 0 || (k->nnodes && !k->nodes) ||
	    (k->nsections && !k->sections) || (k->nbufs && !k->bufs))
		return fail(e, -1, "malformed kernel"), false;
	for (int i = 0; i < k->nbufs; i++)
		if ((unsigned)k->bufs[i].dt >= DT_COUNT)
			return fail(e, -1, "buffer %d has dtype %d", i, (int)k->bufs[i].dt), false;
	for (int v = 0; v < k->nvars; v++)
		if ((v < k->nouter) != (k->vars[v].section < 0) || k->vars[v].section >= k->nsections)
			return fail(e, -1, "var %d: outer vars come first, inner ones name their section", v), false;
	if (memchr(k->name, 0, sizeof k->name) == NULL || !k->name[0])
		return fail(e, -1, "kernel without a name"), false;
	for (lref r = 0; r < k->nnodes; r++) {
		const struct lnode *n = &k->nodes[r];
		if (n->op >= LOP_COUNT || n->dt >= DT_COUNT)
			return fail(e, r, "op %d of dtype %d", n->op, n->dt), false;
		if (n->op == LOP_SYM && (n->var < 0 || n->var >= k->nsyms))
			return fail(e, r, "symbol %d out of range (%d symbols)", n->var, k->nsyms), false;
		if (n->op == LOP_VAR && (n->var < 0 || n->var >= k->nvars))
			return fail(e, r, "var %d out of range", n->var), false;
		if ((n->op == LOP_LOAD || n->op == LOP_STORE) && (n->var < 0 || n->var >= k->nbufs))
			return fail(e, r, "buffer %d out of range", n->var), false;
	}
	return true;
}

int cg_emit_kernel(LLVMModuleRef mod, const struct lkernel *k, char **err)
{
	struct emit e = {.k = k, .mod = mod, .err = err};
	if (err)
		*err = NULL;
	e.cx = LLVMGetModuleContext(mod);
	e.t1 = LLVMInt1TypeInContext(e.cx);
	e.t8 = LLVMInt8TypeInContext(e.cx);
	e.t64 = LLVMInt64TypeInContext(e.cx);
	e.tf = LLVMFloatTypeInContext(e.cx);
	e.td = LLVMDoubleTypeInContext(e.cx);
	e.tp = LLVMPointerTypeInContext(e.cx, 0);
	int rc = -1;
	LLVMTypeRef *params = NULL;
	if (!kernel_shape_ok(&e))
		return -1;
	if (emit_alloc(&e) < 0 || !(params = calloc(k->nbufs + 4, sizeof *params))) {
		fail(&e, -1, "out of memory");
		goto cleanup;
	}
	if (LLVMGetNamedFunction(mod, k->name)) {
		fail(&e, -1, "the module already has a function of that name");
		goto cleanup;
	}
	for (int i = 0; i < k->nbufs; i++)
		params[i] = e.tp;
	params[k->nbufs] = e.tp;
	params[k->nbufs + 1] = params[k->nbufs + 2] = e.t64;
	for (lref r = 0; r < k->nnodes && !e.checks; r++)
		e.checks = data_checked(&e, r);
	params[k->nbufs + 3] = e.tp; /* with checks: check_out */
	LLVMTypeRef body_ty = LLVMFunctionType(LLVMVoidTypeInContext(e.cx), params, k->nbufs + 3 + e.checks, 0);
	char name[sizeof k->name + 8];
	snprintf(name, sizeof name, "%s.body", k->name);
	e.body = LLVMAddFunction(mod, name, body_ty);
	LLVMSetLinkage(e.body, LLVMInternalLinkage);
	add_attr(&e, e.body, LLVMAttributeFunctionIndex, "alwaysinline");
	add_attr(&e, e.body, LLVMAttributeFunctionIndex, "nounwind");
	for (int i = 0; i < k->nbufs; i++) {
		e.bufp[i] = LLVMGetParam(e.body, i);
		add_attr(&e, e.body, i + 1, "noalias");
	}
	e.syms = LLVMGetParam(e.body, k->nbufs);
	e.begin = LLVMGetParam(e.body, k->nbufs + 1);
	e.end = LLVMGetParam(e.body, k->nbufs + 2);
	if (e.checks)
		e.check_out = LLVMGetParam(e.body, k->nbufs + 3);
	e.b = LLVMCreateBuilderInContext(e.cx);
	if (emit_body(&e) < 0)
		goto cleanup;
	emit_wrapper(&e, body_ty);
	if (!e.failed)
		rc = 0;
cleanup:
	if (rc < 0 && e.body) {
		LLVMValueRef w = LLVMGetNamedFunction(mod, k->name);
		if (w && w != e.body)
			LLVMDeleteFunction(w);
		LLVMDeleteFunction(e.body);
	}
	if (e.b)
		LLVMDisposeBuilder(e.b);
	free(params);
	free(e.val);
	free(e.acc);
	free(e.acc_idx);
	free(e.reads_load);
	free(e.memo);
	free(e.home);
	free(e.bufp);
	return rc;
}
