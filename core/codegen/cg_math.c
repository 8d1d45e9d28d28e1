/* cg_math.c - the float-only unary ops as inline IR.
 *
 * A loop that calls libm's expf or tanhf does not vectorize, so float32
 * exp, log, tanh, sigmoid, silu and gelu's erf are polynomials built from
 * fmul/fadd/fdiv/select and bit operations on the float's representation.
 * The coefficients are Chebyshev or rational fits (near minimax) of the
 * functions named in each comment; doc/codegen-math.md gives the
 * intervals, the method and the measured errors. Polynomials are evaluated
 * by Horner's rule with llvm.fmuladd: one FMA instruction and one rounding
 * a step where the CPU has FMA (kernels are compiled and cached per CPU).
 * float64 has the inline exp (and so sigmoid and silu); its log, tanh,
 * erf, sin and cos call libm (through LLVM's intrinsics or by name).
 */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/TargetMachine.h>

#include "cg_emit.h"

LLVMValueRef cg_math_intrinsic(LLVMBuilderRef b, LLVMModuleRef mod, const char *name, LLVMValueRef *args, int n)
{
	unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
	if (!id)
		return NULL;
	LLVMTypeRef t = LLVMTypeOf(args[0]);
	LLVMValueRef fn = LLVMGetIntrinsicDeclaration(mod, id, &t, 1);
	LLVMTypeRef ft = LLVMIntrinsicGetType(LLVMGetModuleContext(mod), id, &t, 1);
	return LLVMBuildCall2(b, ft, fn, args, (unsigned)n, "");
}

bool cg_calls(LLVMValueRef in, const char *prefix)
{
	LLVMValueRef fn = LLVMIsACallInst(in) ? LLVMGetCalledValue(in) : NULL;
	size_t len;
	const char *name = fn && LLVMIsAFunction(fn) ? LLVMGetValueName2(fn, &len) : NULL;
	return name && strncmp(name, prefix, strlen(prefix)) == 0;
}

/* a call of the libm function name(double) */
static LLVMValueRef libm_call(LLVMBuilderRef b, LLVMModuleRef mod, const char *name, LLVMValueRef x)
{
	LLVMTypeRef t = LLVMTypeOf(x);
	LLVMTypeRef ft = LLVMFunctionType(t, &t, 1, 0);
	LLVMValueRef fn = LLVMGetNamedFunction(mod, name);
	if (!fn)
		fn = LLVMAddFunction(mod, name, ft);
	return LLVMBuildCall2(b, ft, fn, &x, 1, "");
}

struct mb {
	LLVMBuilderRef b;
	LLVMModuleRef mod;
	LLVMTypeRef t, ti; /* float, and the integer of its width */
};

static LLVMValueRef k(struct mb *m, double v) { return LLVMConstReal(m->t, v); }
static LLVMValueRef ki(struct mb *m, long long v) { return LLVMConstInt(m->ti, (unsigned long long)v, 1); }
static LLVMValueRef add(struct mb *m, LLVMValueRef a, LLVMValueRef c) { return LLVMBuildFAdd(m->b, a, c, ""); }
static LLVMValueRef sub(struct mb *m, LLVMValueRef a, LLVMValueRef c) { return LLVMBuildFSub(m->b, a, c, ""); }
static LLVMValueRef mul(struct mb *m, LLVMValueRef a, LLVMValueRef c) { return LLVMBuildFMul(m->b, a, c, ""); }
static LLVMValueRef dvd(struct mb *m, LLVMValueRef a, LLVMValueRef c) { return LLVMBuildFDiv(m->b, a, c, ""); }
static LLVMValueRef sel(struct mb *m, LLVMValueRef c, LLVMValueRef a, LLVMValueRef d)
{
	return LLVMBuildSelect(m->b, c, a, d, "");
}
static LLVMValueRef cmp(struct mb *m, LLVMRealPredicate p, LLVMValueRef a, LLVMValueRef c)
{
	return LLVMBuildFCmp(m->b, p, a, c, "");
}
static LLVMValueRef call1(struct mb *m, const char *name, LLVMValueRef x)
{
	return cg_math_intrinsic(m->b, m->mod, name, &x, 1);
}
static LLVMValueRef copysign_(struct mb *m, LLVMValueRef mag, LLVMValueRef sgn)
{
	LLVMValueRef a[2] = {mag, sgn};
	return cg_math_intrinsic(m->b, m->mod, "llvm.copysign", a, 2);
}

/* Where the host has 16 vector registers (x86 without AVX-512), a kernel
 * of several polynomials has more coefficients than registers, and LLVM
 * loads a constant one again, as a broadcast, before each use: an
 * instruction a use, a tenth of the benchmark chain's time on an AVX2
 * machine. A coefficient is loaded from a global that the kernel might
 * write instead (not a `constant`, which LLVM would fold back): LICM
 * hoists the load out of the loop, and after optimizing,
 * cg_math_coefficients_in_memory gives each use in the loop a load of
 * its own, which the FMA takes as its memory operand. With AVX-512's 32
 * registers and its broadcast memory operands, constants stay
 * constants. */
static bool coef_in_memory;
static pthread_once_t coef_once = PTHREAD_ONCE_INIT;

/* whether the comma-separated feature list has "+name" (not a longer
 * name that begins so: +avx512f, not +avx512fp16) */
static bool has_feature(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (p[0] == '+' && strncmp(p + 1, name, n) == 0 && (p[1 + n] == ',' || p[1 + n] == '\0'))
			return true;
	return false;
}

static void coef_decide(void)
{
	char *f = LLVMGetHostCPUFeatures();
	coef_in_memory = has_feature(f, "avx") && !has_feature(f, "avx512f");
	LLVMDisposeMessage(f);
}

/* the name of the global holding the float constant c: tjc.f32.<bits>,
 * or for a splat of it in a vector of lanes lanes tjc.v<lanes>.f32.<bits>
 * (f64 for a double); its bits as an integer in *bits */
static void coef_name(char *name, size_t size, LLVMValueRef c, unsigned lanes, LLVMValueRef *bits)
{
	bool f64 = LLVMGetTypeKind(LLVMTypeOf(c)) == LLVMDoubleTypeKind;
	*bits = LLVMConstBitCast(c, LLVMIntTypeInContext(LLVMGetTypeContext(LLVMTypeOf(c)), f64 ? 64 : 32));
	char vec[16] = "";
	if (lanes)
		snprintf(vec, sizeof vec, "v%u.", lanes);
	snprintf(name, size, "tjc.%sf%d.%0*llx", vec, f64 ? 64 : 32, f64 ? 16 : 8,
		 LLVMConstIntGetZExtValue(*bits));
}

/* a polynomial's coefficient, or another operand of an FMA: a constant,
 * or on a host of 16 vector registers a load of it (above) */
static LLVMValueRef kc(struct mb *m, double v)
{
	pthread_once(&coef_once, coef_decide);
	LLVMValueRef c = k(m, v), bits;
	if (!coef_in_memory)
		return c;
	char name[48];
	coef_name(name, sizeof name, c, 0, &bits);
	LLVMValueRef g = LLVMGetNamedGlobal(m->mod, name);
	if (!g) {
		g = LLVMAddGlobal(m->mod, m->t, name);
		LLVMSetInitializer(g, c);
		LLVMSetLinkage(g, LLVMInternalLinkage);
	}
	return LLVMBuildLoad2(m->b, m->t, g, "");
}

/* a b + c, fused where the CPU has FMA (llvm.fmuladd): one rounding
 * instead of two, and one instruction. Not a multiply and an add that
 * allow contraction, which optimized 19% faster (the intrinsic's calls
 * cost the vectorizer's cost model a query at each width) but are not
 * always fused: the SLP vectorizer packs such an add with a plain one
 * into a vector add without the flag (a scalar loop then rounds twice,
 * 1 ulp from the vector loop), and constant folding rounds the two
 * apart where it fuses the intrinsic (doc/codegen-math.md). */
static LLVMValueRef fma_(struct mb *m, LLVMValueRef a, LLVMValueRef b_, LLVMValueRef c)
{
	LLVMValueRef args[3] = {a, b_, c};
	return cg_math_intrinsic(m->b, m->mod, "llvm.fmuladd", args, 3);
}

/* scale (c[0] + x (c[1] + x (... c[n-1]))), scale a power of two (no
 * rounding changes): every coefficient times scale */
static LLVMValueRef horner_scaled(struct mb *m, LLVMValueRef x, const double *c, int n, double scale)
{
	LLVMValueRef p = kc(m, c[n - 1] * scale);
	for (int i = n - 2; i >= 0; i--)
		p = fma_(m, p, x, kc(m, c[i] * scale));
	return p;
}

/* c[0] + x (c[1] + x (... c[n-1])) */
static LLVMValueRef horner(struct mb *m, LLVMValueRef x, const double *c, int n)
{
	return horner_scaled(m, x, c, n, 1.0);
}

/* the same polynomial with a shorter chain of latencies: its last two
 * steps by Horner's rule, c[0] + x (c[1] + x R), which round as Horner's
 * do, and R = c[2] + c[3] x + ... by Horner's rule in x^2 over pairs,
 * (c[2] + c[3] x) + x^2 ((c[4] + c[5] x) + x^2 (...)), the pairs side by
 * side: one multiplication more (x^2). For the exp inside sigmoid, silu
 * and erf, whose chain bounds their loops (doc/codegen-math.md); a
 * polynomial of pairs alone rounds c[0] + c[1] x apart, and sigmoid's
 * error grew from 2.63 to 3.04 ulp. n >= 3 */
static LLVMValueRef horner_pairs(struct mb *m, LLVMValueRef x, const double *c, int n)
{
	LLVMValueRef x2 = mul(m, x, x);
	int i = 2 + ((n - 3) & ~1); /* the last pair's first coefficient */
	LLVMValueRef p = i + 1 < n ? fma_(m, kc(m, c[i + 1]), x, kc(m, c[i])) : kc(m, c[i]);
	for (i -= 2; i >= 2; i -= 2)
		p = fma_(m, p, x2, fma_(m, kc(m, c[i + 1]), x, kc(m, c[i])));
	return fma_(m, fma_(m, p, x, kc(m, c[1])), x, kc(m, c[0]));
}

/* exp(r), r in [-ln2/2, ln2/2]: degree 6, fit error 2e-9 */
static const double exp_c[] = {1.0, 1.0000000377162139, 0.50000000471177575, 0.16666415514653277,
			       0.041666352896775158, 0.0083751263981533351, 0.0013941108433972674};

/* exp(r) for float64, r in [-ln2/2, ln2/2]: Taylor to degree 13 (truncation 4e-18) */
static const double exp_d[] = {1.0, 1.0, 0.5, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040,
			       1.0 / 40320, 1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600,
			       1.0 / 6227020800};

/* 2^n for an integer n in the normal range, built from its bits */
static LLVMValueRef pow2i(struct mb *m, LLVMValueRef n, bool f64)
{
	LLVMValueRef e = LLVMBuildAdd(m->b, n, ki(m, f64 ? 1023 : 127), "");
	return LLVMBuildBitCast(m->b, LLVMBuildShl(m->b, e, ki(m, f64 ? 52 : 23), ""), m->t, "");
}

/* x clamped to [lo, hi]; NaN goes to hi (the callers put NaN back) */
static LLVMValueRef clamp_nan_hi(struct mb *m, LLVMValueRef x, double lo, double hi)
{
	LLVMValueRef xc = sel(m, cmp(m, LLVMRealOLT, x, k(m, hi)), x, k(m, hi));
	return sel(m, cmp(m, LLVMRealOGT, xc, k(m, lo)), xc, k(m, lo));
}

/* roundeven(y), and the same as an integer of m's width (*ni). A float
 * converts in one instruction. A double, |y| < 2^51, does not on AVX2
 * (LLVM makes four scalar conversions a vector): y + 1.5 2^52 rounds y
 * to an integer, to even on a tie as roundeven does, held in the sum's
 * low bits. */
static LLVMValueRef round_int(struct mb *m, LLVMValueRef y, LLVMValueRef *ni)
{
	if (LLVMGetTypeKind(m->t) != LLVMDoubleTypeKind) {
		LLVMValueRef n = call1(m, "llvm.roundeven", y);
		/* frozen: a NaN y (sigmoid lets it through) converts to poison in
		 * LLVM's rules. Where LLVM sees the NaN (sigmoid(x * 0 + nan)) it
		 * folded the kernel's store of poison away, and the output kept
		 * what it held. x86 gives INT_MIN, and p's NaN carries to the
		 * result. (An integer from the bits of n + 1.5 2^23 instead cost
		 * more to compile than the freeze: 354 M against 347 M) */
		*ni = LLVMBuildFreeze(m->b, LLVMBuildFPToSI(m->b, n, m->ti, ""), "");
		return n;
	}
	LLVMValueRef big = k(m, 0x1.8p52), t = add(m, y, big);
	*ni = LLVMBuildSub(m->b, LLVMBuildBitCast(m->b, t, m->ti, ""), LLVMConstBitCast(big, m->ti), "");
	return sub(m, t, big);
}

/* exp's argument reduction in m's type: n = round(x / ln2) (and as an
 * integer, *ni) and r = x - n ln2 in two parts (ln2_hi has 16 bits for
 * float, 32 for double, so n ln2_hi is exact); r is in [-ln2/2, ln2/2] */
static LLVMValueRef exp_reduce(struct mb *m, LLVMValueRef x, LLVMValueRef *r, LLVMValueRef *ni)
{
	bool f64 = LLVMGetTypeKind(m->t) == LLVMDoubleTypeKind;
	LLVMValueRef n = round_int(m, mul(m, x, k(m, 1.44269504088896341)), ni);
	*r = fma_(m, n, kc(m, f64 ? -0.6931471803691238 : -0.693145751953125), x);
	*r = fma_(m, n, kc(m, f64 ? -1.9082149292705877e-10 : -1.428606820309417232e-06), *r);
	return n;
}

/* exp(x) = 2^n exp(r) (exp_reduce). x is clamped first ([-104, 89] for
 * float, [-746, 710] for double; NaN to the top), so that n fits and
 * overflow / underflow come out of the last product: 2^n is applied as
 * 2^(n - n/2) 2^(n/2), the first product exact, the second rounding once
 * into the inf, normal or denormal result. */
static LLVMValueRef exp_flt(struct mb *m, LLVMValueRef x, bool f64)
{
	LLVMBuilderRef b = m->b;
	LLVMValueRef xc = clamp_nan_hi(m, x, f64 ? -746.0 : -104.0, f64 ? 710.0 : 89.0), r, ni;
	exp_reduce(m, xc, &r, &ni);
	LLVMValueRef p = f64 ? horner(m, r, exp_d, 14) : horner_pairs(m, r, exp_c, 7);
	LLVMValueRef n1 = LLVMBuildAShr(b, ni, ki(m, 1), "");
	LLVMValueRef n2 = LLVMBuildSub(b, ni, n1, "");
	LLVMValueRef y = mul(m, mul(m, p, pow2i(m, n1, f64)), pow2i(m, n2, f64));
	return sel(m, cmp(m, LLVMRealUNO, x, x), x, y);
}

/* exp(r) for r in [-ln2/2, ln2/2] in double, for float32 results:
 * degree 8, the Chebyshev series of exp truncated (error 1.1e-12) */
static const double exp_cr[] = {1.0000000000000133,   0.999999999979781,     0.4999999999943851,
				0.16666666891074364,  0.041666667040585935,  0.008333266093189582,
				0.001388880174512402, 0.00019915869191389538, 2.488446163856036e-05};

/* float32 exp, correctly rounded but where the double result is within
 * 1.1e-12 of a midpoint: the method of exp_flt carried out in double (x
 * in [-104, 89], so that 2^n is a double and the one rounding, to float,
 * gives inf, normal, denormal or 0 results alike). A float evaluation is
 * within 1 ulp but rounds the other way from libm's expf for about one
 * input in ten, which prints: eager's exp(4.0) is 54.5981, one ulp above
 * it 54.5982. */
static LLVMValueRef exp_f32(struct mb *m, LLVMValueRef x)
{
	LLVMBuilderRef b = m->b;
	LLVMContextRef cx = LLVMGetModuleContext(m->mod);
	struct mb d = {b, m->mod, LLVMDoubleTypeInContext(cx), LLVMInt64TypeInContext(cx)};
	LLVMValueRef xd = LLVMBuildFPExt(b, clamp_nan_hi(m, x, -104.0, 89.0), d.t, ""), r, ni;
	exp_reduce(&d, xd, &r, &ni);
	LLVMValueRef p = horner(&d, r, exp_cr, sizeof exp_cr / sizeof *exp_cr);
	LLVMValueRef y = mul(&d, p, pow2i(&d, ni, true));
	return sel(m, cmp(m, LLVMRealUNO, x, x), x, LLVMBuildFPTrunc(b, y, m->t, ""));
}

/* exp(t) = p 2^n for float32 t in [-87, 89], which the caller clamps to:
 * p = exp(r), and 2^n (*pow2n), normal up to t = 88.38 and inf (n = 128,
 * the exponent's bits all ones) above, to apply in one multiplication */
static LLVMValueRef exp_narrow_f32(struct mb *m, LLVMValueRef t, LLVMValueRef *pow2n)
{
	LLVMValueRef r, ni;
	exp_reduce(m, t, &r, &ni);
	*pow2n = pow2i(m, ni, false);
	return horner_pairs(m, r, exp_c, 7);
}

/* sigmoid(x) = 1 / (1 + exp(-x)) with -x clamped to [-87, 89], so that
 * exp is the one-scaling kind: x > 87 gives 1, as eager; from -x = 88.38
 * on, 2^n is 2^128, whose bits are inf's, so the result is 0 (eager's is
 * a denormal there, or 0: within 2^-126) with no select; NaN stays NaN.
 * 1 + p 2^n is one FMA: p 2^n is exact (a normal, inf, or a denormal that
 * the 1 absorbs either way), so the FMA rounds as the product and the sum
 * do, one operation and its latency fewer. The division is left last: a
 * product with a tanh or sigmoid shares it (cg_emit.c, fraction_product),
 * which finds p and 2^n in the FMA (cg_math_sigmoid_denominator) */
static LLVMValueRef sigmoid_f32(struct mb *m, LLVMValueRef x)
{
	/* the clamps let NaN through, and exp_narrow_f32 keeps it */
	LLVMValueRef t = LLVMBuildFNeg(m->b, x, ""), pow2n;
	t = sel(m, cmp(m, LLVMRealOGT, t, k(m, 89.0)), k(m, 89.0), t);
	t = sel(m, cmp(m, LLVMRealOLT, t, k(m, -87.0)), k(m, -87.0), t);
	LLVMValueRef p = exp_narrow_f32(m, t, &pow2n);
	return dvd(m, k(m, 1.0), fma_(m, p, pow2n, k(m, 1.0)));
}

bool cg_math_sigmoid_denominator(LLVMValueRef d, LLVMValueRef *p, LLVMValueRef *pow2n)
{
	LLVMBool lossy;
	if (!cg_calls(d, "llvm.fmuladd.") || !LLVMIsAConstantFP(LLVMGetOperand(d, 2)) ||
	    LLVMConstRealGetDouble(LLVMGetOperand(d, 2), &lossy) != 1.0)
		return false;
	*p = LLVMGetOperand(d, 0);
	*pow2n = LLVMGetOperand(d, 1);
	return true;
}

/* (log1p(f) - f + f^2/2) / f^3, f in [sqrt(1/2) - 1, sqrt(2) - 1]: degree 7, fit error 1.8e-7 */
static const double log_c[] = {0.33333330728190674, -0.25000306422569796, 0.2000104509416068,
			       -0.16641281463106394, 0.14214495923947962, -0.1299818376365153,
			       0.12622319849228378, -0.079027437723934404};

/* log(x) = e ln2 + log1p(f), x = 2^e (1 + f), 1 + f in [sqrt(1/2), sqrt(2));
 * denormals are scaled by 2^23 first; 0, negatives, inf and NaN by selects */
static LLVMValueRef log_f32(struct mb *m, LLVMValueRef x)
{
	LLVMBuilderRef b = m->b;
	LLVMValueRef tiny = cmp(m, LLVMRealOLT, x, k(m, 1.17549435e-38));
	LLVMValueRef xs = sel(m, tiny, mul(m, x, k(m, 8388608.0)), x);
	LLVMValueRef bits = LLVMBuildBitCast(b, xs, m->ti, "");
	LLVMValueRef ex = LLVMBuildSub(b, LLVMBuildLShr(b, bits, ki(m, 23), ""), ki(m, 127), "");
	ex = LLVMBuildSub(b, ex, sel(m, tiny, ki(m, 23), ki(m, 0)), "");
	LLVMValueRef mant = LLVMBuildOr(b, LLVMBuildAnd(b, bits, ki(m, 0x7fffff), ""), ki(m, 0x3f800000), "");
	LLVMValueRef mf = LLVMBuildBitCast(b, mant, m->t, "");
	LLVMValueRef big = cmp(m, LLVMRealOGT, mf, k(m, 1.41421356237309505));
	mf = sel(m, big, mul(m, mf, k(m, 0.5)), mf);
	ex = LLVMBuildAdd(b, ex, LLVMBuildZExt(b, big, m->ti, ""), "");
	LLVMValueRef f = sub(m, mf, k(m, 1.0));
	LLVMValueRef ef = LLVMBuildSIToFP(b, ex, m->t, "");
	LLVMValueRef f2 = mul(m, f, f);
	LLVMValueRef lo = sub(m, mul(m, mul(m, f, f2), horner(m, f, log_c, 8)), mul(m, f2, k(m, 0.5)));
	lo = add(m, lo, mul(m, ef, k(m, 1.428606820309417232e-06)));
	LLVMValueRef y = add(m, add(m, f, lo), mul(m, ef, k(m, 0.693145751953125)));
	y = sel(m, cmp(m, LLVMRealOEQ, x, k(m, INFINITY)), x, y);
	y = sel(m, cmp(m, LLVMRealOEQ, x, k(m, 0.0)), k(m, -INFINITY), y);
	return sel(m, cmp(m, LLVMRealULT, x, k(m, 0.0)), k(m, NAN), y);
}

/* tanh(x) / x = P(x^2) / Q(x^2) on [0, 9.1]: degrees 6 and 3, a rational
 * fit of relative error 1.8e-8 with float32 coefficients (rounded one at a
 * time, the rest refitted); from 9.01 on tanh rounds to 1 in float */
static const double tanh_p[] = {1.0, 0.1307976394891739, 0.0030991993844509125, 1.110412813432049e-05,
				-2.0018998014847966e-08, 5.177221845675817e-11, -8.226572363861234e-14};
static const double tanh_q[] = {1.0, 0.4641309082508087, 0.024476274847984314, 0.00025391936651431024};

/* tanh: x clamped to [-TANH_ONE, TANH_ONE] (NaN passes), then x (P / Q).
 * At TANH_ONE, x (P / Q) is exactly 1, evaluated with FMA and without;
 * below 8.1233 it never exceeds 1 either way (every float of [4, 8.1233]
 * checked; above, it rounds to 1 + 2^-23 at some points), so the result
 * needs no clamp; from TANH_ONE on, tanh is within 1.8e-7 of 1. Odd, so
 * the sign and -0 come out of the product, and a tiny x comes out exact
 * (P / Q is 1). The float evaluation of P and Q costs up to 4.2 ulp near
 * 1. A product with a sigmoid shares its division (cg_emit.c,
 * fraction_product) */
#define TANH_ONE 0x1.03db34p+3 /* 8.12050819 */
/* P and Q are both scaled by 2^-8, which changes no rounding of P / Q:
 * Q is then below 0.83, and Q times sigmoid's 1 + exp(-x) (a float, or
 * inf from -x = 88.38 on) overflows only to that inf */
#define TANH_SCALE 0x1p-8
static LLVMValueRef tanh_f32(struct mb *m, LLVMValueRef x)
{
	LLVMValueRef xc = sel(m, cmp(m, LLVMRealOGT, x, k(m, TANH_ONE)), k(m, TANH_ONE), x);
	xc = sel(m, cmp(m, LLVMRealOLT, xc, k(m, -TANH_ONE)), k(m, -TANH_ONE), xc);
	LLVMValueRef s = mul(m, xc, xc);
	LLVMValueRef p = horner_scaled(m, s, tanh_p, 7, TANH_SCALE), q = horner_scaled(m, s, tanh_q, 4, TANH_SCALE);
	return mul(m, xc, dvd(m, p, q));
}

/* erf(x) / x as a polynomial in x^2, |x| < 1: degree 6, fit error 1.2e-9 */
static const double erf_a[] = {1.1283791658483509, -0.37612626666720334, 0.11283594715160218,
			       -0.026854212010626412, 0.0051890874234339739, -0.00080168642871658699,
			       7.8758750626854883e-05};
/* erfc(x) exp(x^2) as a polynomial in t = x - 2.5, x in [1, 4]: degree 10, fit error 5.1e-8 */
static const double erf_r[] = {0.21080636406114359, -0.07434759369537923, 0.024938056886438492,
			       -0.0079993888647215666, 0.0024665085701356007, -0.00073892788630100948,
			       0.00021231356744280723, -5.3627294530688494e-05, 1.4689556825108315e-05,
			       -6.3778622758128662e-06, 1.6118907487327765e-06};

/* erf: x P(x^2) below 1, else 1 - exp(-x^2) R(min(|x|, 4)) with x's sign
 * (from 4 on, exp(-x^2) R < 2e-8 and the result rounds to 1) */
static LLVMValueRef erf_f32(struct mb *m, LLVMValueRef x)
{
	LLVMValueRef ax = call1(m, "llvm.fabs", x);
	LLVMValueRef x2 = mul(m, x, x);
	LLVMValueRef small = mul(m, x, horner(m, x2, erf_a, 7));
	LLVMValueRef ac = sel(m, cmp(m, LLVMRealOLT, ax, k(m, 4.0)), ax, k(m, 4.0));
	LLVMValueRef r = horner(m, sub(m, ac, k(m, 2.5)), erf_r, 11);
	LLVMValueRef big = sub(m, k(m, 1.0), mul(m, exp_flt(m, LLVMBuildFNeg(m->b, x2, ""), false), r));
	return sel(m, cmp(m, LLVMRealOLT, ax, k(m, 1.0)), small, copysign_(m, big, x));
}

/* ---- sin and cos of float32: the argument reduced exactly ----
 * |x| = M 2^(E-150) (M the 24-bit significand, E the biased exponent).
 * y = |x| 2/pi modulo 4 only needs the bits of 2/pi from position
 * E - 151 on (the earlier ones give multiples of 4): a table holds those
 * 96 bits for each E, the integer product M * W (120 bits, three 64-bit
 * multiplies) has y's quadrant in its bits 94-95 and its fraction below,
 * kept to 64 bits (the truncation of 2/pi costs under 2^-70). The
 * fraction, rounded to the nearest quadrant, times pi/2 is r in
 * [-pi/4, pi/4] as a double; sin r and cos r are Taylor polynomials in
 * double (error under 1e-11), rounded once to float. */

/* 2/pi, 256 bits after the binary point */
static const char two_over_pi[] = "a2f9836e4e441529fc2757d1f534ddc0db6295993c439041fe5163abdebbc561";

/* bit i (1 = the first after the binary point) of 2/pi; 0 for i <= 0 */
static unsigned twopi_bit(int i)
{
	if (i <= 0 || i > 4 * (int)(sizeof two_over_pi - 1))
		return 0;
	char c = two_over_pi[(i - 1) / 4];
	unsigned d = c <= '9' ? (unsigned)(c - '0') : (unsigned)(c - 'a' + 10);
	return (d >> (3 - (i - 1) % 4)) & 1;
}

/* the table: for each biased exponent E, the 96 bits of 2/pi from
 * position E - 151, as three 32-bit words (a private constant global
 * shared by the module's kernels) */
static LLVMValueRef twopi_table(struct mb *m)
{
	static const char name[] = "tj.two_over_pi";
	LLVMValueRef g = LLVMGetNamedGlobal(m->mod, name);
	if (g)
		return g;
	LLVMContextRef cx = LLVMGetModuleContext(m->mod);
	LLVMTypeRef t32 = LLVMInt32TypeInContext(cx);
	LLVMValueRef words[256 * 3];
	for (int e = 0; e < 256; e++)
		for (int w = 0; w < 3; w++) {
			unsigned v = 0;
			for (int j = 0; j < 32; j++)
				v = v << 1 | twopi_bit(e - 152 + 1 + 32 * w + j);
			words[e * 3 + w] = LLVMConstInt(t32, v, 0);
		}
	LLVMTypeRef at = LLVMArrayType2(t32, 256 * 3);
	g = LLVMAddGlobal(m->mod, at, name);
	LLVMSetInitializer(g, LLVMConstArray2(t32, words, 256 * 3));
	LLVMSetGlobalConstant(g, 1);
	LLVMSetLinkage(g, LLVMPrivateLinkage);
	LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
	LLVMSetAlignment(g, 16);
	return g;
}

static const double sin_c[] = {-1.0 / 6, 1.0 / 120, -1.0 / 5040, 1.0 / 362880, -1.0 / 39916800};
static const double cos_c[] = {-0.5, 1.0 / 24, -1.0 / 720, 1.0 / 40320, -1.0 / 3628800, 1.0 / 479001600};

static LLVMValueRef sincos_f32(struct mb *m, LLVMValueRef x, bool want_cos)
{
	LLVMBuilderRef b = m->b;
	LLVMContextRef cx = LLVMGetModuleContext(m->mod);
	LLVMTypeRef t64 = LLVMInt64TypeInContext(cx), td = LLVMDoubleTypeInContext(cx);
	LLVMValueRef bits = LLVMBuildBitCast(b, x, m->ti, "");
	LLVMValueRef ex = LLVMBuildAnd(b, LLVMBuildLShr(b, bits, ki(m, 23), ""), ki(m, 255), "");
	LLVMValueRef mant = LLVMBuildOr(b, LLVMBuildAnd(b, bits, ki(m, 0x7fffff), ""), ki(m, 0x800000), "");
	LLVMValueRef mw = LLVMBuildZExt(b, mant, t64, "");
	LLVMValueRef idx = LLVMBuildMul(b, LLVMBuildZExt(b, ex, t64, ""), LLVMConstInt(t64, 3, 0), "");
	LLVMValueRef tab = twopi_table(m), w[3];
	for (int i = 0; i < 3; i++) {
		LLVMValueRef ix[2] = {LLVMConstInt(t64, 0, 0), LLVMBuildAdd(b, idx, LLVMConstInt(t64, i, 0), "")};
		LLVMValueRef p = LLVMBuildInBoundsGEP2(b, LLVMGlobalGetValueType(tab), tab, ix, 2, "");
		LLVMValueRef v = LLVMBuildLoad2(b, m->ti, p, "");
		LLVMSetAlignment(v, 4);
		w[i] = LLVMBuildMul(b, mw, LLVMBuildZExt(b, v, t64, ""), "");
	}
	LLVMValueRef c32 = LLVMConstInt(t64, 32, 0), lo32 = LLVMConstInt(t64, 0xffffffffu, 0);
	LLVMValueRef s1 = LLVMBuildAdd(b, w[1], LLVMBuildLShr(b, w[2], c32, ""), "");
	LLVMValueRef s2 = LLVMBuildAdd(b, w[0], LLVMBuildLShr(b, s1, c32, ""), "");
	LLVMValueRef f = LLVMBuildShl(b, s2, LLVMConstInt(t64, 34, 0), "");
	f = LLVMBuildOr(b, f, LLVMBuildShl(b, LLVMBuildAnd(b, s1, lo32, ""), LLVMConstInt(t64, 2, 0), ""), "");
	f = LLVMBuildOr(b, f, LLVMBuildLShr(b, LLVMBuildAnd(b, w[2], lo32, ""), LLVMConstInt(t64, 30, 0), ""), "");
	LLVMValueRef q = LLVMBuildAdd(b, LLVMBuildLShr(b, s2, LLVMConstInt(t64, 30, 0), ""),
				      LLVMBuildLShr(b, f, LLVMConstInt(t64, 63, 0), ""), "");
	if (want_cos)
		q = LLVMBuildAdd(b, q, LLVMConstInt(t64, 1, 0), "");
	struct mb md = {b, m->mod, td, t64};
	LLVMValueRef r = mul(&md, LLVMBuildSIToFP(b, f, td, ""), k(&md, 1.5707963267948966 * 0x1p-64));
	LLVMValueRef r2 = mul(&md, r, r);
	LLVMValueRef sr = add(&md, r, mul(&md, mul(&md, r, r2), horner(&md, r2, sin_c, 5)));
	LLVMValueRef cr = add(&md, k(&md, 1.0), mul(&md, r2, horner(&md, r2, cos_c, 6)));
	LLVMValueRef odd = LLVMBuildICmp(b, LLVMIntNE, LLVMBuildAnd(b, q, LLVMConstInt(t64, 1, 0), ""),
					 LLVMConstInt(t64, 0, 0), "");
	LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntNE, LLVMBuildAnd(b, q, LLVMConstInt(t64, 2, 0), ""),
					 LLVMConstInt(t64, 0, 0), "");
	if (!want_cos) /* sin is odd */
		neg = LLVMBuildXor(b, neg, LLVMBuildICmp(b, LLVMIntSLT, bits, ki(m, 0), ""), "");
	LLVMValueRef v = sel(m, odd, cr, sr);
	v = LLVMBuildFPTrunc(b, sel(m, neg, LLVMBuildFNeg(b, v, ""), v), m->t, "");
	LLVMValueRef tiny = LLVMBuildICmp(b, LLVMIntULT, ex, ki(m, 115), ""); /* |x| < 2^-12 */
	v = sel(m, tiny, want_cos ? k(m, 1.0) : x, v);
	return sel(m, LLVMBuildICmp(b, LLVMIntEQ, ex, ki(m, 255), ""), k(m, NAN), v);
}

static LLVMValueRef exp_any(struct mb *m, LLVMValueRef x, bool f32)
{
	return exp_flt(m, x, !f32);
}

LLVMValueRef cg_math_unary(LLVMBuilderRef b, LLVMModuleRef mod, unop op, LLVMValueRef x)
{
	LLVMContextRef cx = LLVMGetModuleContext(mod);
	LLVMTypeRef t = LLVMTypeOf(x);
	bool f32 = LLVMGetTypeKind(t) == LLVMFloatTypeKind;
	struct mb m = {b, mod, t, f32 ? LLVMInt32TypeInContext(cx) : LLVMInt64TypeInContext(cx)};
	LLVMValueRef one = k(&m, 1.0);
	switch (op) {
	case UNOP_exp: return f32 ? exp_f32(&m, x) : exp_flt(&m, x, true);
	case UNOP_log: return f32 ? log_f32(&m, x) : call1(&m, "llvm.log", x);
	case UNOP_sqrt: return call1(&m, "llvm.sqrt", x);
	case UNOP_rsqrt: return dvd(&m, one, call1(&m, "llvm.sqrt", x));
	case UNOP_reciprocal: return dvd(&m, one, x);
	case UNOP_sin: return f32 ? sincos_f32(&m, x, false) : call1(&m, "llvm.sin", x);
	case UNOP_cos: return f32 ? sincos_f32(&m, x, true) : call1(&m, "llvm.cos", x);
	case UNOP_tanh: return f32 ? tanh_f32(&m, x) : libm_call(b, mod, "tanh", x);
	case UNOP_sigmoid:
		if (f32)
			return sigmoid_f32(&m, x);
		return dvd(&m, one, add(&m, one, exp_any(&m, LLVMBuildFNeg(b, x, ""), f32)));
	case UNOP_silu: /* eager's formula: its exp(-x) may overflow to inf */
		return dvd(&m, x, add(&m, one, exp_any(&m, LLVMBuildFNeg(b, x, ""), f32)));
	case UNOP_gelu: {
		LLVMValueRef z = mul(&m, x, k(&m, M_SQRT1_2));
		LLVMValueRef erf = f32 ? erf_f32(&m, z) : libm_call(b, mod, "erf", z);
		return mul(&m, mul(&m, k(&m, 0.5), x), add(&m, one, erf));
	}
	default: return NULL;
	}
}

/* ---- the coefficients back in memory, after optimizing ----
 * LICM hoists kc's loads out of the loops, and the vectorizer splats
 * each once in the vector loop's preheader; the float constants of the
 * loop (clamp bounds, 1, 0.5, ...) are constant-pool loads that the
 * code generator hoists too. A kernel of several polynomials then has
 * more loop-invariant vectors than 16 registers: the register allocator
 * spent about a tenth of the code generator's time choosing which to
 * evict, spilled most of them, and copied the rest from register to
 * register around the loop (a gelu's loop had 16 such copies).
 * Instead, each use of a coefficient in another block gets a load of
 * its own just before it: of a full-width copy of the splat (a global
 * holding the vector's bits as integers, which for float print shorter
 * than floats), or of the scalar global in a scalar loop; and a float
 * vector constant that an arithmetic instruction, a comparison or a
 * select uses is loaded from such a copy, once in its block. A load
 * with one use next to it is folded into the instruction (an FMA's
 * memory operand), so no constant is kept across the loop, nor spilled
 * (the benchmark chain's kernel has no stack operand left; a kernel of
 * hundreds of values may still spill its own). Measured side by side
 * on an AVX2 host (doc/codegen.md): softmax's kernel 8% faster, a
 * gelu's 7%, the benchmark's chain 1-4% slower; compiling graph50's
 * kernels 11% cheaper. */

/* the global of a load of one of kc's globals, or NULL: an unwritten
 * global named tjc.* whose initializer is a float of the loaded type (IR
 * text from elsewhere may declare one without it, or write it) */
bool cg_math_unwritten_global(LLVMValueRef g)
{
	if (!g || !LLVMIsAGlobalVariable(g) || LLVMIsDeclaration(g))
		return false;
	size_t len = 0;
	const char *name = LLVMGetValueName2(g, &len);
	if (!name || len <= 4 || strncmp(name, "tjc.", 4) != 0)
		return false;
	if (LLVMIsGlobalConstant(g))
		return true;
	LLVMLinkage l = LLVMGetLinkage(g);
	if (l != LLVMInternalLinkage && l != LLVMPrivateLinkage)
		return false;
	for (LLVMUseRef u = LLVMGetFirstUse(g); u; u = LLVMGetNextUse(u)) {
		LLVMValueRef user = LLVMGetUser(u);
		if (!LLVMIsALoadInst(user) || LLVMGetOperand(user, 0) != g)
			return false;
	}
	return true;
}

static LLVMValueRef coef_load(LLVMValueRef v)
{
	if (!v || !LLVMIsALoadInst(v))
		return NULL;
	LLVMValueRef g = LLVMGetOperand(v, 0);
	if (!cg_math_unwritten_global(g)) /* a load moved to each use must read the same value */
		return NULL;
	LLVMValueRef c = LLVMGetInitializer(g);
	return c && LLVMIsAConstantFP(c) && LLVMTypeOf(c) == LLVMTypeOf(v) ? g : NULL;
}

/* the global g of a splat of a coefficient (shufflevector of an
 * insertelement of a load of g at lane 0, mask all zeros, of a float
 * vector), or NULL */
static LLVMValueRef coef_splat(LLVMValueRef v)
{
	if (!LLVMIsAShuffleVectorInst(v) || LLVMGetTypeKind(LLVMTypeOf(v)) != LLVMVectorTypeKind)
		return NULL;
	LLVMValueRef ins = LLVMGetOperand(v, 0);
	if (!LLVMIsAInsertElementInst(ins) || !LLVMIsAConstantInt(LLVMGetOperand(ins, 2)) ||
	    LLVMConstIntGetZExtValue(LLVMGetOperand(ins, 2)) != 0)
		return NULL;
	for (unsigned i = 0, n = LLVMGetNumMaskElements(v); i < n; i++)
		if (LLVMGetMaskValue(v, i) != 0)
			return NULL;
	return coef_load(LLVMGetOperand(ins, 1));
}

/* the global holding a splat of type vt of the float constant c: its
 * bits as integers (for float, shorter to print than the floats) */
static LLVMValueRef splat_global(LLVMModuleRef mod, LLVMValueRef c, LLVMTypeRef vt)
{
	unsigned lanes = LLVMGetVectorSize(vt);
	char name[48];
	LLVMValueRef bits;
	coef_name(name, sizeof name, c, lanes, &bits);
	LLVMValueRef vg = LLVMGetNamedGlobal(mod, name);
	if (vg)
		return vg;
	LLVMValueRef *lane = malloc(lanes * sizeof *lane);
	if (!lane)
		return NULL;
	for (unsigned i = 0; i < lanes; i++)
		lane[i] = bits;
	LLVMValueRef init = LLVMConstVector(lane, lanes);
	free(lane);
	vg = LLVMAddGlobal(mod, LLVMTypeOf(init), name);
	LLVMSetInitializer(vg, init);
	LLVMSetLinkage(vg, LLVMInternalLinkage);
	LLVMSetAlignment(vg, 64);
	return vg;
}

/* the float of a splat vector constant, or NULL */
static LLVMValueRef splat_constant(LLVMValueRef v)
{
	if ((!LLVMIsAConstantDataVector(v) && !LLVMIsAConstantVector(v)) ||
	    LLVMGetTypeKind(LLVMTypeOf(v)) != LLVMVectorTypeKind)
		return NULL;
	LLVMTypeRef t = LLVMTypeOf(v);
	LLVMTypeKind ek = LLVMGetTypeKind(LLVMGetElementType(t));
	if (ek != LLVMFloatTypeKind && ek != LLVMDoubleTypeKind)
		return NULL;
	LLVMValueRef e0 = LLVMGetAggregateElement(v, 0);
	for (unsigned i = 1, n = LLVMGetVectorSize(t); i < n; i++)
		if (LLVMGetAggregateElement(v, i) != e0)
			return NULL;
	return e0 && LLVMIsAConstantFP(e0) ? e0 : NULL;
}

/* whether operand k of instruction in may be a load instead of a constant */
static bool may_load_operand(LLVMValueRef in, int k)
{
	switch (LLVMGetInstructionOpcode(in)) {
	case LLVMFAdd: case LLVMFSub: case LLVMFMul: case LLVMFDiv: case LLVMFCmp: return true;
	case LLVMSelect: return k > 0;
	case LLVMCall: return k < (int)LLVMGetNumArgOperands(in) && cg_calls(in, "llvm.fmuladd.");
	default: return false;
	}
}

/* the loads of constants made in a block so far: a constant used twice
 * in a block (a clamp's bound, compared and selected) is loaded once,
 * so that a compare and select of the same values is still a min or a
 * max */
struct block_loads {
	LLVMValueRef global[64], load[64];
	int n;
};

/* in's float vector constants (splats), as loads: false when out of memory */
static bool load_constants(LLVMModuleRef mod, LLVMBuilderRef b, LLVMValueRef in, struct block_loads *bl)
{
	for (int k = 0, n = LLVMGetNumOperands(in); k < n; k++) {
		LLVMValueRef c = splat_constant(LLVMGetOperand(in, (unsigned)k));
		if (!c || !may_load_operand(in, k))
			continue;
		LLVMTypeRef vt = LLVMTypeOf(LLVMGetOperand(in, (unsigned)k));
		LLVMValueRef g = splat_global(mod, c, vt), l = NULL;
		if (!g)
			return false;
		for (int i = 0; i < bl->n && !l; i++)
			if (bl->global[i] == g)
				l = bl->load[i];
		if (!l) {
			LLVMPositionBuilderBefore(b, in);
			l = LLVMBuildLoad2(b, vt, g, "");
			LLVMSetAlignment(l, 64);
			if (bl->n < 64) {
				bl->global[bl->n] = g;
				bl->load[bl->n++] = l;
			}
		}
		LLVMSetOperand(in, (unsigned)k, l);
	}
	return true;
}

/* each use of v by an instruction in another block than v's (not a
 * phi, nor an insertelement: a splat's is handled as the splat) reads a
 * load of g of type t, made just before it, instead; false when out of
 * memory */
static bool load_at_each_use(LLVMBuilderRef b, LLVMValueRef v, LLVMValueRef g, LLVMTypeRef t, unsigned align)
{
	size_t n = 0, cap = 0;
	LLVMValueRef *users = NULL;
	for (LLVMUseRef u = LLVMGetFirstUse(v); u; u = LLVMGetNextUse(u)) {
		LLVMValueRef user = LLVMGetUser(u);
		if (LLVMIsAPHINode(user) || LLVMIsAInsertElementInst(user) ||
		    LLVMGetInstructionParent(user) == LLVMGetInstructionParent(v))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			LLVMValueRef *more = realloc(users, cap * sizeof *users);
			if (!more) {
				free(users);
				return false;
			}
			users = more;
		}
		users[n++] = user; /* once per operand that is v: the first
				      time replaces them all */
	}
	for (size_t i = 0; i < n; i++) {
		for (int k = 0, nops = LLVMGetNumOperands(users[i]); k < nops; k++)
			if (LLVMGetOperand(users[i], (unsigned)k) == v) {
				LLVMPositionBuilderBefore(b, users[i]);
				LLVMValueRef l = LLVMBuildLoad2(b, t, g, "");
				LLVMSetAlignment(l, align);
				LLVMSetOperand(users[i], (unsigned)k, l);
			}
	}
	free(users);
	return true;
}

/* v, and the instructions it was made of when nothing else uses them */
static void erase_if_unused(LLVMValueRef v)
{
	while (v && !LLVMGetFirstUse(v)) {
		LLVMValueRef from = LLVMIsAShuffleVectorInst(v) ? LLVMGetOperand(v, 0)
				    : LLVMIsAInsertElementInst(v) ? LLVMGetOperand(v, 1) : NULL;
		LLVMInstructionEraseFromParent(v);
		v = from && LLVMIsAInstruction(from) ? from : NULL;
	}
}

int cg_math_coefficients_in_memory(LLVMModuleRef mod)
{
	pthread_once(&coef_once, coef_decide);
	if (!coef_in_memory) /* AVX-512's constants are broadcast operands */
		return 0;
	LLVMBuilderRef b = LLVMCreateBuilderInContext(LLVMGetModuleContext(mod));
	int rc = 0;
	for (LLVMValueRef f = LLVMGetFirstFunction(mod); f && rc == 0; f = LLVMGetNextFunction(f))
		for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb && rc == 0; bb = LLVMGetNextBasicBlock(bb)) {
			LLVMValueRef in = LLVMGetFirstInstruction(bb);
			struct block_loads bl = {.n = 0};
			while (in && rc == 0) {
				/* the loads made are in the users' blocks: where
				 * they are met, their uses are in their own */
				LLVMValueRef next = LLVMGetNextInstruction(in), g = coef_splat(in), vg;
				if (g) {
					LLVMTypeRef vt = LLVMTypeOf(in);
					vg = splat_global(mod, LLVMGetInitializer(g), vt);
					if (!vg || !load_at_each_use(b, in, vg, vt, 64))
						rc = -1;
					else
						erase_if_unused(in); /* with its insertelement and load */
				} else if ((g = coef_load(in)) != NULL) {
					if (!load_at_each_use(b, in, g, LLVMTypeOf(in), LLVMGetAlignment(in)))
						rc = -1;
				} else if (!load_constants(mod, b, in, &bl))
					rc = -1;
				in = next;
			}
		}
	LLVMDisposeBuilder(b);
	return rc;
}
