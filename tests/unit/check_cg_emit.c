/* check_cg_emit.c - the code generator's IR emitter: kernels built by
 * hand, emitted, verified, optimized with the kernels' pipeline,
 * JIT-compiled with a plain LLJIT, run, and compared with the eager
 * kernels (libtjcore). */
#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/IRReader.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define TEST_CAPTURE_GRAPHS
#include "aot_decompose.h"
#include "cg_emit.h"
#include "cg_impl.h"
#include "inductor_lower.h"
#include "inductor_run.h"
#include "program_test_util.h"
#include "tensor_test_util.h"

/* ---- a tiny kernel builder: nodes appended as given, no hash-consing ---- */

struct tk {
	struct lkernel k;
	struct lsection sec[4];
	lref roots[4][16];
	struct lbuf bufs[16];
	struct lnode nodes[256];
};

static int name_seq;

static struct tk *tk_new(void)
{
	struct tk *t = calloc(1, sizeof *t);
	ck_assert_ptr_nonnull(t);
	t->k.nodes = t->nodes;
	t->k.cap = 256;
	t->k.sections = t->sec;
	t->k.bufs = t->bufs;
	for (int s = 0; s < 4; s++)
		t->sec[s].roots = t->roots[s];
	snprintf(t->k.name, sizeof t->k.name, "k_t%d", name_seq++);
	return t;
}

static lref tk_node(struct tk *t, int op, int sub, int dt, int var, lref a0, lref a1, lref a2)
{
	ck_assert_int_lt(t->k.nnodes, 256);
	struct lnode *n = &t->nodes[t->k.nnodes];
	*n = (struct lnode){.op = op, .sub = sub, .dt = dt, .var = var, .a = {a0, a1, a2}};
	return t->k.nnodes++;
}
static lref tk_int(struct tk *t, int64_t v)
{
	lref r = tk_node(t, LOP_CONST, 0, DT_INT64, 0, -1, -1, -1);
	t->nodes[r].c.i = v;
	return r;
}
static lref tk_flt(struct tk *t, int dt, double v)
{
	lref r = tk_node(t, LOP_CONST, 0, dt, 0, -1, -1, -1);
	t->nodes[r].c.f = v;
	return r;
}
static lref tk_sym(struct tk *t, int s)
{
	if (t->k.nsyms <= s)
		t->k.nsyms = s + 1;
	return tk_node(t, LOP_SYM, 0, DT_INT64, s, -1, -1, -1);
}
static int tk_var(struct tk *t, lref size, int section)
{
	int v = t->k.nvars++;
	t->k.vars[v] = (struct lvar){size, section};
	if (section < 0)
		t->k.nouter++;
	else
		t->sec[section].inner[t->sec[section].ninner++] = v;
	return v;
}
static lref tk_vref(struct tk *t, int v) { return tk_node(t, LOP_VAR, 0, DT_INT64, v, -1, -1, -1); }
static int tk_buf(struct tk *t, int dt, bool written)
{
	t->bufs[t->k.nbufs] = (struct lbuf){.dt = dt, .written = written, .numel = -1};
	return t->k.nbufs++;
}
static int tk_section(struct tk *t) { return t->k.nsections++; }
static void tk_root(struct tk *t, int s, lref r) { t->sec[s].roots[t->sec[s].nroots++] = r; }
static lref tk_load(struct tk *t, int buf, lref i) { return tk_node(t, LOP_LOAD, 0, t->bufs[buf].dt, buf, i, -1, -1); }
static lref tk_store(struct tk *t, int buf, lref i, lref v) { return tk_node(t, LOP_STORE, 0, t->bufs[buf].dt, buf, i, v, -1); }
static lref tk_bin(struct tk *t, int op, lref a, lref b)
{
	int dt = t->nodes[a].dt;
	if ((op >= BINOP_eq && op <= BINOP_ge) || op == BINOP_logical_and || op == BINOP_logical_or)
		dt = DT_BOOL;
	return tk_node(t, LOP_BINARY, op, dt, 0, a, b, -1);
}
static lref tk_un(struct tk *t, int op, lref a)
{
	return tk_node(t, LOP_UNARY, op, op == UNOP_logical_not ? DT_BOOL : t->nodes[a].dt, 0, a, -1, -1);
}
static lref tk_red(struct tk *t, int op, int dt, lref a) { return tk_node(t, LOP_REDUCE, op, dt, 0, a, -1, -1); }

/* ---- the JIT ---- */

static LLVMOrcLLJITRef jit;
static LLVMOrcThreadSafeContextRef tsc;
static LLVMTargetMachineRef tm;
static char *last_ir; /* the optimized IR of the last compile */
/* Check's messages have a length limit that a kernel's IR passes (the
 * failure then shows without its text): the IR goes to stderr */
#define ck_assert_ir(cond, ...)                                                                          \
	do {                                                                                                 \
		if (!(cond)) {                                                                               \
			fprintf(stderr, "%s\n", last_ir);                                                    \
			ck_abort_msg(__VA_ARGS__);                                                           \
		}                                                                                            \
	} while (0)

static bool want_asm;  /* compile_err also makes last_asm, its assembly */
static char *last_asm;

static void jit_init(void)
{
	if (jit)
		return;
	LLVMInitializeNativeTarget();
	LLVMInitializeNativeAsmPrinter();
	ck_assert_ptr_null(LLVMOrcCreateLLJIT(&jit, NULL));
	LLVMOrcDefinitionGeneratorRef gen;
	ck_assert_ptr_null(LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, LLVMOrcLLJITGetGlobalPrefix(jit),
										 NULL, NULL));
	LLVMOrcJITDylibAddGenerator(LLVMOrcLLJITGetMainJITDylib(jit), gen);
	tsc = LLVMOrcCreateNewThreadSafeContext();
	char *triple = LLVMGetDefaultTargetTriple(), *cpu = LLVMGetHostCPUName(), *feat = LLVMGetHostCPUFeatures();
	LLVMTargetRef target;
	ck_assert_int_eq(LLVMGetTargetFromTriple(triple, &target, NULL), 0);
	/* as codegen.c's (the JIT compiles the modules it is given with its
	 * own): the optimizer's cost model and the assembly are the
	 * kernels' */
	tm = LLVMCreateTargetMachine(target, triple, cpu, feat, LLVMCodeGenLevelDefault, LLVMRelocPIC,
				     LLVMCodeModelSmall);
	LLVMDisposeMessage(triple);
	LLVMDisposeMessage(cpu);
	LLVMDisposeMessage(feat);
}

/* fails with why when mod does not verify, the verifier's report and the
 * IR on stderr */
static void assert_verifies(LLVMModuleRef mod, const char *why)
{
	char *msg = NULL;
	if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
		char *ir = LLVMPrintModuleToString(mod);
		fprintf(stderr, "%s\n%s\n", msg, ir);
		ck_abort_msg("%s", why);
	}
	LLVMDisposeMessage(msg);
}

/* emits, verifies, optimizes (O2) and loads k; NULL with *err on an emit error */
static double last_emit_opt_ms;
static loop_kernel_fn compile_err(struct tk *t, char **err)
{
	jit_init();
	LLVMContextRef cx = LLVMOrcThreadSafeContextGetContext(tsc);
	LLVMModuleRef mod = LLVMModuleCreateWithNameInContext(t->k.name, cx);
	char *triple = LLVMGetTargetMachineTriple(tm);
	LLVMSetTarget(mod, triple);
	LLVMDisposeMessage(triple);
	LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
	LLVMSetModuleDataLayout(mod, td);
	LLVMDisposeTargetData(td);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (cg_emit_kernel(mod, &t->k, err) < 0) {
		/* what was added before the error is gone: the module still verifies */
		ck_assert_int_eq(LLVMVerifyModule(mod, LLVMReturnStatusAction, NULL), 0);
		LLVMDisposeModule(mod);
		return NULL;
	}
	assert_verifies(mod, "the module does not verify");
	/* as codegen.c; the options' switches steer only the default<O{n}>
	 * pipelines, not one that names its passes */
	LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
	ck_assert_ptr_null(LLVMRunPasses(mod, CG_KERNEL_PIPELINE, tm, po));
	LLVMDisposePassBuilderOptions(po);
	ck_assert_int_eq(cg_math_coefficients_in_memory(mod), 0);
	ck_assert_int_eq(cg_schedule_loops(mod), 0);
	assert_verifies(mod, "the module does not verify after tjit's passes");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	last_emit_opt_ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
	free(last_ir);
	char *ir = LLVMPrintModuleToString(mod);
	last_ir = strdup(ir);
	LLVMDisposeMessage(ir);
	if (getenv("CG_EMIT_DUMP")) /* the optimized IR of every kernel, for a look */
		fprintf(stderr, "%s\n", last_ir);
	if (want_asm) { /* the machine code, of a copy: the JIT takes mod */
		LLVMModuleRef copy = LLVMCloneModule(mod);
		LLVMMemoryBufferRef buf = NULL;
		char *msg = NULL;
		ck_assert_int_eq(LLVMTargetMachineEmitToMemoryBuffer(tm, copy, LLVMAssemblyFile, &msg, &buf), 0);
		free(last_asm);
		last_asm = strndup(LLVMGetBufferStart(buf), LLVMGetBufferSize(buf));
		LLVMDisposeMemoryBuffer(buf);
		LLVMDisposeModule(copy);
	}
	ck_assert_ptr_null(LLVMOrcLLJITAddLLVMIRModule(jit, LLVMOrcLLJITGetMainJITDylib(jit),
						       LLVMOrcCreateNewThreadSafeModule(mod, tsc)));
	LLVMOrcExecutorAddress addr = 0;
	ck_assert_ptr_null(LLVMOrcLLJITLookup(jit, &addr, t->k.name));
	return (loop_kernel_fn)(uintptr_t)addr;
}

static loop_kernel_fn compile(struct tk *t)
{
	char *err = NULL;
	loop_kernel_fn f = compile_err(t, &err);
	if (!f)
		ck_abort_msg("emit failed: %s", err ? err : "(no message)");
	return f;
}

/* ---- data ---- */

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static const double fspecial[] = {0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, INFINITY, -INFINITY, NAN,
				  1e-40, -1e-42, 1e30, -1e30, 88.7, 89.5, -103.0, -110.0, 0.3, 2.0, 7.0};
#define NFSPECIAL ((int)(sizeof fspecial / sizeof fspecial[0]))

static double rnd_float(void)
{
	double mag = ldexp((double)(rnd() % 1000000) / 1000000.0 + 0.5, (int)(rnd() % 24) - 12);
	return rnd() & 1 ? -mag : mag;
}

/* n values of dt at p; i64 and bool random, floats with the specials first */
static void fill(void *p, int dt, int64_t n, int kind)
{
	for (int64_t i = 0; i < n; i++) {
		double f = i < NFSPECIAL && kind == 0 ? fspecial[i] : rnd_float();
		int64_t v = (int64_t)(rnd() % 2001) - 1000;
		if (kind == 1) /* divisors and exponents: small, nonzero, nonnegative */
			v = (int64_t)(rnd() % 7) + 1, f = (double)v * (rnd() & 1 ? 1 : -1) * 0.75;
		if (kind == 0 && i == 1)
			v = INT64_MIN;
		switch (dt) {
		case DT_BOOL: ((uint8_t *)p)[i] = rnd() & 1; break;
		case DT_INT64: ((int64_t *)p)[i] = v; break;
		case DT_FLOAT32: ((float *)p)[i] = (float)f; break;
		default: ((double *)p)[i] = f; break;
		}
	}
}

static tensor *tensor_of(int dt, int64_t n, const void *data)
{
	tensor *x = tensor_empty(dt, 1, SHAPE(n));
	ck_assert_ptr_nonnull(x);
	memcpy(x->data, data, (size_t)n * dtype_size(dt));
	return x;
}

static double ulp_of(double v, int dt)
{
	int e;
	if (v == 0 || !isfinite(v))
		return dt == DT_FLOAT32 ? 0x1p-149 : 0x1p-1074;
	frexp(v, &e);
	double u = ldexp(1.0, e - (dt == DT_FLOAT32 ? 24 : 53));
	double lo = dt == DT_FLOAT32 ? 0x1p-149 : 0x1p-1074;
	return u < lo ? lo : u;
}

static double elem(const void *p, int dt, int64_t i)
{
	switch (dt) {
	case DT_BOOL: return ((const uint8_t *)p)[i];
	case DT_INT64: return (double)((const int64_t *)p)[i];
	case DT_FLOAT32: return ((const float *)p)[i];
	default: return ((const double *)p)[i];
	}
}

/* got == want: bit for bit (NaN = any NaN), or within ulps ulps of want;
 * a negative ulps counts -ulps ulps of |x| / 2 instead (gelu's measure) */
static void expect_same(const char *what, int dt, const void *got, const void *want, int64_t n, double ulps,
			const void *x, int xdt)
{
	size_t es = dtype_size(dt);
	for (int64_t i = 0; i < n; i++) {
		double g = elem(got, dt, i), w = elem(want, dt, i);
		bool ok;
		if (dtype_is_float(dt) && (isnan(g) || isnan(w)))
			ok = isnan(g) && isnan(w);
		else if (ulps == 0 || !dtype_is_float(dt) || !isfinite(w))
			ok = memcmp((const char *)got + i * es, (const char *)want + i * es, es) == 0;
		else if (ulps < 0)
			ok = fabs(g - w) <= -ulps * ulp_of(fabs(elem(x, xdt, i)) / 2, dt);
		else
			ok = fabs(g - w) <= ulps * ulp_of(w, dt);
		if (!ok)
			ck_abort_msg("%s: element %lld of %lld: got %.9g, want %.9g (input %.9g)", what, (long long)i,
				     (long long)n, g, w, x ? elem(x, xdt, i) : 0.0);
	}
}

static const int64_t sizes[] = {0, 1, 7, 33, 1000};

/* ---- pointwise ---- */

/* out[i] = op(x[i]) for i < s0 */
static struct tk *k_unary(int op, int dt)
{
	struct tk *t = tk_new();
	int v = tk_var(t, tk_sym(t, 0), -1);
	int x = tk_buf(t, dt, false), o = tk_buf(t, op == UNOP_logical_not ? DT_BOOL : dt, true);
	lref i = tk_vref(t, v);
	int s = tk_section(t);
	tk_root(t, s, tk_store(t, o, i, tk_un(t, op, tk_load(t, x, i))));
	return t;
}

/* ops whose float32 result is an approximation: ulps allowed against eager */
static double unary_ulps(int op, int dt)
{
	if (dt == DT_FLOAT64) /* float64: exp inline, the rest libm */
		return op == UNOP_exp || op == UNOP_sigmoid || op == UNOP_silu ? 4 : 0;
	switch (op) {
	case UNOP_exp:
	case UNOP_log:
	case UNOP_sigmoid:
	case UNOP_silu:
	case UNOP_sin:
	case UNOP_cos: return 4;
	case UNOP_tanh: return 6;
	case UNOP_gelu: return -8; /* of |x|/2: eager's own 1 + erff(x) cancels for x << 0 */
	default: return 0;
	}
}

/* the kernel f (one loop over n elements; bufs as it takes them, out
 * the one written at index out_buf) run once more element by element,
 * each alone in the scalar remainder: every element as in the whole run
 * (out), bit for bit. A kernel gives an element the same value wherever
 * it falls; LLVM's vector loop and scalar remainder may differ where an
 * operation rounds or fuses differently in one of them */
static void expect_lanes_agree(const char *what, loop_kernel_fn f, void **bufs, int out_buf, const void *out, int odt,
			       int64_t n)
{
	size_t es = dtype_size(odt);
	void *whole = bufs[out_buf], *alone = malloc((size_t)n * es + 8);
	ck_assert_ptr_nonnull(alone);
	bufs[out_buf] = alone;
	for (int64_t k = 0; k < n; k++)
		f(bufs, (int64_t[]){n}, k, k + 1);
	bufs[out_buf] = whole;
	for (int64_t k = 0; k < n; k++)
		ck_assert_msg(memcmp((const char *)out + k * es, (char *)alone + k * es, es) == 0,
			      "%s: element %lld differs run alone", what, (long long)k);
	free(alone);
}

START_TEST(test_unary_all)
{
	static const bool float_only[UNOP_COUNT] = {
		[UNOP_exp] = 1, [UNOP_log] = 1, [UNOP_sqrt] = 1, [UNOP_rsqrt] = 1, [UNOP_sin] = 1, [UNOP_cos] = 1,
		[UNOP_tanh] = 1, [UNOP_sigmoid] = 1, [UNOP_gelu] = 1, [UNOP_silu] = 1, [UNOP_reciprocal] = 1};
	for (int op = 0; op < UNOP_COUNT; op++)
		for (int dt = 0; dt < DT_COUNT; dt++) {
			if ((float_only[op] && !dtype_is_float(dt)) || (op == UNOP_neg && dt == DT_BOOL))
				continue;
			struct tk *t = k_unary(op, dt);
			loop_kernel_fn f = compile(t);
			int odt = op == UNOP_logical_not ? DT_BOOL : dt;
			for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
				int64_t n = sizes[si];
				void *in = malloc(n * 8 + 8), *out = malloc(n * 8 + 8);
				fill(in, dt, n, 0);
				void *bufs[2] = {in, out};
				int64_t syms[1] = {n};
				f(bufs, syms, 0, n);
				tensor *x = tensor_of(dt, n, in), *r = tensor_unary(op, x);
				ck_assert_ptr_nonnull(r);
				ck_assert_int_eq(r->dt, odt);
				char what[64];
				snprintf(what, sizeof what, "%s %s n=%lld", unop_names[op], dtype_name(dt), (long long)n);
				expect_same(what, odt, out, r->data, n, unary_ulps(op, dt), in, dt);
				if (n == 1000)
					expect_lanes_agree(what, f, bufs, 1, out, odt, n);
				tensor_decref(x);
				tensor_decref(r);
				free(in);
				free(out);
			}
			free(t);
		}
}
END_TEST

/* out[i] = a[i] op b[i] */
static struct tk *k_binary(int op, int dt)
{
	struct tk *t = tk_new();
	int v = tk_var(t, tk_sym(t, 0), -1);
	int a = tk_buf(t, dt, false), b = tk_buf(t, dt, false);
	lref i = tk_vref(t, v);
	lref r = tk_bin(t, op, tk_load(t, a, i), tk_load(t, b, i));
	int o = tk_buf(t, t->nodes[r].dt, true);
	tk_root(t, tk_section(t), tk_store(t, o, i, r));
	return t;
}

START_TEST(test_binary_all)
{
	for (int op = 0; op < BINOP_COUNT; op++)
		for (int dt = 0; dt < DT_COUNT; dt++) {
			bool bool_bad = op == BINOP_sub || op == BINOP_div || op == BINOP_pow || op == BINOP_floordiv ||
					op == BINOP_mod;
			if ((dt == DT_BOOL && bool_bad) || (dt == DT_INT64 && op == BINOP_div))
				continue;
			struct tk *t = k_binary(op, dt);
			loop_kernel_fn f = compile(t);
			int odt = t->bufs[2].dt;
			bool divisor = dt == DT_INT64 && (op == BINOP_floordiv || op == BINOP_mod || op == BINOP_pow);
			for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
				int64_t n = sizes[si];
				void *a = malloc(n * 8 + 8), *b = malloc(n * 8 + 8), *out = malloc(n * 8 + 8);
				fill(a, dt, n, 0);
				fill(b, dt, n, divisor ? 1 : 2);
				/* bufs[3]: where an int64 //, % or ** reports a failed check of its divisor or exponent */
				int32_t failed = 0;
				void *bufs[4] = {a, b, out, &failed};
				int64_t syms[1] = {n};
				f(bufs, syms, 0, n);
				ck_assert_int_eq(failed, 0);
				tensor *ta = tensor_of(dt, n, a), *tb = tensor_of(dt, n, b), *r = tensor_binary(op, ta, tb);
				ck_assert_msg(r != NULL, "%s", tj_error_peek());
				char what[64];
				snprintf(what, sizeof what, "%s %s n=%lld", binop_names[op], dtype_name(dt), (long long)n);
				expect_same(what, odt, out, r->data, n, 0, a, dt);
				if (n == 1000)
					expect_lanes_agree(what, f, bufs, 2, out, odt, n);
				tensor_decref(ta);
				tensor_decref(tb);
				tensor_decref(r);
				free(a);
				free(b);
				free(out);
			}
			free(t);
		}
}
END_TEST

START_TEST(test_where_cast_const)
{
	/* out[i] = where(c[i], float(x[i]) * 0.1, -1.5) for int64 x; y[i] = int64(out[i]) */
	struct tk *t = tk_new();
	int v = tk_var(t, tk_sym(t, 0), -1);
	int c = tk_buf(t, DT_BOOL, false), x = tk_buf(t, DT_INT64, false);
	int o = tk_buf(t, DT_FLOAT32, true), y = tk_buf(t, DT_INT64, true), z = tk_buf(t, DT_BOOL, true);
	lref i = tk_vref(t, v);
	lref xf = tk_node(t, LOP_CAST, 0, DT_FLOAT32, 0, tk_load(t, x, i), -1, -1);
	lref m = tk_bin(t, BINOP_mul, xf, tk_flt(t, DT_FLOAT32, 0.1));
	lref w = tk_node(t, LOP_WHERE, 0, DT_FLOAT32, 0, tk_load(t, c, i), m, tk_flt(t, DT_FLOAT32, -1.5));
	int s = tk_section(t);
	tk_root(t, s, tk_store(t, o, i, w));
	tk_root(t, s, tk_store(t, y, i, tk_node(t, LOP_CAST, 0, DT_INT64, 0, w, -1, -1)));
	tk_root(t, s, tk_store(t, z, i, tk_node(t, LOP_CAST, 0, DT_BOOL, 0, w, -1, -1)));
	loop_kernel_fn f = compile(t);
	uint8_t cv[5] = {1, 0, 1, 1, 1}, zv[5];
	int64_t xv[5] = {3, 4, -27, 0, 1000000000000}, yv[5];
	float ov[5];
	void *bufs[] = {cv, xv, ov, yv, zv};
	f(bufs, (int64_t[]){5}, 0, 5);
	float want[5] = {(float)3 * 0.1f, -1.5f, (float)-27 * 0.1f, 0.0f, 1e12f * 0.1f};
	for (int k = 0; k < 5; k++) {
		ck_assert_float_eq(ov[k], want[k]);
		ck_assert_int_eq(yv[k], (int64_t)want[k]);
		ck_assert_int_eq(zv[k], want[k] != 0);
	}
	free(t);
	/* float -> int64 out of range and NaN give INT64_MIN, as eager */
	t = tk_new();
	v = tk_var(t, tk_sym(t, 0), -1);
	x = tk_buf(t, DT_FLOAT64, false);
	y = tk_buf(t, DT_INT64, true);
	i = tk_vref(t, v);
	tk_root(t, tk_section(t), tk_store(t, y, i, tk_node(t, LOP_CAST, 0, DT_INT64, 0, tk_load(t, x, i), -1, -1)));
	f = compile(t);
	double dv[4] = {NAN, 1e300, -9.5, -1e19};
	f((void *[]){dv, yv}, (int64_t[]){4}, 0, 4);
	ck_assert_int_eq(yv[0], INT64_MIN);
	ck_assert_int_eq(yv[1], INT64_MIN);
	ck_assert_int_eq(yv[2], -9);
	ck_assert_int_eq(yv[3], INT64_MIN);
	free(t);
}
END_TEST

/* an outer loop split into [0, k) and [k, n) computes what one call does;
 * begin >= end writes nothing */
START_TEST(test_split_range)
{
	struct tk *t = k_unary(UNOP_tanh, DT_FLOAT32);
	loop_kernel_fn f = compile(t);
	enum { N = 1000 };
	float x[N], whole[N], parts[N];
	fill(x, DT_FLOAT32, N, 0);
	f((void *[]){x, whole}, (int64_t[]){N}, 0, N);
	for (int k = 0; k <= N; k += 333) {
		for (int i = 0; i < N; i++)
			parts[i] = 12345.0f;
		f((void *[]){x, parts}, (int64_t[]){N}, 0, k);
		f((void *[]){x, parts}, (int64_t[]){N}, k, N);
		ck_assert_int_eq(memcmp(whole, parts, sizeof whole), 0);
	}
	for (int i = 0; i < N; i++)
		parts[i] = 12345.0f;
	f((void *[]){x, parts}, (int64_t[]){N}, 7, 7);
	f((void *[]){x, parts}, (int64_t[]){N}, 9, 3);
	for (int i = 0; i < N; i++)
		ck_assert_float_eq(parts[i], 12345.0f);
	free(t);
}
END_TEST

/* ---- reductions ---- */

/* out[r] = op over c of un(x[r * s1 + c]) (x itself when un < 0), rows
 * s0, cols s1 */
static struct tk *k_rowred_of(int op, int dt, int acc, int un)
{
	struct tk *t = tk_new();
	int vr = tk_var(t, tk_sym(t, 0), -1);
	int s0 = tk_section(t), s1 = tk_section(t);
	lref cols = tk_sym(t, 1);
	int vc = tk_var(t, cols, s0);
	int x = tk_buf(t, dt, false), o = tk_buf(t, acc, true);
	lref ix = tk_bin(t, BINOP_add, tk_bin(t, BINOP_mul, tk_vref(t, vr), cols), tk_vref(t, vc));
	lref v = tk_load(t, x, ix);
	lref red = tk_red(t, op, acc, un < 0 ? v : tk_un(t, un, v));
	tk_root(t, s0, red);
	tk_root(t, s1, tk_store(t, o, tk_vref(t, vr), red));
	return t;
}

static struct tk *k_rowred(int op, int dt, int acc) { return k_rowred_of(op, dt, acc, -1); }

static void rowred_case(int op, int dt, int acc, int64_t rows, int64_t cols, bool nan_rows)
{
	struct tk *t = k_rowred(op, dt, acc);
	loop_kernel_fn f = compile(t);
	int64_t n = rows * cols;
	void *x = malloc(n * 8 + 8), *out = malloc(rows * 8 + 8);
	fill(x, dt, n, 2);
	if (nan_rows && dtype_is_float(dt) && rows > 2 && cols > 3) {
		((float *)x)[cols + 2] = NAN; /* row 1: a NaN in the middle */
		for (int64_t c = 0; c < cols; c++)
			((float *)x)[2 * cols + c] = -INFINITY; /* row 2: all -inf */
		((float *)x)[3] = ((float *)x)[1];    /* row 0: the max twice: the first index wins */
	}
	f((void *[]){x, out}, (int64_t[]){rows, cols}, 0, rows);
	tensor *tx = tensor_empty(dt, 2, SHAPE(rows, cols));
	memcpy(tx->data, x, n * dtype_size(dt));
	tensor *r = tensor_reduce(op, tx, (int[]){1}, 1, false, 0);
	ck_assert_msg(r != NULL, "%s", tj_error_peek());
	char what[64];
	snprintf(what, sizeof what, "%s %s %lldx%lld", redop_names[op], dtype_name(dt), (long long)rows,
		 (long long)cols);
	if (r->dt != acc) {
		tensor *c = tensor_to(r, acc);
		tensor_decref(r);
		r = c;
	}
	if (op == REDOP_sum && dtype_is_float(acc)) {
		/* a reassociated sum: within cols roundings of the sum of |x| */
		for (int64_t i = 0; i < rows; i++) {
			double mag = 0;
			for (int64_t c = 0; c < cols; c++)
				mag += fabs(elem(x, dt, i * cols + c));
			double g = elem(out, acc, i), w = elem(r->data, acc, i);
			ck_assert_msg(fabs(g - w) <= (cols + 1) * mag * (acc == DT_FLOAT32 ? 0x1p-24 : 0x1p-53),
				      "%s: row %lld: got %.9g, want %.9g", what, (long long)i, g, w);
		}
	} else { /* max, min, argmax, argmin, int sums: exact */
		expect_same(what, acc, out, r->data, rows, 0, NULL, 0);
	}
	tensor_decref(r);
	tensor_decref(tx);
	free(x);
	free(out);
	free(t);
}

START_TEST(test_row_reductions)
{
	for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
		int64_t c = sizes[si];
		rowred_case(REDOP_sum, DT_FLOAT32, DT_FLOAT32, 5, c, false);
		rowred_case(REDOP_sum, DT_FLOAT64, DT_FLOAT64, 3, c, false);
		rowred_case(REDOP_sum, DT_INT64, DT_INT64, 4, c, false);
		rowred_case(REDOP_sum, DT_BOOL, DT_INT64, 4, c, false);
		rowred_case(REDOP_prod, DT_INT64, DT_INT64, 2, c, false);
		if (c == 0) /* max of nothing is an error in eager */
			continue;
		for (int op = REDOP_max; op <= REDOP_argmin; op++) {
			if (op == REDOP_var)
				continue;
			int acc_f = op >= REDOP_argmax ? DT_INT64 : DT_FLOAT32;
			rowred_case(op, DT_FLOAT32, acc_f, 6, c, true);
			rowred_case(op, DT_INT64, DT_INT64, 3, c, false);
			rowred_case(op, DT_BOOL, op >= REDOP_argmax ? DT_INT64 : DT_BOOL, 3, c, false);
		}
	}
}
END_TEST

/* softmax over rows: three sections (max, sum of exp, the normalized store) */
START_TEST(test_softmax_sections)
{
	struct tk *t = tk_new();
	int vr = tk_var(t, tk_sym(t, 0), -1);
	lref cols = tk_sym(t, 1);
	int s0 = tk_section(t), s1 = tk_section(t), s2 = tk_section(t);
	int v1 = tk_var(t, cols, s0), v2 = tk_var(t, cols, s1), v3 = tk_var(t, cols, s2);
	int x = tk_buf(t, DT_FLOAT32, false), o = tk_buf(t, DT_FLOAT32, true);
	lref base = tk_bin(t, BINOP_mul, tk_vref(t, vr), cols);
	lref x1 = tk_load(t, x, tk_bin(t, BINOP_add, base, tk_vref(t, v1)));
	lref mx = tk_red(t, REDOP_max, DT_FLOAT32, x1);
	tk_root(t, s0, mx);
	lref x2 = tk_load(t, x, tk_bin(t, BINOP_add, base, tk_vref(t, v2)));
	lref sm = tk_red(t, REDOP_sum, DT_FLOAT32, tk_un(t, UNOP_exp, tk_bin(t, BINOP_sub, x2, mx)));
	tk_root(t, s1, sm);
	lref i3 = tk_bin(t, BINOP_add, base, tk_vref(t, v3));
	lref e3 = tk_un(t, UNOP_exp, tk_bin(t, BINOP_sub, tk_load(t, x, i3), mx));
	tk_root(t, s2, tk_store(t, o, i3, tk_bin(t, BINOP_div, e3, sm)));
	loop_kernel_fn f = compile(t);
	for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
		int64_t rows = 3, c = sizes[si], n = rows * c;
		float *in = malloc(n * 4 + 4), *out = malloc(n * 4 + 4);
		for (int64_t i = 0; i < n; i++)
			in[i] = (float)rnd_float() * 8;
		f((void *[]){in, out}, (int64_t[]){rows, c}, 0, rows);
		tensor *tx = tensor_empty(DT_FLOAT32, 2, SHAPE(rows, c));
		memcpy(tx->data, in, n * 4);
		tensor *r = tensor_softmax(tx, 1);
		ck_assert_ptr_nonnull(r);
		for (int64_t i = 0; i < n; i++)
			ck_assert_msg(fabsf(out[i] - ((float *)r->data)[i]) <= 1e-6f + 1e-5f * ((float *)r->data)[i],
				      "softmax %lld: got %g, want %g", (long long)i, out[i], ((float *)r->data)[i]);
		tensor_decref(r);
		tensor_decref(tx);
		free(in);
		free(out);
	}
	free(t);
}
END_TEST

/* ---- transcendentals ---- */

static double ref_fn(int op, double x)
{
	switch (op) {
	case UNOP_exp: return exp(x);
	case UNOP_log: return log(x);
	case UNOP_tanh: return tanh(x);
	case UNOP_sin: return sin(x);
	case UNOP_cos: return cos(x);
	/* eager's formula: exp(-x) overflows float32 below -88.7 */
	case UNOP_sigmoid: return 1 / (1 + (double)(float)exp(-x));
	case UNOP_silu: return x / (1 + (double)(float)exp(-x));
	default: return 0.5 * x * (1 + erf(x * M_SQRT1_2));
	}
}

/* a float32 sweep over every 509th bit pattern (both signs, denormals,
 * inf and NaN): the max error in ulps of the double-precision result
 * (gelu: in ulps of |x| / 2, as 1 + erf cancels) */
static double sweep(int op, double *eager_worst)
{
	struct tk *t = k_unary(op, DT_FLOAT32);
	loop_kernel_fn f = compile(t);
	enum { STEP = 509 };
	int64_t n = (int64_t)(0x100000000ull / STEP) + 1;
	float *x = malloc(n * 4), *y = malloc(n * 4);
	for (int64_t i = 0; i < n; i++) {
		uint32_t u = (uint32_t)(i * STEP);
		memcpy(&x[i], &u, 4);
	}
	f((void *[]){x, y}, (int64_t[]){n}, 0, n);
	tensor *tx = tensor_of(DT_FLOAT32, n, x), *ty = tensor_unary(op, tx);
	ck_assert_ptr_nonnull(ty);
	const float *ey = ty->data;
	double worst = 0;
	*eager_worst = 0;
	for (int64_t i = 0; i < n; i++) {
		double want = ref_fn(op, x[i]);
		float wf = (float)want;
		if (isnan(wf) || isnan(y[i])) {
			ck_assert_msg(isnan(wf) && isnan(y[i]), "%s(%a) = %a, want %a", unop_names[op], x[i], y[i], wf);
			continue;
		}
		if (isinf(wf) || isinf(y[i])) {
			ck_assert_msg(wf == y[i], "%s(%a) = %a, want %a", unop_names[op], x[i], y[i], wf);
			continue;
		}
		if ((op == UNOP_sigmoid || op == UNOP_silu) && fabs(want) < 0x1p-126) {
			/* eager's result is a denormal there: within 2^-126 of it */
			ck_assert_msg(fabs(y[i] - want) <= 0x1p-126, "%s(%a) = %a, want %a", unop_names[op], x[i], y[i], want);
			continue;
		}
		double u = op == UNOP_gelu ? ulp_of(fmax(0.5 * fabs(x[i]), 0x1p-126), DT_FLOAT32) : ulp_of(want, DT_FLOAT32);
		double err = fabs(y[i] - want) / u;
		if (err > worst)
			worst = err;
		if (isfinite(ey[i]) && fabs(ey[i] - want) / u > *eager_worst)
			*eager_worst = fabs(ey[i] - want) / u;
	}
	tensor_decref(tx);
	tensor_decref(ty);
	free(x);
	free(y);
	free(t);
	return worst;
}

START_TEST(test_transcendental_sweep)
{
	static const int ops[] = {UNOP_exp, UNOP_log, UNOP_tanh, UNOP_sigmoid, UNOP_silu, UNOP_gelu, UNOP_sin, UNOP_cos};
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
		double eager;
		double e = sweep(ops[i], &eager);
		printf("float32 %s: max error %.3f ulp (eager's: %.3f)\n", unop_names[ops[i]], e, eager);
		/* the documented bounds (doc/codegen-math.md) */
		double bound = ops[i] == UNOP_gelu ? eager + 1 : ops[i] == UNOP_tanh ? 4.5 : 3.0;
		ck_assert_msg(e <= bound, "%s: %.3f ulp", unop_names[ops[i]], e);
	}
}
END_TEST

/* float32 exp is correctly rounded (as libm's expf, 0.502 ulp, nearly
 * is): every 509th bit pattern whose exp is finite and not 0, against the
 * double exp rounded to float; at most one miss in 10^4, each within
 * 1 ulp. A faithful exp misses in one case in ten, and that prints:
 * exp(4.0) is 54.5981, one ulp above it 54.5982 */
START_TEST(test_exp_float32_rounding)
{
	struct tk *t = k_unary(UNOP_exp, DT_FLOAT32);
	loop_kernel_fn f = compile(t);
	/* n's integer from the bits of a sum, not a conversion (cg_math.c,
	 * round_int: AVX2 has none from double to int64) */
	ck_assert_msg(!strstr(last_ir, "fptosi"), "exp converts n from double");
	enum { STEP = 509 };
	int64_t n = (int64_t)(0x100000000ull / STEP) + 1, tried = 0, missed = 0;
	float *x = malloc(n * 4), *y = malloc(n * 4);
	for (int64_t i = 0; i < n; i++) {
		uint32_t u = (uint32_t)(i * STEP);
		memcpy(&x[i], &u, 4);
	}
	f((void *[]){x, y}, (int64_t[]){n}, 0, n);
	for (int64_t i = 0; i < n; i++) {
		float want = (float)exp((double)x[i]);
		if (isnan(want) || isinf(want) || want == 0)
			continue;
		tried++;
		missed += y[i] != want;
		ck_assert_msg(fabs((double)y[i] - want) <= ulp_of(want, DT_FLOAT32), "exp(%a) = %a, want %a", x[i], y[i], want);
	}
	printf("float32 exp: %lld of %lld not correctly rounded\n", (long long)missed, (long long)tried);
	ck_assert_msg(missed * 10000 <= tried, "float32 exp: %lld of %lld not correctly rounded", (long long)missed,
		      (long long)tried);
	free(x);
	free(y);
	free(t);
}
END_TEST

/* float64 exp over [-750, 720] (2 million points, and the specials)
 * against long double expl: the max error in ulps */
START_TEST(test_exp_float64)
{
	struct tk *t = k_unary(UNOP_exp, DT_FLOAT64);
	loop_kernel_fn f = compile(t);
	enum { N = 2000000 };
	double *x = malloc(N * 8), *y = malloc(N * 8), worst = 0;
	for (int i = 0; i < N; i++)
		x[i] = i < NFSPECIAL ? fspecial[i] : i % 2 ? -750 + 1470.0 * (double)(rnd() >> 11) * 0x1p-53
							   : rnd_float();
	x[0] = 709.782712893384, x[1] = 709.7827128933841, x[2] = -745.1332191019411, x[3] = -745.1332191019412;
	f((void *[]){x, y}, (int64_t[]){N}, 0, N);
	for (int i = 0; i < N; i++) {
		long double want = expl(x[i]);
		double wd = (double)want;
		if (isnan(wd) || isinf(wd) || wd == 0) {
			ck_assert_msg((isnan(wd) && isnan(y[i])) || wd == y[i], "exp(%a) = %a, want %a", x[i], y[i], wd);
			continue;
		}
		double err = (double)(fabsl((long double)y[i] - want) / (long double)ulp_of(wd, DT_FLOAT64));
		if (err > worst)
			worst = err;
	}
	printf("float64 exp: max error %.3f ulp\n", worst);
	ck_assert_msg(worst <= 2.0, "float64 exp: %.3f ulp", worst);
	free(x);
	free(y);
	free(t);
}
END_TEST

START_TEST(test_transcendental_edges)
{
	struct tk *te = k_unary(UNOP_exp, DT_FLOAT32), *tl = k_unary(UNOP_log, DT_FLOAT32),
		  *tt = k_unary(UNOP_tanh, DT_FLOAT32);
	loop_kernel_fn fe = compile(te), fl = compile(tl), ft = compile(tt);
	float x[8] = {-INFINITY, INFINITY, 88.72283935546875f, 88.7228317f, -103.9f, 0x1p-149f, -0.0f, NAN}, y[8];
	fe((void *[]){x, y}, (int64_t[]){8}, 0, 8);
	ck_assert(y[0] == 0 && y[1] == INFINITY && y[2] == INFINITY && isfinite(y[3]) && y[4] == 0x1p-149f &&
		  y[5] == 1 && y[6] == 1 && isnan(y[7]));
	float lx[8] = {0.0f, -0.0f, -1.0f, INFINITY, 0x1p-149f, 1.0f, NAN, -INFINITY};
	fl((void *[]){lx, y}, (int64_t[]){8}, 0, 8);
	ck_assert(y[0] == -INFINITY && y[1] == -INFINITY && isnan(y[2]) && y[3] == INFINITY && y[5] == 0 &&
		  isnan(y[6]) && isnan(y[7]));
	ck_assert_float_eq_tol(y[4], logf(0x1p-149f), 1e-5);
	float tx[6] = {INFINITY, -INFINITY, 1e30f, -0.0f, NAN, -9.5f};
	ft((void *[]){tx, y}, (int64_t[]){6}, 0, 6);
	ck_assert(y[0] == 1 && y[1] == -1 && y[2] == 1 && y[3] == 0 && signbit(y[3]) && isnan(y[4]) && y[5] == -1);
	/* never beyond 1: every float of [8, 9] */
	enum { NT = 1 << 17 };
	float *t8 = malloc(NT * sizeof *t8), *y8 = malloc(NT * sizeof *y8);
	for (int i = 0; i < NT; i++)
		t8[i] = 8.0f + (float)i * 0x1p-17f;
	ft((void *[]){t8, y8}, (int64_t[]){NT}, 0, NT);
	for (int i = 0; i < NT; i++)
		ck_assert_msg(y8[i] <= 1.0f, "tanh(%a) = %a", t8[i], y8[i]);
	free(t8);
	free(y8);
	free(te);
	free(tl);
	free(tt);
}
END_TEST

/* the name (%12) of the operand that ends just before end, copied to name */
static void operand_before(const char *start, const char *end, char *name, size_t size)
{
	const char *c = end - 1;
	while (c > start && *c != '%')
		c--;
	size_t n = 0;
	while (c < end && (*c == '%' || isalnum((unsigned char)*c) || *c == '.' || *c == '_') && n + 1 < size)
		name[n++] = *c++;
	name[n] = 0;
}

/* the line of last_ir (the optimized IR) that defines name, or NULL */
static const char *def_of(const char *name)
{
	char pat[80];
	snprintf(pat, sizeof pat, "  %s = ", name);
	return strstr(last_ir, pat);
}

/* whether the line d of last_ir is fma(p, d1 s, d1): a product of two
 * denominators, d1 (1 + p 2^n) as one FMA whose multiplicand an fmul by
 * its addend defines (tanh's own Q multiplies by x^2 and adds a
 * coefficient) */
static bool fma_of_product(const char *d)
{
	const char *eol = strchr(d, '\n'), *c = strchr(d, '('), *f = strstr(d, "@llvm.fmuladd.");
	const char *eq = strstr(d, " = ");
	if (!eol || !c || c > eol || !f || f > eol || !eq || eq > eol || strncmp(eq + 3, "call ", 5) != 0)
		return false;
	char ops[3][64];
	for (int k = 0; k < 3; k++) {
		c = strchr(c + 1, '%');
		const char *end = c ? c + 1 : NULL;
		while (end && (isalnum((unsigned char)*end) || *end == '.' || *end == '_'))
			end++;
		if (!c || end > eol)
			return false;
		operand_before(c, end, ops[k], sizeof ops[k]);
	}
	const char *m = def_of(ops[1]);
	const char *meol = m ? strchr(m, '\n') : NULL, *meq = m ? strstr(m, " = ") : NULL;
	if (!meol || !meq || meq > meol || strncmp(meq + 3, "fmul ", 5) != 0)
		return false;
	char addend[80];
	snprintf(addend, sizeof addend, "%s,", ops[2]); /* the fmul's first operand */
	const char *hit = strstr(m, addend);
	size_t n = strlen(ops[2]);
	const char *last = meol - n;
	return (hit && hit < meol) || (last > m && strncmp(last, ops[2], n) == 0 && last[-1] == ' ');
}

/* whether every fdiv of last_ir divides by a product of two denominators,
 * an fmul or an FMA of one (or a lane of one, where SLP paired the
 * remainder loop's two); false when there is no fdiv */
static bool divides_by_products(void)
{
	int ndiv = 0;
	for (const char *l = last_ir; (l = strstr(l, " = fdiv ")); l++, ndiv++) {
		const char *eol = strchr(l, '\n');
		char name[64];
		operand_before(l, eol ? eol : l + strlen(l), name, sizeof name);
		const char *d = def_of(name);
		if (d && strncmp(strstr(d, " = ") + 3, "extractelement ", 15) == 0) {
			const char *comma = strchr(d, ',');
			operand_before(d, comma, name, sizeof name);
			d = def_of(name);
		}
		if (!d || !(strncmp(strstr(d, " = ") + 3, "fmul ", 5) == 0 || fma_of_product(d)))
			return false;
	}
	return ndiv > 0;
}

/* a float32 product of a sigmoid and a tanh or sigmoid divides once
 * (cg_emit.c, fraction_product): out[f] = fa(x) * fb(y) for the pairs
 * below (two tanh, the last, keep their divisions), against eager's
 * tensors over a grid of specials (both sides of the clamps, inf, NaN,
 * -0) and random pairs. Within 8 ulp (the two functions' errors and the
 * product's rounding); within 12 below 2^-122, where tanh's quotient
 * P / (Q (1 + exp(-y))) is a denormal and x scales its rounding by up to
 * 8; within 2^-126 where eager's product is below it (a sigmoid of
 * x < -88); never beyond 1. Each fused pair, compiled alone, divides
 * only by products of denominators. */
START_TEST(test_fraction_products)
{
	static const int pairs[4][2] = {
		{UNOP_tanh, UNOP_sigmoid}, {UNOP_sigmoid, UNOP_sigmoid}, {UNOP_sigmoid, UNOP_tanh}, {UNOP_tanh, UNOP_tanh}};
	static const float grid[] = {-INFINITY, -200, -100, -88.5f, -88, -87, -86.7428436f, -20, -8.5f, -1, -1e-30f,
				     -0.0f, 0.0f, 1e-30f, 0.5f, 1, 3, 8.1770792f, 8.5f, 20, 88, 100, INFINITY, NAN};
	enum { NG = sizeof grid / sizeof grid[0], NR = 4096, N = NG * NG + NR };
	struct tk *t = tk_new();
	int v = tk_var(t, tk_sym(t, 0), -1), sec = tk_section(t);
	int xb = tk_buf(t, DT_FLOAT32, false), yb = tk_buf(t, DT_FLOAT32, false);
	lref i = tk_vref(t, v), x = tk_load(t, xb, i), y = tk_load(t, yb, i);
	for (int f = 0; f < 4; f++) {
		int o = tk_buf(t, DT_FLOAT32, true);
		tk_root(t, sec, tk_store(t, o, i, tk_bin(t, BINOP_mul, tk_un(t, pairs[f][0], x), tk_un(t, pairs[f][1], y))));
	}
	loop_kernel_fn fn = compile(t);
	for (int f = 0; f < 4; f++) {
		struct tk *t1 = tk_new();
		int v1 = tk_var(t1, tk_sym(t1, 0), -1), x1 = tk_buf(t1, DT_FLOAT32, false);
		int y1 = tk_buf(t1, DT_FLOAT32, false);
		lref i1 = tk_vref(t1, v1);
		lref p1 = tk_bin(t1, BINOP_mul, tk_un(t1, pairs[f][0], tk_load(t1, x1, i1)),
				 tk_un(t1, pairs[f][1], tk_load(t1, y1, i1)));
		tk_root(t1, tk_section(t1), tk_store(t1, tk_buf(t1, DT_FLOAT32, true), i1, p1));
		compile(t1);
		ck_assert_msg(divides_by_products() == (f < 3), "%s * %s: %s", unop_names[pairs[f][0]],
			      unop_names[pairs[f][1]], f < 3 ? "a division of its own is left" : "fused");
		free(t1);
	}
	float *xs = malloc(N * 4), *ys = malloc(N * 4), *out[4];
	for (int a = 0; a < NG; a++)
		for (int c = 0; c < NG; c++)
			xs[a * NG + c] = grid[a], ys[a * NG + c] = grid[c];
	for (int k = NG * NG; k < N; k++)
		xs[k] = (float)(rnd_float() * 8), ys[k] = (float)(rnd_float() * 8);
	for (int f = 0; f < 4; f++)
		out[f] = malloc(N * 4);
	fn((void *[]){xs, ys, out[0], out[1], out[2], out[3]}, (int64_t[]){N}, 0, N);
	tensor *tx = tensor_of(DT_FLOAT32, N, xs), *ty = tensor_of(DT_FLOAT32, N, ys);
	for (int f = 0; f < 4; f++) {
		tensor *fa = tensor_unary(pairs[f][0], tx), *fb = tensor_unary(pairs[f][1], ty);
		tensor *want = tensor_binary(BINOP_mul, fa, fb);
		ck_assert_ptr_nonnull(want);
		const float *w = want->data;
		for (int k = 0; k < N; k++) {
			float g = out[f][k];
			bool ok = isnan(w[k]) ? isnan(g)
				  : fabsf(w[k]) < 0x1p-126f ? fabsf(g - w[k]) <= 0x1p-126f
							   : fabs((double)g - w[k]) <= (fabsf(w[k]) < 0x1p-122f ? 12 : 8) *
											   ulp_of(w[k], DT_FLOAT32);
			ck_assert_msg(ok && !(fabsf(g) > 1), "%s(%a) * %s(%a) = %a, eager %a", unop_names[pairs[f][0]],
				      xs[k], unop_names[pairs[f][1]], ys[k], g, w[k]);
		}
		tensor_decref(fa);
		tensor_decref(fb);
		tensor_decref(want);
		free(out[f]);
	}
	tensor_decref(tx);
	tensor_decref(ty);
	free(xs);
	free(ys);
	free(t);
}
END_TEST

/* cg_schedule_loops on IR of its own: a loop block's longest chain first,
 * the block's instructions and names kept, a load after the store before
 * it (also of a global named as the constants are, but written), and a
 * block that calls out left in its order */
static const char sched_ir[] =
	"@tjc.t = internal global [4 x float] zeroinitializer\n"
	"declare float @ext(float)\n"
	"define void @f(ptr noalias %a, ptr noalias %o, i64 %n) {\n"
	"entry:\n"
	"  br label %loop\n"
	"loop:\n"
	"  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]\n"
	"  %pa = getelementptr float, ptr %a, i64 %i\n"
	"  %x = load float, ptr %pa\n"
	"  %short = fadd float %x, 1.0\n"
	"  %long1 = fmul float %x, %x\n"
	"  %long2 = fdiv float %long1, 3.0\n"
	"  %long3 = fdiv float %long2, 5.0\n"
	"  %r = fadd float %long3, %short\n"
	"  %po = getelementptr float, ptr %o, i64 %i\n"
	"  store float %r, ptr %po\n"
	"  %again = load float, ptr %po\n"
	"  %pt = getelementptr [4 x float], ptr @tjc.t, i64 0, i64 %i\n"
	"  store float %r, ptr %pt\n"
	"  %table = load float, ptr @tjc.t\n"
	"  %sum = fadd float %table, %again\n"
	"  store float %sum, ptr %pa\n"
	"  %i1 = add i64 %i, 1\n"
	"  %c = icmp ult i64 %i1, %n\n"
	"  br i1 %c, label %loop, label %calls\n"
	"calls:\n"
	"  %j = phi i64 [ 0, %loop ], [ %j1, %calls ]\n"
	"  %cs = call float @ext(float 1.0)\n"
	"  %cl1 = fmul float %cs, %cs\n"
	"  %cl2 = fdiv float %cl1, 3.0\n"
	"  %j1 = add i64 %j, 1\n"
	"  %d = icmp ult i64 %j1, %n\n"
	"  br i1 %d, label %calls, label %exit\n"
	"exit:\n"
	"  ret void\n"
	"}\n";

/* the position of "  %name =" (or of the store) in ir's text */
static const char *at(const char *ir, const char *what)
{
	const char *p = strstr(ir, what);
	ck_assert_msg(p != NULL, "%s is not in the IR", what);
	return p;
}

static void assert_before(const char *ir, const char *first, const char *then)
{
	ck_assert_msg(at(ir, first) < at(ir, then), "%s is not before %s", first, then);
}

START_TEST(test_schedule_loops)
{
	LLVMContextRef cx = LLVMContextCreate();
	LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(sched_ir, sizeof sched_ir - 1, "sched");
	LLVMModuleRef mod = NULL;
	char *msg = NULL;
	ck_assert_msg(LLVMParseIRInContext(cx, buf, &mod, &msg) == 0, "%s", msg ? msg : "");
	char *before = LLVMPrintModuleToString(mod);
	ck_assert_int_eq(cg_schedule_loops(mod), 0);
	assert_verifies(mod, "the module does not verify after cg_schedule_loops");
	char *ir = LLVMPrintModuleToString(mod);
	ck_assert_uint_eq(strlen(ir), strlen(before)); /* the same lines, names kept */
	/* the long chain (three instructions to the sum) before the short one */
	assert_before(ir, "  %long1 =", "  %short =");
	assert_before(ir, "  %long3 =", "  %r =");
	/* memory keeps its order: the load, the store, the load after it */
	assert_before(ir, "  %x =", "  store float %r");
	assert_before(ir, "  store float %r", "  %again =");
	assert_before(ir, "  store float %r, ptr %pt", "  %table =");
	/* the block that calls out is as it was */
	ck_assert_str_eq(at(ir, "calls:"), at(before, "calls:"));
	LLVMDisposeMessage(ir);
	LLVMDisposeMessage(before);
	LLVMDisposeModule(mod);
	LLVMContextDispose(cx);
}
END_TEST

/* a kernel gives each element the same value wherever it falls: in the
 * vector loop, or alone in the scalar remainder (where the SLP vectorizer
 * may pack operations in pairs). Its outputs: relu(pair(x, y) - z / 3)
 * for the four pairs of test_fraction_products, the tanh * sigmoid
 * product p itself, p - (-y) z and p + (-x) z (each product must round
 * before the addition, as eager's: InstCombine makes them p + y z and
 * p - x z, and a flag of the addition's would pass to the product), and
 * p - p, which is 0 */
START_TEST(test_lanes_agree)
{
	static const int pairs[4][2] = {
		{UNOP_tanh, UNOP_sigmoid}, {UNOP_sigmoid, UNOP_sigmoid}, {UNOP_sigmoid, UNOP_tanh}, {UNOP_tanh, UNOP_tanh}};
	enum { NOUT = 8, N = 1003 };
	struct tk *t = tk_new();
	int v = tk_var(t, tk_sym(t, 0), -1), sec = tk_section(t);
	int xb = tk_buf(t, DT_FLOAT32, false), yb = tk_buf(t, DT_FLOAT32, false), zb = tk_buf(t, DT_FLOAT32, false);
	lref i = tk_vref(t, v), x = tk_load(t, xb, i), y = tk_load(t, yb, i), z = tk_load(t, zb, i);
	lref third = tk_bin(t, BINOP_div, z, tk_flt(t, DT_FLOAT32, 3));
	for (int f = 0; f < 4; f++) {
		lref prod = tk_bin(t, BINOP_mul, tk_un(t, pairs[f][0], x), tk_un(t, pairs[f][1], y));
		tk_root(t, sec, tk_store(t, tk_buf(t, DT_FLOAT32, true), i, tk_un(t, UNOP_relu, tk_bin(t, BINOP_sub, prod, third))));
	}
	lref p = tk_bin(t, BINOP_mul, tk_un(t, UNOP_tanh, x), tk_un(t, UNOP_sigmoid, y));
	lref ny_z = tk_bin(t, BINOP_mul, tk_un(t, UNOP_neg, y), z), nx_z = tk_bin(t, BINOP_mul, tk_un(t, UNOP_neg, x), z);
	tk_root(t, sec, tk_store(t, tk_buf(t, DT_FLOAT32, true), i, p));
	tk_root(t, sec, tk_store(t, tk_buf(t, DT_FLOAT32, true), i, tk_bin(t, BINOP_sub, p, ny_z)));
	tk_root(t, sec, tk_store(t, tk_buf(t, DT_FLOAT32, true), i, tk_bin(t, BINOP_add, p, nx_z)));
	tk_root(t, sec, tk_store(t, tk_buf(t, DT_FLOAT32, true), i, tk_bin(t, BINOP_sub, p, p)));
	loop_kernel_fn fn = compile(t);
	float *in[3], *whole[NOUT], *alone[NOUT];
	for (int b = 0; b < 3; b++) {
		in[b] = malloc(N * sizeof(float));
		for (int k = 0; k < N; k++)
			in[b][k] = (float)(rnd_float() * 6);
	}
	for (int o = 0; o < NOUT; o++) {
		whole[o] = malloc(N * sizeof(float));
		alone[o] = malloc(N * sizeof(float));
	}
	void *bufs[3 + NOUT] = {in[0], in[1], in[2]};
	for (int o = 0; o < NOUT; o++)
		bufs[3 + o] = whole[o];
	fn(bufs, (int64_t[]){N}, 0, N);
	for (int o = 0; o < NOUT; o++)
		bufs[3 + o] = alone[o];
	for (int k = 0; k < N; k++)
		fn(bufs, (int64_t[]){N}, k, k + 1);
	for (int k = 0; k < N; k++) {
		volatile float pk = whole[4][k], nyz = -in[1][k] * in[2][k], nxz = -in[0][k] * in[2][k];
		for (int o = 0; o < NOUT; o++)
			ck_assert_msg(memcmp(&whole[o][k], &alone[o][k], sizeof(float)) == 0,
				      "output %d of element %d: %a in the whole range, %a alone", o, k, whole[o][k], alone[o][k]);
		ck_assert_msg(whole[5][k] == pk - nyz && whole[6][k] == pk + nxz, "p - (-y) z or p + (-x) z fused at %d: %a, %a",
			      k, whole[5][k], whole[6][k]);
		ck_assert_msg(whole[7][k] == 0, "p - p = %a at %d", whole[7][k], k);
	}
	for (int b = 0; b < 3; b++)
		free(in[b]);
	for (int o = 0; o < NOUT; o++) {
		free(whole[o]);
		free(alone[o]);
	}
	free(t);
}
END_TEST

/* every float op of a NaN the compiler can see (x * 0 + nan folds to
 * nan), and of an infinity (x * 0 + inf, at run time): eager's result.
 * sigmoid's exp converted the NaN to an integer, poison in LLVM's rules,
 * and the folded kernel stored nothing (cg_math.c, round_int freezes it) */
START_TEST(test_unary_of_constant_nan)
{
	enum { N = 19 };
	static const double special[] = {NAN, INFINITY, -INFINITY};
	for (int sp = 0; sp < 3 * 2; sp++) {
		int dt = sp % 2 ? DT_FLOAT64 : DT_FLOAT32;
		double c = special[sp / 2];
		for (int op = 0; op < UNOP_COUNT; op++) {
			if (op == UNOP_logical_not) /* a bool result */
				continue;
			struct tk *t = tk_new();
			int v = tk_var(t, tk_sym(t, 0), -1);
			int xb = tk_buf(t, dt, false), o = tk_buf(t, dt, true);
			lref i = tk_vref(t, v);
			lref nan = tk_bin(t, BINOP_add, tk_bin(t, BINOP_mul, tk_load(t, xb, i), tk_flt(t, dt, 0)),
					  tk_flt(t, dt, c));
			tk_root(t, tk_section(t), tk_store(t, o, i, tk_un(t, op, nan)));
			loop_kernel_fn f = compile(t);
			double in[N], out[N];
			float inf32[N], outf32[N];
			for (int k = 0; k < N; k++)
				in[k] = k - 9, inf32[k] = (float)(k - 9), out[k] = 12345, outf32[k] = 12345;
			void *bufs[2] = {dt == DT_FLOAT32 ? (void *)inf32 : (void *)in,
					 dt == DT_FLOAT32 ? (void *)outf32 : (void *)out};
			f(bufs, (int64_t[]){N}, 0, N);
			float c32 = (float)c;
			tensor *x = tensor_of(dt, 1, dt == DT_FLOAT32 ? (void *)&c32 : (void *)&c);
			tensor *r = tensor_unary(op, x);
			ck_assert_ptr_nonnull(r);
			double want = dt == DT_FLOAT32 ? ((float *)r->data)[0] : ((double *)r->data)[0];
			for (int k = 0; k < N; k++) {
				double got = dt == DT_FLOAT32 ? outf32[k] : out[k];
				ck_assert_msg(isnan(want) ? isnan(got) : got == want, "%s %s of a constant %g: %g, eager %g",
					      unop_names[op], dtype_name(dt), c, got, want);
			}
			tensor_decref(x);
			tensor_decref(r);
			free(t);
		}
	}
}
END_TEST

/* relu keeps NaN and gives +0 for -0, as eager (a compare and an and) */
START_TEST(test_relu_zero_nan)
{
	struct tk *t = k_unary(UNOP_relu, DT_FLOAT32);
	loop_kernel_fn f = compile(t);
	enum { N = 37 };
	float x[N], y[N];
	for (int k = 0; k < N; k++)
		x[k] = k % 4 == 0 ? -0.0f : k % 4 == 1 ? NAN : k % 4 == 2 ? (float)-k : (float)k;
	f((void *[]){x, y}, (int64_t[]){N}, 0, N);
	for (int k = 0; k < N; k++)
		ck_assert_msg(k % 4 == 1 ? isnan(y[k]) : k % 4 == 3 ? y[k] == x[k] : y[k] == 0 && !signbit(y[k]),
			      "relu(%a) = %a", x[k], y[k]);
	free(t);
}
END_TEST

/* ---- vectorization, errors, speed ---- */

/* relu(tanh(x * 2 + 1) * sigmoid(x) - x / 3): issue 12's 8-op chain */
static struct tk *k_chain(void)
{
	struct tk *t = tk_new();
	int v = tk_var(t, tk_sym(t, 0), -1);
	int xb = tk_buf(t, DT_FLOAT32, false), o = tk_buf(t, DT_FLOAT32, true);
	lref i = tk_vref(t, v), x = tk_load(t, xb, i);
	lref a = tk_bin(t, BINOP_add, tk_bin(t, BINOP_mul, x, tk_flt(t, DT_FLOAT32, 2)), tk_flt(t, DT_FLOAT32, 1));
	lref b = tk_bin(t, BINOP_mul, tk_un(t, UNOP_tanh, a), tk_un(t, UNOP_sigmoid, x));
	lref c = tk_un(t, UNOP_relu, tk_bin(t, BINOP_sub, b, tk_bin(t, BINOP_div, x, tk_flt(t, DT_FLOAT32, 3))));
	tk_root(t, tk_section(t), tk_store(t, o, i, tk_un(t, UNOP_exp, tk_un(t, UNOP_neg, c))));
	return t;
}

START_TEST(test_vectorized)
{
	struct tk *t = k_chain();
	compile(t);
	printf("emit + optimize a 10-op float32 kernel: %.2f ms\n", last_emit_opt_ms);
	ck_assert_ir(strstr(last_ir, "x float>") != NULL, "the chain did not vectorize (its IR is on stderr)");
	ck_assert_ir(strstr(last_ir, "@expf") == NULL && strstr(last_ir, "@tanhf") == NULL,
		     "a libm call is left (its IR is on stderr)");
	/* the polynomials' coefficients: loads of globals where the host has
	 * 16 vector registers (cg_math.c, kc), constants with AVX-512 */
	char *features = LLVMGetHostCPUFeatures(), *list = NULL;
	ck_assert(asprintf(&list, ",%s,", features) > 0);
	bool wide = strstr(list, ",+avx512f,") != NULL, avx = strstr(list, ",+avx,") != NULL;
	bool fma = strstr(list, ",+fma,") != NULL;
	free(list);
	LLVMDisposeMessage(features);
	bool loads = strstr(last_ir, "load float, ptr @tjc.f32.") != NULL;
	ck_assert_msg(loads == (avx && !wide), "coefficients %s on a host %s AVX-512",
		      loads ? "loaded" : "constant", wide ? "with" : "without");
	free(t);
	/* a polynomial's step is one FMA instruction on a host with FMA
	 * (cg_math.c, fma_): at least 27 in the vector loop (tanh's 9 steps,
	 * sigmoid's exp 8, exp's 10), and as many in the scalar one, which the
	 * SLP vectorizer may pack in pairs where vectors are wide */
	t = k_chain();
	want_asm = true;
	compile(t);
	want_asm = false;
	int nfma = 0, nfma_mem = 0, nfma_scalar_mem = 0, nstack = 0;
	static const char *const fmas[] = {"\tvfmadd", "\tvfnmadd", "\tvfmsub", "\tvfnmsub"};
	for (const char *p = last_asm; (p = strstr(p, "\tvf")) != NULL; p++)
		for (int f = 0; f < 4; f++)
			if (strncmp(p, fmas[f], strlen(fmas[f])) == 0) {
				nfma++;
				const char *eol = strchr(p, '\n');
				const char *c = strstr(p, "tjc.v"), *cs = strstr(p, "tjc.f");
				nfma_mem += c && (!eol || c < eol);
				nfma_scalar_mem += cs && (!eol || cs < eol);
			}
	for (const char *p = last_asm; (p = strstr(p, "(%rsp)")) != NULL; p++)
		nstack++;
	printf("the chain's kernel: %d FMA instructions (host %s FMA), %d of them reading a coefficient's "
	       "vector, %d its scalar; %d operands on the stack\n",
	       nfma, fma ? "with" : "without", nfma_mem, nfma_scalar_mem, nstack);
	if (fma)
		ck_assert_msg(nfma >= 27, "%d FMA instructions: a polynomial's steps did not fuse", nfma);
	/* each use of a coefficient in the vector loop loads a full-width
	 * copy, which the FMA reads as its operand, and so does each use of
	 * a constant (x / 3's 3); the scalar loop's FMAs read the scalar
	 * globals: none is kept across the loop, nor spilled (cg_math.c,
	 * cg_math_coefficients_in_memory). On an AVX2 host, 33, 23 and 0
	 * stack operands; without it, 0, 0 and 71; without the constants'
	 * loads, 2 stack operands; without the scalar loop's, 0 scalar and
	 * 61 */
	if (loads && fma) {
		ck_assert_ir(strstr(last_ir, " x float>, ptr @tjc.v") != NULL,
			     "no vector load of a coefficient (its IR is on stderr)");
		ck_assert_ir(strstr(last_ir, " x float>, ptr @tjc.v8.f32.40400000") != NULL,
			     "no vector load of the constant 3 (its IR is on stderr)");
		ck_assert_msg(nfma_mem >= 20, "%d FMA instructions read a coefficient's copy", nfma_mem);
		ck_assert_msg(nfma_scalar_mem >= 12, "%d scalar FMA instructions read a coefficient", nfma_scalar_mem);
		ck_assert_msg(nstack < 16, "%d operands on the stack: coefficients were spilled", nstack);
	}
	free(t);
	/* a float32 row sum vectorizes too (reassociated accumulation) */
	t = k_rowred(REDOP_sum, DT_FLOAT32, DT_FLOAT32);
	compile(t);
	ck_assert_ir(strstr(last_ir, "x float>") != NULL, "the row sum did not vectorize (its IR is on stderr)");
	/* its accumulator (an alloca in the emitted IR) is a register */
	ck_assert_ir(strstr(last_ir, "alloca") == NULL, "an accumulator stayed in memory (its IR is on stderr)");
	free(t);
}
END_TEST

/* the accumulators of the main vector loops in last_ir: the vectorizer's
 * %vec.phi of float vectors in its vector.body blocks (not in the
 * epilogue's vec.epilog.vector.body, which it adds where vectors are
 * wide) */
static int vector_phis(void)
{
	int n = 0;
	bool main_body = false;
	const char *next;
	for (const char *line = last_ir; line && *line; line = next) {
		next = strchr(line, '\n');
		size_t len = next ? (size_t)(next++ - line) : strlen(line);
		if (len && line[0] != ' ' && line[0] != ';') /* a block's label, or define, or } */
			main_body = strncmp(line, "vector.body", 11) == 0;
		if (!main_body || strncmp(line, "  %vec.phi", 10) != 0)
			continue;
		const char *type = memmem(line, len, " = phi <", 8);
		const char *end = type ? memchr(type, '>', len - (size_t)(type - line)) : NULL;
		if (end && (memmem(type, (size_t)(end - type), " x float", 8) ||
			    memmem(type, (size_t)(end - type), " x double", 9)))
			n++;
	}
	return n;
}

/* A row sum is interleaved (several accumulators hide the additions'
 * latency); a row sum of gelu is not (cg_emit.c, no_interleave): one copy
 * of its polynomial is work enough, and each copy costs compile time.
 * (LLVM interleaves gelu's four times on its own, and exp's not at all.) */
START_TEST(test_interleave)
{
	struct tk *t = k_rowred(REDOP_sum, DT_FLOAT32, DT_FLOAT32);
	compile(t);
	int plain = vector_phis();
	free(t);
	t = k_rowred_of(REDOP_sum, DT_FLOAT32, DT_FLOAT32, UNOP_gelu);
	loop_kernel_fn f = compile(t);
	int with_gelu = vector_phis();
	printf("a row sum's vector accumulators: %d; of gelu: %d\n", plain, with_gelu);
	ck_assert_ir(plain >= 2, "the row sum has %d accumulators (its IR is on stderr)", plain);
	ck_assert_ir(with_gelu == 1, "the row sum of gelu has %d accumulators (its IR is on stderr)", with_gelu);
	enum { R = 3, C = 37 };
	float x[R * C], out[R];
	for (int k = 0; k < R * C; k++)
		x[k] = (float)(k % 11) * 0.25f - 1;
	f((void *[]){x, out}, (int64_t[]){R, C}, 0, R);
	for (int r = 0; r < R; r++) {
		double want = 0;
		for (int c = 0; c < C; c++)
			want += 0.5 * x[r * C + c] * (1 + erf(x[r * C + c] / sqrt(2)));
		ck_assert_msg(fabs(out[r] - want) <= 1e-5 * fabs(want) + 1e-6, "row %d: %g, want %g", r, out[r], want);
	}
	free(t);
}
END_TEST

/* x[n, 2] + y[2]: the kernels' pipeline makes the inner loop of 2 straight
 * code (jump threading and simplifycfg, as default<O2>), so that the
 * outer loop vectorizes; the result is the sum */
START_TEST(test_inner_loop_of_two)
{
	struct tk *t = tk_new();
	int vr = tk_var(t, tk_sym(t, 0), -1), vc = tk_var(t, tk_int(t, 2), -1);
	int xb = tk_buf(t, DT_FLOAT32, false), yb = tk_buf(t, DT_FLOAT32, false), o = tk_buf(t, DT_FLOAT32, true);
	lref i = tk_bin(t, BINOP_add, tk_bin(t, BINOP_mul, tk_vref(t, vr), tk_int(t, 2)), tk_vref(t, vc));
	lref sum = tk_bin(t, BINOP_add, tk_load(t, xb, i), tk_load(t, yb, tk_vref(t, vc)));
	tk_root(t, tk_section(t), tk_store(t, o, i, sum));
	loop_kernel_fn f = compile(t);
	/* vectors across rows (vectorizing the inner loop alone makes
	 * vectors of 2) */
	bool across = strstr(last_ir, "<8 x float>") || strstr(last_ir, "<16 x float>") ||
		      strstr(last_ir, "<32 x float>");
	ck_assert_ir(across, "the outer loop did not vectorize (its IR is on stderr)");
	enum { N = 37 };
	float x[2 * N], y[2] = {0.5f, -3.0f}, out[2 * N];
	for (int k = 0; k < 2 * N; k++)
		x[k] = (float)k;
	f((void *[]){x, y, out}, (int64_t[]){N}, 0, N);
	for (int k = 0; k < 2 * N; k++)
		ck_assert_float_eq(out[k], (float)k + y[k % 2]);
	free(t);
}
END_TEST

static void expect_emit_error(struct tk *t, const char *want)
{
	char *err = NULL;
	ck_assert_ptr_null(compile_err(t, &err));
	ck_assert_ptr_nonnull(err);
	ck_assert_msg(strstr(err, want) && strstr(err, t->k.name), "message: %s", err);
	free(err);
	free(t);
}

START_TEST(test_errors)
{
	/* exp on int64 (the lowering casts first) */
	struct tk *t = tk_new();
	int v = tk_var(t, tk_sym(t, 0), -1);
	int x = tk_buf(t, DT_INT64, false), o = tk_buf(t, DT_INT64, true);
	lref i = tk_vref(t, v);
	tk_root(t, tk_section(t), tk_store(t, o, i, tk_un(t, UNOP_exp, tk_load(t, x, i))));
	expect_emit_error(t, "node 3 (unary): unary exp on int64 is not supported");
	/* bool - bool */
	t = k_binary(BINOP_sub, DT_BOOL);
	expect_emit_error(t, "binary sub on bool is not supported");
	/* a reduction read in its own section */
	t = k_rowred(REDOP_sum, DT_FLOAT32, DT_FLOAT32);
	t->sec[0].roots[t->sec[0].nroots++] = t->sec[1].roots[0];
	expect_emit_error(t, "the reduction is read before its section ends");
	/* var out of its loop, store of the wrong dtype, an unknown symbol */
	t = k_unary(UNOP_neg, DT_FLOAT32);
	t->nodes[t->sec[0].roots[0]].a[0] = tk_vref(t, 5);
	expect_emit_error(t, "var 5 out of range");
	t = k_unary(UNOP_neg, DT_FLOAT32);
	t->bufs[1].dt = DT_INT64;
	expect_emit_error(t, "store of float32 into a int64 buffer");
	t = k_unary(UNOP_neg, DT_FLOAT32);
	t->k.nsyms = 0;
	expect_emit_error(t, "symbol 0 out of range");
}
END_TEST

/* a kernel with no outer var runs its sections once; int64 index math
 * (floordiv, mod) on symbols; a sum of a no-loop section */
START_TEST(test_no_outer_and_index_math)
{
	struct tk *t = tk_new();
	int s0 = tk_section(t), s1 = tk_section(t);
	lref n = tk_sym(t, 0);
	int vi = tk_var(t, n, s0);
	int x = tk_buf(t, DT_INT64, false), o = tk_buf(t, DT_INT64, true);
	lref iv = tk_vref(t, vi);
	/* sum over i of x[i] // 3 * 100 + x[i] % -4 */
	lref xi = tk_load(t, x, iv);
	lref val = tk_bin(t, BINOP_add, tk_bin(t, BINOP_mul, tk_bin(t, BINOP_floordiv, xi, tk_int(t, 3)), tk_int(t, 100)),
			  tk_bin(t, BINOP_mod, xi, tk_int(t, -4)));
	lref red = tk_red(t, REDOP_sum, DT_INT64, val);
	tk_root(t, s0, red);
	tk_root(t, s1, tk_store(t, o, tk_int(t, 0), red));
	tk_root(t, s1, tk_store(t, o, tk_int(t, 1), tk_bin(t, BINOP_floordiv, n, tk_int(t, 2))));
	loop_kernel_fn f = compile(t);
	int64_t xv[6] = {-7, 7, -1, 0, 10, INT64_MIN}, out[2] = {0, 0};
	f((void *[]){xv, out}, (int64_t[]){6}, 0, 1);
	int64_t want = 0;
	static const int64_t fd[6] = {-3, 2, -1, 0, 3, -3074457345618258603}, md[6] = {-3, -1, -1, 0, -2, 0};
	for (int k = 0; k < 6; k++)
		want = (int64_t)((uint64_t)want + (uint64_t)fd[k] * 100 + (uint64_t)md[k]);
	ck_assert_int_eq(out[0], want);
	ck_assert_int_eq(out[1], 3);
	out[0] = 42;
	f((void *[]){xv, out}, (int64_t[]){6}, 0, 0);
	ck_assert_int_eq(out[0], 42);
	free(t);
}
END_TEST

/* the kernels' checks of their data (cg_emit.c): an int64 // or % by a
 * divisor of 0, or ** to a negative exponent, read from a buffer sets the
 * int32 at bufs[nbufs] to 1 wherever it is in the range run, and only
 * then (-1 divides, 0 is an exponent); a constant operand or index
 * arithmetic is not checked, a constant dividend does not exempt its
 * divisor, nor a where its third operand */
static int32_t run_checked(loop_kernel_fn f, int nbufs, void **bufs, int64_t n)
{
	int32_t failed = 0;
	bufs[nbufs] = &failed;
	f(bufs, (int64_t[]){n}, 0, n);
	return failed;
}

START_TEST(test_data_checks)
{
	int64_t a[40], b[40], out[40];
	for (int i = 0; i < 40; i++)
		a[i] = 7 - i, b[i] = i % 2 ? -1 : 3;
	void *bufs[4] = {a, b, out, NULL};
	static const int ops[3] = {BINOP_floordiv, BINOP_mod, BINOP_pow};
	for (int o = 0; o < 3; o++) {
		struct tk *t = k_binary(ops[o], DT_INT64);
		loop_kernel_fn f = compile(t);
		for (int i = 0; i < 40; i++)
			b[i] = ops[o] == BINOP_pow ? i % 3 : (i % 2 ? -1 : 3);
		for (int64_t n = 1; n <= 33; n += 8)
			ck_assert_msg(run_checked(f, 3, bufs, n) == 0, "%s n=%lld: good data fails", binop_names[ops[o]],
				      (long long)n);
		/* the bad value first, then good ones (scalar and vector loops) */
		for (int at = 0; at < 33; at += 8) {
			int64_t keep = b[at];
			b[at] = ops[o] == BINOP_pow ? -1 : 0;
			ck_assert_msg(run_checked(f, 3, bufs, 33) == 1, "%s: bad value at %d passes", binop_names[ops[o]],
				      at);
			b[at] = keep;
		}
		free(t);
	}
	/* 7 // b[i]: the dividend a constant */
	struct tk *t = tk_new();
	int v = tk_var(t, tk_sym(t, 0), -1);
	int bb = tk_buf(t, DT_INT64, false), ob = tk_buf(t, DT_INT64, true);
	lref i = tk_vref(t, v);
	tk_root(t, tk_section(t), tk_store(t, ob, i, tk_bin(t, BINOP_floordiv, tk_int(t, 7), tk_load(t, bb, i))));
	loop_kernel_fn f = compile(t);
	void *bufs2[3] = {b, out, NULL};
	for (int k = 0; k < 40; k++)
		b[k] = k + 1;
	ck_assert_ptr_nonnull(strstr(last_ir, "check_failed"));
	ck_assert_int_eq(run_checked(f, 2, bufs2, 33), 0);
	b[5] = 0;
	ck_assert_int_eq(run_checked(f, 2, bufs2, 33), 1);
	ck_assert_int_eq(out[5], 0);
	free(t);
	/* a[i] // where(i < 0, 1, b[i]): the divisor's data in its third operand only */
	t = tk_new();
	v = tk_var(t, tk_sym(t, 0), -1);
	int ab = tk_buf(t, DT_INT64, false);
	bb = tk_buf(t, DT_INT64, false), ob = tk_buf(t, DT_INT64, true);
	i = tk_vref(t, v);
	lref d = tk_node(t, LOP_WHERE, 0, DT_INT64, 0, tk_bin(t, BINOP_lt, i, tk_int(t, 0)), tk_int(t, 1),
			 tk_load(t, bb, i));
	tk_root(t, tk_section(t), tk_store(t, ob, i, tk_bin(t, BINOP_floordiv, tk_load(t, ab, i), d)));
	f = compile(t);
	ck_assert_int_eq(run_checked(f, 3, bufs, 33), 1);
	b[5] = 2;
	ck_assert_int_eq(run_checked(f, 3, bufs, 33), 0);
	free(t);
	/* a[j] // (sum over i < s0 of 1): a divisor that is a reduction (of no data) */
	t = tk_new();
	int s0 = tk_section(t), s1 = tk_section(t);
	int vi = tk_var(t, tk_sym(t, 0), s0), vj = tk_var(t, tk_sym(t, 1), s1);
	ab = tk_buf(t, DT_INT64, false), ob = tk_buf(t, DT_INT64, true);
	lref red = tk_red(t, REDOP_sum, DT_INT64, tk_int(t, 1));
	tk_root(t, s0, red);
	lref j = tk_vref(t, vj);
	tk_root(t, s1, tk_store(t, ob, j, tk_bin(t, BINOP_floordiv, tk_load(t, ab, j), red)));
	(void)vi;
	f = compile(t);
	int32_t failed = 0;
	f((void *[]){a, out, &failed}, (int64_t[]){2, 5}, 0, 1);
	ck_assert_int_eq(failed, 0);
	ck_assert_int_eq(out[4], 1);
	f((void *[]){a, out, &failed}, (int64_t[]){0, 5}, 0, 1);
	ck_assert_int_eq(failed, 1);
	free(t);
	/* a[i] // (i + 1) and a[i] ** 2: index arithmetic and a constant, no check */
	t = tk_new();
	v = tk_var(t, tk_sym(t, 0), -1);
	ab = tk_buf(t, DT_INT64, false), ob = tk_buf(t, DT_INT64, true);
	i = tk_vref(t, v);
	lref ai = tk_load(t, ab, i);
	lref q = tk_bin(t, BINOP_floordiv, ai, tk_bin(t, BINOP_add, i, tk_int(t, 1)));
	tk_root(t, tk_section(t), tk_store(t, ob, i, tk_bin(t, BINOP_add, q, tk_bin(t, BINOP_pow, ai, tk_int(t, 2)))));
	f = compile(t);
	ck_assert_ptr_null(strstr(last_ir, "check_failed"));
	free(t);
}
END_TEST

/* runs the lowered program p on x through ind_run with the kernels in
 * fns, and g on x through graph_interpret: the outputs agree (floats
 * within 1e-5 relative: the approximations, reassociated sums) */
static void run_program(const struct graph *g, struct ind_program *p, loop_kernel_fn *fns, tensor *x, const char *what)
{
	struct vm *vm = prelude_vm_new();
	value got[8], want[8];
	ck_assert_int_le(g->noutputs, 8);
	struct ind_compiled c = {*p, fns};
	ck_assert_msg(ind_run(&c, vm, &x, got) == 0, "%s: %s", what, tj_error_peek());
	ck_assert_msg(graph_interpret(vm, g, &x, want) == 0, "%s: %s", what, tj_error_peek());
	for (int o = 0; o < g->noutputs; o++) {
		tensor *tg = val_as_tensor(got[o]), *tw = val_as_tensor(want[o]);
		ck_assert_int_eq(tg->dt, tw->dt);
		ck_assert_int_eq(tg->numel, tw->numel);
		for (int64_t i = 0; i < tw->numel; i++) {
			double vg = elem(tg->data, tw->dt, i), vw = elem(tw->data, tw->dt, i);
			bool ok = dtype_is_float(tw->dt) ? close_enough(vg, vw, 1e-5) : vg == vw;
			ck_assert_msg(ok, "%s: output %d element %lld: got %.9g, want %.9g", what, o, (long long)i, vg, vw);
		}
		val_decref(got[o]);
		val_decref(want[o]);
	}
	vm_free(vm);
}

/* every kernel that the lowering makes of real programs emits, verifies
 * and optimizes, and the programs run as the graph interpreter runs them */
START_TEST(test_lowered_kernels)
{
	static const int64_t shapes[][3] = {{2, 4, 5}, {2, 8, 16}, {2, 8, 16}, {2, 6, 7}, {2, 6, 7}, {2, 3, 5},
					    {2, 3, 5}, {1, 9}, {1, 9}, {1, 10}, {2, 6, 7}, {2, 6, 7}, {2, 4, 6}, {2, 4, 6},
					    {2, 5, 3}};
	static const char *const progs[][2] = {
		{"    return relu(tanh(x * 2 + 1) * sigmoid(x) - x / 3)\n", "randn(4, 5)"},
		{"    return softmax(x, -1)\n", "randn(8, 16)"},
		{"    return log_softmax(x, -1)\n", "randn(8, 16)"},
		{"    return x.sum(1), x.mean(1, keepdim=True), x.var()\n", "randn(6, 7)"},
		{"    return x.max(1), x.min(-1)\n", "randn(6, 7)"},
		{"    return x.permute(1, 0) * 2\n", "randn(3, 5)"},
		{"    return (x * 2).reshape(5, 3) + 1\n", "randn(3, 5)"},
		{"    return gelu(x) + exp(x) - log(abs(x) + 1) + sin(x) * cos(x)\n", "randn(9)"},
		{"    return where(x > 0, x, x * 0.5)\n", "randn(9)"},
		{"    return (x * 3) // 2 + x % 5\n", "arange(10)"},
		{"    return x - x.mean(1, keepdim=True), x.max(1)\n", "randn(6, 7)"},
		{"    return (x > 0.5).sum(), x.prod(1), x.min(0)\n", "randn(6, 7)"},
		{"    return clamp(x, -0.5, 0.5) * x.sum(0)\n", "randn(4, 6)"},
		{"    return floor(x) + ceil(x) + round(x * 3) + sign(x) + sqrt(abs(x)) + rsqrt(abs(x) + 1)\n",
		 "randn(4, 6)"},
		{"    return x.T @ x + 1, x.T * 2\n", "randn(5, 3)"},
	};
	for (size_t i = 0; i < sizeof progs / sizeof progs[0]; i++) {
		char text[1024];
		snprintf(text, sizeof text, "def f(x):\n%sg = compile(f, backend=\"eager\")\ng(%s)\n", progs[i][0], progs[i][1]);
		run_capturing(text);
		ck_assert_int_eq(ngraphs, 1);
		ck_assert_int_eq(aot_decompose(graphs[0], NULL), 0);
		struct ind_program p;
		memset(&p, 0, sizeof p);
		ck_assert_msg(ind_lower(graphs[0], &p, NULL) == 0, "%s: %s", progs[i][0], tj_error_peek());
		int nk = 0;
		loop_kernel_fn fns[16] = {NULL};
		ck_assert_int_le(p.nsteps, 16);
		for (int s = 0; s < p.nsteps; s++) {
			if (p.steps[s].kind != ISTEP_KERNEL)
				continue;
			struct tk t = {.k = *p.steps[s].k};
			char *err = NULL;
			if (!(fns[s] = compile_err(&t, &err))) {
				char *listing = loop_kernel_format(p.steps[s].k);
				ck_abort_msg("%s%s\n%s", progs[i][0], err, listing);
			}
			nk++;
		}
		ck_assert_int_gt(nk, 0);
		int dt = i == 9 ? DT_INT64 : DT_FLOAT32;
		tensor *x = tensor_empty(dt, (int)shapes[i][0], &shapes[i][1]);
		fill(x->data, dt, x->numel, 2);
		run_program(graphs[0], &p, fns, x, progs[i][0]);
		tensor_decref(x);
		ind_program_release(&p);
		drop_graphs();
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cg_emit");
	TCase *tc = tcase_create("emit");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_unary_all);
	tcase_add_test(tc, test_binary_all);
	tcase_add_test(tc, test_where_cast_const);
	tcase_add_test(tc, test_split_range);
	tcase_add_test(tc, test_row_reductions);
	tcase_add_test(tc, test_softmax_sections);
	tcase_add_test(tc, test_transcendental_sweep);
	tcase_add_test(tc, test_transcendental_edges);
	tcase_add_test(tc, test_fraction_products);
	tcase_add_test(tc, test_lanes_agree);
	tcase_add_test(tc, test_unary_of_constant_nan);
	tcase_add_test(tc, test_relu_zero_nan);
	tcase_add_test(tc, test_exp_float64);
	tcase_add_test(tc, test_exp_float32_rounding);
	tcase_add_test(tc, test_vectorized);
	tcase_add_test(tc, test_inner_loop_of_two);
	tcase_add_test(tc, test_interleave);
	tcase_add_test(tc, test_errors);
	tcase_add_test(tc, test_no_outer_and_index_math);
	tcase_add_test(tc, test_data_checks);
	tcase_add_test(tc, test_lowered_kernels);
	tcase_add_test(tc, test_schedule_loops);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
