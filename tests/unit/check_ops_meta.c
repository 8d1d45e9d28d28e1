/* check_ops_meta.c - the op table's columns and the shape rules
 * (core/trace/ops_meta.c): every op has each column filled; for every op with a
 * rule, the rule's dtype and shape equal what the eager kernel returns,
 * and its message equals the kernel's for bad arguments; and the symbols
 * of dynamic shapes go where the tracer has always put them.
 */
#include <check.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "program_test_util.h"
#include "autograd.h"
#include "compile_log.h"
#include "compiler.h"
#include "error.h"
#include "frame_eval.h"
#include "ops_meta.h"
#include "prelude.h"
#include "runtime.h"
#include "vm.h"

static const char *const backward_names[OPS_COUNT] = {
#define OPDEF(name, kind, flags, params, impl, aux, save, backward, stage, meta) #backward,
#include "ops.def"
#undef OPDEF
};

/* ---- memory that lives until the end of a test ---- */

#define POOL_MAX 4096
static void *pool[POOL_MAX];
static int npool;
static value vpool[POOL_MAX];
static int nvpool;

static void *palloc(size_t n)
{
	ck_assert(npool < POOL_MAX);
	void *p = calloc(1, n);
	ck_assert(p);
	return pool[npool++] = p;
}

static value keep(value v)
{
	ck_assert(nvpool < POOL_MAX);
	return vpool[nvpool++] = v;
}

static void setup(void)
{
	tj_error_clear();
	rng_manual_seed(3);
}

static void teardown(void)
{
	while (npool)
		free(pool[--npool]);
	while (nvpool)
		val_decref(vpool[--nvpool]);
	tj_error_clear();
}

/* ---- the columns ---- */

START_TEST(test_every_row_filled)
{
	int prims = 0, comps = 0;
	for (int op = 0; op < OPS_COUNT; op++) {
		const struct ops_info *in = &ops_table[op];
		unsigned outside = OPF_QUERY | OPF_DATA | OPF_EFFECT | OPF_OPAQUE;
		ck_assert_msg(in->stage == OPST_PRIM || in->stage == OPST_COMP || in->stage == OPST_NOGRAPH,
			      "%s: no stage", in->name);
		prims += in->stage == OPST_PRIM;
		comps += in->stage == OPST_COMP;
		/* never in a graph exactly when the tracer reads it or breaks on it */
		ck_assert_msg((in->stage == OPST_NOGRAPH) == !!(in->flags & outside), "%s: stage vs flags", in->name);
		/* a shape rule for every op a graph can hold, an explicit none for the others */
		ck_assert_msg(meta_has_rule(op) == (in->stage != OPST_NOGRAPH), "%s: rule %s", in->name,
			      meta_rule_name(op));
		ck_assert_msg(meta_has_rule(op) == (strcmp(meta_rule_name(op), "none") != 0), "%s", in->name);
		/* a backward rule exactly for the differentiable ops */
		ck_assert_msg((strcmp(backward_names[op], "none") != 0) == !!(in->flags & OPF_DIFF),
			      "%s: backward %s vs OPF_DIFF", in->name, backward_names[op]);
	}
	ck_assert_int_gt(prims, 20);
	ck_assert_int_gt(comps, 10);
	ck_assert_int_eq(ops_table[OPS_rsqrt].stage, OPST_COMP);
	ck_assert_int_eq(ops_table[OPS_sigmoid].stage, OPST_PRIM);
	ck_assert_int_eq(ops_table[OPS_relu].stage, OPST_PRIM);
	ck_assert_int_eq(ops_table[OPS_item].stage, OPST_NOGRAPH);
	ck_assert_str_eq(meta_rule_name(OPS_add), "binary");
}
END_TEST

START_TEST(test_no_rule_is_an_error)
{
	struct meta_out out;
	struct meta_tensor t = {.dt = DT_FLOAT32, .ndim = 1, .shape = {{3, -1}}};
	struct meta_arg a = {.kind = META_TENSOR, .t = &t};
	ck_assert_int_eq(meta_infer(OPS_numel, &a, NULL, &out), -1);
	ck_assert_str_eq(tj_error_peek(), "numel has no shape rule");
	ck_assert_int_eq(out.n, 0);
}
END_TEST

/* ---- arguments written as text ----
 *   f32[2, 3]  a tensor of ones (f32 f64 i64 b8), i64[] a 0-d one
 *   3  -1  2.5  True  None  float32 int64  (1, 2)  [a, b]  1:3  :  ::2
 *   name=value  a keyword argument */

static value parse_value(const char **p);

static void skip(const char **p)
{
	while (isspace((unsigned char)**p))
		(*p)++;
}

static bool word(const char **p, const char *w)
{
	size_t n = strlen(w);
	if (strncmp(*p, w, n) || isalnum((unsigned char)(*p)[n]) || (*p)[n] == '_')
		return false;
	*p += n;
	return true;
}

static value parse_seq(const char **p, char close, bool tuple)
{
	value items[32] = {{0}};
	int n = 0;
	bool comma = false;
	(*p)++;
	skip(p);
	while (**p != close) {
		ck_assert(n < 32);
		items[n++] = parse_value(p);
		skip(p);
		comma = **p == ',';
		if (comma) {
			(*p)++;
			skip(p);
		}
	}
	(*p)++;
	(void)comma;
	value r;
	if (tuple) {
		r = tuple_pack((size_t)n, items);
	} else {
		r = list_new((size_t)n);
		for (int i = 0; i < n; i++) {
			val_incref(items[i]);
			list_append(val_list(r), items[i]);
		}
	}
	for (int i = 0; i < n; i++)
		val_decref(items[i]);
	return r;
}

static value parse_tensor(const char **p, dtype dt)
{
	int64_t shape[TENSOR_MAX_DIMS];
	int nd = 0;
	ck_assert(**p == '[');
	(*p)++;
	while (**p != ']') {
		skip(p);
		shape[nd++] = strtoll(*p, (char **)p, 10);
		skip(p);
		if (**p == ',')
			(*p)++;
	}
	(*p)++;
	tensor *t = tensor_full(dt, nd, shape, 1);
	ck_assert(t);
	return val_tensor(t);
}

/* an int, or nothing (None) before a ':' */
static value parse_int_opt(const char **p)
{
	skip(p);
	if (**p == ':' || **p == ',' || **p == ')' || **p == ']' || !**p)
		return val_none();
	return val_int(strtoll(*p, (char **)p, 10));
}

static value parse_value(const char **p)
{
	skip(p);
	const char *s = *p;
	if (word(p, "f32"))
		return parse_tensor(p, DT_FLOAT32);
	if (word(p, "f64"))
		return parse_tensor(p, DT_FLOAT64);
	if (word(p, "i64"))
		return parse_tensor(p, DT_INT64);
	if (word(p, "b8"))
		return parse_tensor(p, DT_BOOL);
	if (word(p, "None"))
		return val_none();
	if (word(p, "True"))
		return val_bool(true);
	if (word(p, "False"))
		return val_bool(false);
	if (word(p, "float32"))
		return val_dtype(DT_FLOAT32);
	if (word(p, "float64"))
		return val_dtype(DT_FLOAT64);
	if (word(p, "int64"))
		return val_dtype(DT_INT64);
	if (word(p, "bool"))
		return val_dtype(DT_BOOL);
	if (*s == '(')
		return parse_seq(p, ')', true);
	if (*s == '[')
		return parse_seq(p, ']', false);
	if (*s == '\'') {
		const char *e = strchr(s + 1, '\'');
		char buf[64];
		snprintf(buf, sizeof buf, "%.*s", (int)(e - s - 1), s + 1);
		*p = e + 1;
		return str_from_cstr(buf);
	}
	/* a number, or a slice */
	const char *e = s + (*s == '-');
	while (isdigit((unsigned char)*e))
		e++;
	if (*e == '.' || *e == 'e') {
		value f = val_float(strtod(s, (char **)p));
		return f;
	}
	value start = parse_int_opt(p);
	skip(p);
	if (**p != ':')
		return start;
	(*p)++;
	value stop = parse_int_opt(p), step = val_none();
	skip(p);
	if (**p == ':') {
		(*p)++;
		step = parse_int_opt(p);
	}
	return slice_new(start, stop, step);
}

/* parses "a, b, name=c" into positional values then keyword values, with
 * their names in *kwnames; returns how many values */
static int parse_args(const char *text, value *vals, value *kwnames)
{
	const char *p = text;
	value names[8];
	int n = 0, nkw = 0;
	skip(&p);
	while (*p) {
		const char *q = p;
		while (isalnum((unsigned char)*q) || *q == '_')
			q++;
		if (*q == '=' && q > p && !isdigit((unsigned char)*p)) {
			char buf[32];
			snprintf(buf, sizeof buf, "%.*s", (int)(q - p), p);
			names[nkw++] = str_from_cstr(buf);
			p = q + 1;
		} else {
			ck_assert_msg(nkw == 0, "positional after keyword in '%s'", text);
		}
		vals[n++] = keep(parse_value(&p));
		skip(&p);
		if (*p == ',')
			p++;
		skip(&p);
	}
	*kwnames = nkw ? keep(tuple_pack((size_t)nkw, names)) : val_none();
	for (int i = 0; i < nkw; i++)
		val_decref(names[i]);
	return n;
}

/* ---- values as a rule sees them ---- */

static bool holds_tensor(value v)
{
	if (v.tag == VAL_TENSOR)
		return true;
	if (v.tag != VAL_TUPLE && v.tag != VAL_LIST)
		return false;
	size_t n = v.tag == VAL_TUPLE ? val_tuple(v)->len : val_list(v)->len;
	value *it = v.tag == VAL_TUPLE ? val_tuple(v)->items : val_list(v)->items;
	for (size_t i = 0; i < n; i++)
		if (holds_tensor(it[i]))
			return true;
	return false;
}

static struct meta_tensor *meta_of(const tensor *t)
{
	struct meta_tensor *m = palloc(sizeof *m);
	m->dt = t->dt;
	m->ndim = t->ndim;
	for (int d = 0; d < t->ndim; d++)
		m->shape[d] = (struct sym_size){t->shape[d], -1};
	return m;
}

static void meta_arg_of(value v, struct meta_arg *a)
{
	memset(a, 0, sizeof *a);
	if (v.tag == VAL_TENSOR) {
		a->kind = META_TENSOR;
		a->t = meta_of(val_as_tensor(v));
	} else if (holds_tensor(v)) {
		a->kind = v.tag == VAL_TUPLE ? META_TUPLE : META_LIST;
		a->n = (int)(v.tag == VAL_TUPLE ? val_tuple(v)->len : val_list(v)->len);
		value *it = v.tag == VAL_TUPLE ? val_tuple(v)->items : val_list(v)->items;
		struct meta_arg *items = palloc(sizeof *items * (size_t)(a->n ? a->n : 1));
		for (int i = 0; i < a->n; i++)
			meta_arg_of(it[i], &items[i]);
		a->items = items;
	} else {
		a->kind = META_CONST;
		a->v = v;
	}
}

/* ---- the differential test ---- */

static int cases_ok[OPS_COUNT], cases_err[OPS_COUNT];

static void same_tensor(const char *what, const struct meta_tensor *m, const tensor *t)
{
	ck_assert_msg(m->dt == t->dt, "%s: dtype %s, kernel %s", what, dtype_name(m->dt), dtype_name(t->dt));
	ck_assert_msg(m->ndim == t->ndim, "%s: ndim %d, kernel %d", what, m->ndim, t->ndim);
	for (int d = 0; d < t->ndim; d++) {
		ck_assert_msg(m->shape[d].value == t->shape[d], "%s: size %d is %lld, kernel %lld", what, d,
			      (long long)m->shape[d].value, (long long)t->shape[d]);
		ck_assert_int_eq(m->shape[d].sym, -1);
	}
}

/* op `name` on the arguments `text`: the rule agrees with the kernel */
static void agree(const char *name, const char *text)
{
	int op = ops_find(name, OPK_FN | OPK_METH | OPK_OPER | OPK_ATTR);
	int mark = npool, vmark = nvpool;
	ck_assert_msg(op >= 0, "no op %s", name);
	value vals[16], kw, norm[16];
	int n = parse_args(text, vals, &kw);
	ck_assert_msg(ops_normalize(op, vals, n, kw, norm) == 0, "%s(%s): %s", name, text, tj_error_peek());
	int np = ops_nparams(op);
	struct meta_arg args[16];
	for (int i = 0; i < np; i++)
		meta_arg_of(norm[i], &args[i]);

	bool prev = ag_set_grad_enabled(false);
	value r = ops_call(op, norm);
	ag_set_grad_enabled(prev);
	char *kerr = val_is_err(r) ? strdup(tj_error_peek() ? tj_error_peek() : "") : NULL;
	tj_error_clear();
	struct meta_out out;
	int rc = meta_infer(op, args, NULL, &out);
	char what[256];
	snprintf(what, sizeof what, "%s(%s)", name, text);
	if (kerr) {
		ck_assert_msg(rc < 0, "%s: the kernel fails (%s), the rule does not", what, kerr);
		ck_assert_msg(strcmp(tj_error_peek(), kerr) == 0, "%s: rule '%s', kernel '%s'", what, tj_error_peek(),
			      kerr);
		cases_err[op]++;
	} else {
		ck_assert_msg(rc == 0, "%s: the rule fails: %s", what, tj_error_peek());
		if (r.tag == VAL_TUPLE) {
			ck_assert_int_eq(out.n, (int)val_tuple(r)->len);
			for (int k = 0; k < out.n; k++)
				same_tensor(what, &out.t[k], val_as_tensor(val_tuple(r)->items[k]));
		} else {
			ck_assert_msg(r.tag == VAL_TENSOR && out.n == 1, "%s: not one tensor", what);
			same_tensor(what, &out.t[0], val_as_tensor(r));
		}
		cases_ok[op]++;
		val_decref(r);
	}
	free(kerr);
	tj_error_clear();
	ops_args_release(op, norm);
	while (npool > mark)
		free(pool[--npool]);
	while (nvpool > vmark)
		val_decref(vpool[--nvpool]);
}

START_TEST(test_creation)
{
	agree("tensor", "[1, 2, 3]");
	agree("tensor", "[[1.5, 2], [3, 4]]");
	agree("tensor", "[True, False]");
	agree("tensor", "[]");
	agree("tensor", "[[1, 2], [3]]");
	agree("tensor", "f64[2, 3]");
	agree("tensor", "f32[2], dtype=int64");
	agree("tensor", "i64[2], requires_grad=True");
	agree("tensor", "[1, 2], requires_grad=True");
	agree("zeros", "2, 3");
	agree("zeros", "(2, 3)");
	agree("zeros", "()");
	agree("zeros", "2, -1");
	agree("zeros", "2, dtype=int64");
	agree("zeros", "3, dtype=int64, requires_grad=True");
	agree("zeros", "3, requires_grad=True");
	agree("zeros", "2.5");
	agree("zeros", "[2, 'a']");
	agree("zeros", "1000000000, 1000000000, 1000000000");
	agree("zeros", "2, dtype=3");
	agree("ones", "0, 4");
	agree("ones", "4, dtype=bool");
	agree("full", "(2, 3), 1.5");
	agree("full", "(2,), 7");
	agree("full", "(2,), True");
	agree("full", "(2,), 7, dtype=float64");
	agree("full", "(2,), i64[1]");
	agree("full", "(2,), b8[]");
	agree("full", "(2,), f32[2]");
	agree("full", "(2,), 'x'");
	agree("full", "(-2,), 1");
	agree("arange", "5");
	agree("arange", "1, 7, 2");
	agree("arange", "0.5, 3");
	agree("arange", "5, dtype=float64");
	agree("arange", "0, 5, 0");
	agree("arange", "5, 1");
	agree("arange", "5, 1, -1");
	agree("arange", "0");
	agree("arange", "'a'");
	agree("arange", "3, requires_grad=True");
	agree("eye", "3");
	agree("eye", "2, 4");
	agree("eye", "-1");
	agree("eye", "2, -3");
	agree("eye", "3, dtype=int64");
	agree("randn", "2, 3");
	agree("randn", "2, dtype=int64");
	agree("randn", "2, dtype=float64, requires_grad=True");
	agree("rand", "4");
	agree("rand", "-4");
	agree("zeros_like", "i64[2, 3]");
	agree("zeros_like", "f32[2], dtype=float64");
	agree("zeros_like", "3");
	agree("ones_like", "b8[3]");
	agree("ones_like", "i64[3], requires_grad=True");
	agree("randn_like", "f32[2, 2]");
	agree("randn_like", "i64[2]");
	agree("rand_like", "f64[1]");
	agree("rand_like", "i64[2], dtype=float32");
}
END_TEST

static const char *const operands[] = {
	"f32[2, 3]", "f64[3]", "i64[2, 1]", "b8[3]", "f32[]", "i64[]", "b8[]", "f64[]", "2", "2.5", "True",
	"f32[0, 3]", "f32[4]",
};
#define NOPERANDS (int)(sizeof operands / sizeof operands[0])

START_TEST(test_pointwise)
{
	static const char *const unary[] = {"neg", "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh",
					    "sigmoid", "relu", "gelu", "silu", "floor", "ceil", "round", "sign",
					    "reciprocal"};
	static const char *const binary[] = {"add", "sub", "mul", "div", "pow", "floordiv", "mod", "maximum",
					     "minimum", "lt", "le", "gt", "ge", "eq", "ne"};
	for (size_t u = 0; u < sizeof unary / sizeof *unary; u++)
		for (int i = 0; i < NOPERANDS; i++)
			agree(unary[u], operands[i]);
	char buf[128];
	/* every dtype against every dtype, dimensioned, 0-d and Python numbers */
	for (size_t b = 0; b < sizeof binary / sizeof *binary; b++)
		for (int i = 0; i < NOPERANDS; i++)
			for (int j = 0; j < NOPERANDS; j++) {
				snprintf(buf, sizeof buf, "%s, %s", operands[i], operands[j]);
				agree(binary[b], buf);
			}
	agree("add", "f32[2, 3], 'x'");
	agree("round", "f32[2], 2");
	agree("round", "i64[2], 5");
	agree("round", "f32[2], 400");
	agree("round", "f32[2], decimals=-1");
	agree("where", "b8[2, 3], f32[3], 0");
	agree("where", "b8[3], 1, 2.5");
	agree("where", "f32[3], f32[3], f32[3]");
	agree("where", "b8[2], f32[3], f32[3]");
	agree("where", "b8[3], i64[3], f64[1]");
	agree("where", "b8[4, 1], i64[3], True");
	agree("where", "b8[3], f32[2, 1], f32[4, 1, 1]");
	agree("clamp", "f32[2, 3], 0");
	agree("clamp", "i64[3], 0.5");
	agree("clamp", "i64[3], 0, 2");
	agree("clamp", "f32[3], None, 1");
	agree("clamp", "f32[3]");
	agree("clamp", "f32[3], f32[2, 1], i64[3]");
	agree("clamp", "f32[3], f32[2]");
	agree("clamp", "f32[3], None, f32[2]");
	agree("clamp", "i64[2], min=i64[2], max=f32[]");
	agree("clamp", "b8[2], True");
	agree("to", "f32[2], int64");
	agree("to", "f32[2], i64[3]");
	agree("to", "f32[2], None");
	agree("to", "f32[2], 3");
	agree("to", "b8[], float64");
	agree("float", "i64[2]");
	agree("double", "b8[3]");
	agree("long", "f32[2]");
	agree("bool", "f32[2, 0]");
}
END_TEST

START_TEST(test_reductions)
{
	agree("sum", "f32[2, 3]");
	agree("sum", "f32[2, 3], 1");
	agree("sum", "f32[2, 3], -1, True");
	agree("sum", "f32[2, 3], (0, 1)");
	agree("sum", "f32[2, 3], (0, -2)");
	agree("sum", "f32[2, 3], []");
	agree("sum", "i64[2, 3], 0");
	agree("sum", "b8[4]");
	agree("sum", "f32[2, 3], 2");
	agree("sum", "f32[2, 3], 1.5");
	agree("sum", "f32[]");
	agree("sum", "f32[], 0");
	agree("sum", "f32[], -1, True");
	agree("sum", "f32[0, 3], 1");
	agree("sum", "i64[2], dtype=float64");
	agree("sum", "f32[2, 3], dim=None, keepdim=True");
	agree("sum", "f32[2, 3], keepdim=2.5");
	agree("mean", "f32[2, 3], 1");
	agree("mean", "i64[3]");
	agree("mean", "i64[3], dtype=float32");
	agree("mean", "f32[0]");
	agree("prod", "i64[2, 3], 1");
	agree("prod", "b8[2]");
	agree("max", "f32[2, 3]");
	agree("max", "f32[2, 3], 1");
	agree("max", "f32[2, 3], 1, True");
	agree("max", "f32[2, 3], f32[3]");
	agree("max", "f32[2, 3], f32[4]");
	agree("max", "f32[0]");
	agree("max", "f32[0, 3], 0");
	agree("max", "f32[0, 3], 1");
	agree("max", "f32[2, 3], 5");
	agree("max", "i64[2, 3], -2");
	agree("max", "f32[], 0");
	agree("min", "f32[2, 3], 0");
	agree("min", "b8[2, 3], keepdim=True");
	agree("argmax", "f32[2, 3]");
	agree("argmax", "f32[2, 3], 1");
	agree("argmax", "f32[2, 3], 1, True");
	agree("argmax", "f32[2, 3], None, True");
	agree("argmax", "f32[0]");
	agree("argmax", "f32[2, 3], (0, 1)");
	agree("argmin", "i64[3], 0");
	agree("argmin", "f32[]");
	agree("argmin", "f32[], 0, True");
	agree("var", "f32[2, 3]");
	agree("var", "f32[2, 3], 1");
	agree("var", "f32[2, 3], 1, False, True");
	agree("var", "i64[3]");
	agree("var", "f32[2, 3], correction=0");
	agree("var", "f32[2, 3], correction=1.5");
	agree("softmax", "f32[2, 3], 1");
	agree("softmax", "i64[3], 0");
	agree("softmax", "f32[2, 3], 2");
	agree("softmax", "f32[], 0");
	agree("log_softmax", "f64[4], -1");
	agree("log_softmax", "b8[4], -2");
}
END_TEST

START_TEST(test_linalg)
{
	agree("matmul", "f32[2, 3], f32[3, 4]");
	agree("matmul", "f32[3], f32[3]");
	agree("matmul", "f32[3], f32[3, 4]");
	agree("matmul", "f32[2, 3], f32[3]");
	agree("matmul", "f32[5, 2, 3], f32[3, 4]");
	agree("matmul", "f32[5, 2, 3], f32[1, 3, 4]");
	agree("matmul", "f32[3], f32[5, 3, 4]");
	agree("matmul", "f32[5, 2, 3], f32[3]");
	agree("matmul", "f32[2, 3], f32[4, 5]");
	agree("matmul", "f32[3], f32[4]");
	agree("matmul", "f32[2, 3], f64[3, 4]");
	agree("matmul", "f32[], f32[3]");
	agree("matmul", "b8[2, 2], b8[2, 2]");
	agree("matmul", "i64[2, 3], i64[3]");
	agree("matmul", "f32[2, 2, 3], f32[3, 3, 4]");
	agree("matmul", "f32[0, 3], f32[3, 0]");
	agree("matmul", "f32[2, 3], 3");
	agree("linear", "f32[2, 3], f32[4, 3]");
	agree("linear", "f32[2, 3], f32[4, 3], f32[4]");
	agree("linear", "f32[3], f32[4, 3]");
	agree("linear", "f32[2, 3], f32[4, 3], f32[]");
	agree("linear", "f32[2, 3], f32[4, 5]");
	agree("linear", "i64[2, 3], i64[4, 3], i64[4]");
	agree("linear", "f32[2, 3], f32[4, 3], f32[2, 4]");
	agree("linear", "f32[2, 3], f32[4, 3], f32[3]");
	agree("linear", "f32[2, 3], f32[3]");
	agree("linear", "f32[2, 3], f64[4, 3]");
	agree("linear", "f32[2, 3], f32[4, 3], i64[4]");
	agree("linear", "f32[], f32[4, 3]");
	agree("linear", "f32[5, 2, 3], f32[4, 3], 1");
}
END_TEST

START_TEST(test_shape_ops)
{
	agree("reshape", "f32[2, 3], 6");
	agree("reshape", "f32[2, 3], -1");
	agree("reshape", "f32[2, 3], 3, -1");
	agree("reshape", "f32[2, 3], (3, 2)");
	agree("reshape", "f32[2, 3], 4");
	agree("reshape", "f32[2, 3], -1, -1");
	agree("reshape", "f32[0, 3], 0, -1");
	agree("reshape", "f32[0, 3], 5, 0");
	agree("reshape", "f32[], 1");
	agree("reshape", "f32[], ()");
	agree("reshape", "f32[2, 3], -2, 3");
	agree("reshape", "f32[2, 3], 2.5");
	agree("reshape", "f32[2, 3], 1, 1, 1, 1, 1, 1, 1, 1, 6");
	agree("view", "f32[4], 2, 2");
	agree("transpose", "f32[2, 3], 0, 1");
	agree("transpose", "f32[2, 3, 4], -1, 0");
	agree("transpose", "f32[], 0, -1");
	agree("transpose", "f32[2, 3], 0, 2");
	agree("permute", "f32[2, 3, 4], 2, 0, 1");
	agree("permute", "f32[2, 3], (1, 0)");
	agree("permute", "f32[2, 3], 0");
	agree("permute", "f32[2, 3], 0, 0");
	agree("permute", "f32[2, 3], 0, 5");
	agree("permute", "f32[], ()");
	agree("T", "f32[2, 3]");
	agree("T", "f32[3]");
	agree("T", "f32[2, 3, 4]");
	agree("T", "f32[]");
	agree("unsqueeze", "f32[2, 3], 0");
	agree("unsqueeze", "f32[2, 3], -1");
	agree("unsqueeze", "f32[2, 3], 3");
	agree("unsqueeze", "f32[], 0");
	agree("unsqueeze", "f32[1, 1, 1, 1, 1, 1, 1, 1], 0");
	agree("squeeze", "f32[1, 3, 1]");
	agree("squeeze", "f32[1, 3, 1], 0");
	agree("squeeze", "f32[1, 3, 1], 1");
	agree("squeeze", "f32[]");
	agree("squeeze", "f32[], 0");
	agree("squeeze", "f32[2], 3");
	agree("flatten", "f32[2, 3, 4]");
	agree("flatten", "f32[2, 3, 4], 1");
	agree("flatten", "f32[2, 3, 4], 0, 1");
	agree("flatten", "f32[2, 3, 4], -2, -2");
	agree("flatten", "f32[]");
	agree("flatten", "f32[2, 3, 4], 2, 1");
	agree("flatten", "f32[2, 3], 0, 5");
	agree("expand", "f32[1, 3], 2, 3");
	agree("expand", "f32[1, 3], -1, 3");
	agree("expand", "f32[3], 2, 3");
	agree("expand", "f32[], 2, 3");
	agree("expand", "f32[2, 3], 3, 3");
	agree("expand", "f32[3], -1, 3");
	agree("expand", "f32[2, 3], 3");
	agree("expand", "f32[1], -2");
	agree("cat", "[f32[2, 3], f32[4, 3]]");
	agree("cat", "[f32[2, 3], f32[2, 1]], 1");
	agree("cat", "[f32[2, 3], i64[2, 3]], -1");
	agree("cat", "[f32[2, 3], f32[2, 4]]");
	agree("cat", "[]");
	agree("cat", "[f32[], f32[]]");
	agree("cat", "[f32[0], f32[2, 3]]");
	agree("cat", "[f32[2, 3], f32[2]]");
	agree("cat", "(f32[2], f32[3])");
	agree("cat", "[f32[2], 3]");
	agree("cat", "f32[2]");
	agree("cat", "[f32[2], f32[2]], 1");
	agree("stack", "[f32[2, 3], f32[2, 3]]");
	agree("stack", "[f32[2, 3], f32[2, 3]], 2");
	agree("stack", "[f32[2], f32[3]]");
	agree("stack", "[f32[2], i64[2]], -1");
	agree("stack", "[f32[], f32[]]");
	agree("stack", "[f32[2], f32[2]], 2");
	agree("stack", "[]");
	agree("getitem", "f32[4, 3], 0");
	agree("getitem", "f32[4, 3], -1");
	agree("getitem", "f32[4, 3], 4");
	agree("getitem", "f32[4, 3], -5");
	agree("getitem", "f32[4, 3], (1, 2)");
	agree("getitem", "f32[4, 3], 1:3");
	agree("getitem", "f32[4, 3], (:, 0)");
	agree("getitem", "f32[4, 3], None");
	agree("getitem", "f32[4, 3], (None, 1)");
	agree("getitem", "f32[4, 3], (0, 0, 0)");
	agree("getitem", "f32[4, 3], i64[]");
	agree("getitem", "f32[4, 3], (:, i64[])");
	agree("getitem", "f32[4, 3], f32[]");
	agree("getitem", "f32[4, 3], i64[2]");
	agree("getitem", "f32[4, 3], ::2");
	agree("getitem", "f32[4, 3], 1:3:0");
	agree("getitem", "f32[4, 3], (1:, None, 0)");
	agree("getitem", "f32[4, 3], 2.5");
	agree("getitem", "f32[4, 3], 5:9");
	agree("getitem", "f32[], None");
	agree("getitem", "f32[], 0");
	agree("clone", "i64[2, 3]");
	agree("contiguous", "f32[]");
	agree("clone", "3");
	agree("detach", "f32[2]");
	agree("requires_grad_", "f32[2]");
	agree("requires_grad_", "i64[2]");
	agree("requires_grad_", "i64[2], False");
}
END_TEST

/* every op with a rule was compared with its kernel at least once */
START_TEST(test_every_rule_compared)
{
	for (int op = 0; op < OPS_COUNT; op++)
		if (meta_has_rule(op))
			ck_assert_msg(cases_ok[op] > 0, "%s: no case where the kernel succeeds", ops_table[op].name);
}
END_TEST

/* ---- symbols: a union-find context as the tracer keeps one ---- */

struct uf {
	struct meta_ctx base;
	int parent[8];
	bool spec[8];
};

static int uf_root(struct uf *u, int s)
{
	while (u->parent[s] != s)
		s = u->parent[s];
	return s;
}

static int uf_find(struct meta_ctx *c, int s)
{
	struct uf *u = (struct uf *)c;
	int r = uf_root(u, s);
	return u->spec[r] ? -1 : r;
}

static int uf_unify(struct meta_ctx *c, int a, int b)
{
	struct uf *u = (struct uf *)c;
	a = uf_root(u, a);
	b = uf_root(u, b);
	if (a == b)
		return a;
	if (b < a) {
		int t = a;
		a = b;
		b = t;
	}
	u->parent[b] = a;
	u->spec[a] |= u->spec[b];
	return a;
}

static void uf_spec(struct meta_ctx *c, int s) { ((struct uf *)c)->spec[uf_root((struct uf *)c, s)] = true; }

static struct uf *uf_new(void)
{
	struct uf *u = palloc(sizeof *u);
	u->base = (struct meta_ctx){uf_find, uf_unify, uf_spec};
	for (int i = 0; i < 8; i++)
		u->parent[i] = i;
	return u;
}

static bool is_spec(struct uf *u, int s) { return uf_find(&u->base, s) < 0; }

/* a tensor of dtype f32 from sizes: a value >= 0 is a constant, "s0" a
 * symbol with example value v */
static struct meta_arg tnsr(int ndim, const int64_t *vals, const int *syms)
{
	struct meta_tensor *m = palloc(sizeof *m);
	m->dt = DT_FLOAT32;
	m->ndim = ndim;
	for (int d = 0; d < ndim; d++)
		m->shape[d] = (struct sym_size){vals[d], syms[d]};
	return (struct meta_arg){.kind = META_TENSOR, .t = m};
}

static struct meta_arg cnst(value v) { return (struct meta_arg){.kind = META_CONST, .v = keep(v)}; }
static struct meta_arg sarg(int64_t v, int sym) { return (struct meta_arg){.kind = META_SYMINT, .s = {v, sym}}; }

static struct meta_arg tuparg(int n, const struct meta_arg *items)
{
	struct meta_arg *it = palloc(sizeof *it * (size_t)n);
	memcpy(it, items, sizeof *it * (size_t)n);
	return (struct meta_arg){.kind = META_TUPLE, .n = n, .items = it};
}

static void expect_shape(const struct meta_out *o, int ndim, const int64_t *vals, const int *syms)
{
	ck_assert_int_eq(o->t[0].ndim, ndim);
	for (int d = 0; d < ndim; d++) {
		ck_assert_int_eq(o->t[0].shape[d].value, vals[d]);
		ck_assert_msg(o->t[0].shape[d].sym == syms[d], "dim %d: symbol %d, expected %d", d,
			      o->t[0].shape[d].sym, syms[d]);
	}
}

START_TEST(test_sym_broadcast)
{
	struct meta_out o;
	/* s0 with 1 keeps s0 */
	struct uf *u = uf_new();
	struct meta_arg a[2] = {tnsr(2, (int64_t[]){5, 3}, (int[]){0, -1}), tnsr(2, (int64_t[]){1, 3}, (int[]){-1, -1})};
	ck_assert_int_eq(meta_infer(OPS_add, a, &u->base, &o), 0);
	expect_shape(&o, 2, (int64_t[]){5, 3}, (int[]){0, -1});
	ck_assert(!is_spec(u, 0));
	/* s0 with s1 unifies */
	u = uf_new();
	a[1] = tnsr(1, (int64_t[]){5}, (int[]){1});
	struct meta_arg b[2] = {tnsr(1, (int64_t[]){5}, (int[]){0}), a[1]};
	ck_assert_int_eq(meta_infer(OPS_mul, b, &u->base, &o), 0);
	expect_shape(&o, 1, (int64_t[]){5}, (int[]){0});
	ck_assert_int_eq(uf_find(&u->base, 1), 0);
	/* s0 with a constant other than 1 is specialized */
	u = uf_new();
	b[1] = tnsr(1, (int64_t[]){5}, (int[]){-1});
	ck_assert_int_eq(meta_infer(OPS_sub, b, &u->base, &o), 0);
	expect_shape(&o, 1, (int64_t[]){5}, (int[]){-1});
	ck_assert(is_spec(u, 0));
	/* a Python number does not touch the symbols */
	u = uf_new();
	b[1] = cnst(val_float(2.5));
	ck_assert_int_eq(meta_infer(OPS_add, b, &u->base, &o), 0);
	expect_shape(&o, 1, (int64_t[]){5}, (int[]){0});
	/* a bad broadcast is the kernel's error, with the example sizes */
	b[1] = tnsr(1, (int64_t[]){4}, (int[]){-1});
	ck_assert_int_eq(meta_infer(OPS_add, b, &u->base, &o), -1);
	ck_assert_str_eq(tj_error_peek(), "cannot broadcast shapes (5,) and (4,)");
	/* without a context the symbols are taken as they are */
	b[1] = tnsr(1, (int64_t[]){1}, (int[]){-1});
	ck_assert_int_eq(meta_infer(OPS_add, b, NULL, &o), 0);
	expect_shape(&o, 1, (int64_t[]){5}, (int[]){0});
}
END_TEST

START_TEST(test_sym_reshape)
{
	struct meta_out o;
	/* [s0, 3] -> reshape(-1): 3*s0 has no form, s0 is specialized */
	struct uf *u = uf_new();
	struct meta_arg a[2] = {tnsr(2, (int64_t[]){5, 3}, (int[]){0, -1}), cnst(tuple_pack(1, (value[]){val_int(-1)}))};
	ck_assert_int_eq(meta_infer(OPS_reshape, a, &u->base, &o), 0);
	expect_shape(&o, 1, (int64_t[]){15}, (int[]){-1});
	ck_assert(is_spec(u, 0));
	/* [s0, 4, 5] -> (-1, 20) is [s0, 20] */
	u = uf_new();
	a[0] = tnsr(3, (int64_t[]){6, 4, 5}, (int[]){0, -1, -1});
	a[1] = cnst(tuple_pack(2, (value[]){val_int(-1), val_int(20)}));
	ck_assert_int_eq(meta_infer(OPS_view, a, &u->base, &o), 0);
	expect_shape(&o, 2, (int64_t[]){6, 20}, (int[]){0, -1});
	ck_assert(!is_spec(u, 0));
	/* [s0, 12] -> view(n, 3, 4) with n = x.shape[0] is [s0, 3, 4] */
	u = uf_new();
	a[0] = tnsr(2, (int64_t[]){6, 12}, (int[]){0, -1});
	a[1] = tuparg(3, (struct meta_arg[]){sarg(6, 0), cnst(val_int(3)), cnst(val_int(4))});
	ck_assert_int_eq(meta_infer(OPS_view, a, &u->base, &o), 0);
	expect_shape(&o, 3, (int64_t[]){6, 3, 4}, (int[]){0, -1, -1});
	/* [s0, s1] -> reshape(s1, s0) is [s1, s0] */
	u = uf_new();
	a[0] = tnsr(2, (int64_t[]){6, 7}, (int[]){0, 1});
	a[1] = tuparg(2, (struct meta_arg[]){sarg(7, 1), sarg(6, 0)});
	ck_assert_int_eq(meta_infer(OPS_reshape, a, &u->base, &o), 0);
	expect_shape(&o, 2, (int64_t[]){7, 6}, (int[]){1, 0});
	/* [s0, s1, s2] -> view(-1, 20): [s0, 20], s1 and s2 specialized */
	u = uf_new();
	a[0] = tnsr(3, (int64_t[]){6, 4, 5}, (int[]){0, 1, 2});
	a[1] = cnst(tuple_pack(2, (value[]){val_int(-1), val_int(20)}));
	ck_assert_int_eq(meta_infer(OPS_view, a, &u->base, &o), 0);
	expect_shape(&o, 2, (int64_t[]){6, 20}, (int[]){0, -1});
	ck_assert(!is_spec(u, 0) && is_spec(u, 1) && is_spec(u, 2));
	/* a symbolic int used by an op without symbolic sizes is its value */
	u = uf_new();
	a[0] = tnsr(2, (int64_t[]){6, 4}, (int[]){0, -1});
	a[1] = sarg(6, 0);
	ck_assert_int_eq(meta_infer(OPS_sum, (struct meta_arg[]){a[0], cnst(val_int(1)), cnst(val_bool(false)),
							       cnst(val_none())}, &u->base, &o), 0);
	expect_shape(&o, 1, (int64_t[]){6}, (int[]){0});
}
END_TEST

START_TEST(test_sym_ops)
{
	struct meta_out o;
	/* matmul: the inner dims unify */
	struct uf *u = uf_new();
	struct meta_arg a[2] = {tnsr(2, (int64_t[]){5, 3}, (int[]){0, 1}), tnsr(2, (int64_t[]){3, 7}, (int[]){2, 3})};
	ck_assert_int_eq(meta_infer(OPS_matmul, a, &u->base, &o), 0);
	expect_shape(&o, 2, (int64_t[]){5, 7}, (int[]){0, 3});
	ck_assert_int_eq(uf_find(&u->base, 2), 1);
	/* sum over dim 1 keeps s0 */
	u = uf_new();
	struct meta_arg s[4] = {a[0], cnst(val_int(1)), cnst(val_bool(true)), cnst(val_none())};
	ck_assert_int_eq(meta_infer(OPS_sum, s, &u->base, &o), 0);
	expect_shape(&o, 2, (int64_t[]){5, 1}, (int[]){0, -1});
	/* max with a dim: two results with the same symbols */
	struct meta_arg m[3] = {a[0], cnst(val_int(0)), cnst(val_bool(false))};
	ck_assert_int_eq(meta_infer(OPS_max, m, &u->base, &o), 0);
	ck_assert_int_eq(o.n, 2);
	ck_assert_int_eq(o.t[1].dt, DT_INT64);
	ck_assert_int_eq(o.t[1].shape[0].sym, 1);
	/* cat: the cat dim is specialized, the others unify */
	u = uf_new();
	struct meta_arg items[2] = {tnsr(2, (int64_t[]){5, 3}, (int[]){0, 2}), tnsr(2, (int64_t[]){6, 3}, (int[]){1, 3})};
	struct meta_arg c[2] = {tuparg(2, items), cnst(val_int(0))};
	ck_assert_int_eq(meta_infer(OPS_cat, c, &u->base, &o), 0);
	expect_shape(&o, 2, (int64_t[]){11, 3}, (int[]){-1, 2});
	ck_assert(is_spec(u, 0) && is_spec(u, 1) && uf_find(&u->base, 3) == 2);
	/* indexing: x[0] keeps the rest; x[5] on a symbolic dim specializes it */
	u = uf_new();
	struct meta_arg g[2] = {tnsr(2, (int64_t[]){8, 3}, (int[]){0, 1}), cnst(val_int(0))};
	ck_assert_int_eq(meta_infer(OPS_getitem, g, &u->base, &o), 0);
	expect_shape(&o, 1, (int64_t[]){3}, (int[]){1});
	ck_assert(!is_spec(u, 0));
	g[1] = cnst(val_int(5));
	ck_assert_int_eq(meta_infer(OPS_getitem, g, &u->base, &o), 0);
	ck_assert(is_spec(u, 0));
	/* x[:, 1:] specializes the sliced symbol, keeps the full one */
	u = uf_new();
	value full = slice_new(val_none(), val_none(), val_none()), part = slice_new(val_int(1), val_none(), val_none());
	g[1] = cnst(tuple_pack(2, (value[]){full, part}));
	val_decref(full);
	val_decref(part);
	ck_assert_int_eq(meta_infer(OPS_getitem, g, &u->base, &o), 0);
	expect_shape(&o, 2, (int64_t[]){8, 2}, (int[]){0, -1});
	ck_assert(!is_spec(u, 0) && is_spec(u, 1));
	/* zeros with a symbolic size */
	u = uf_new();
	struct meta_arg z[3] = {tuparg(2, (struct meta_arg[]){sarg(8, 0), cnst(val_int(3))}), cnst(val_none()),
				cnst(val_bool(false))};
	ck_assert_int_eq(meta_infer(OPS_zeros, z, &u->base, &o), 0);
	expect_shape(&o, 2, (int64_t[]){8, 3}, (int[]){0, -1});
	/* arange(n) */
	struct meta_arg r[5] = {sarg(8, 0), cnst(val_none()), cnst(val_int(1)), cnst(val_none()), cnst(val_bool(false))};
	ck_assert_int_eq(meta_infer(OPS_arange, r, &u->base, &o), 0);
	expect_shape(&o, 1, (int64_t[]){8}, (int[]){0});
	ck_assert_int_eq(o.t[0].dt, DT_INT64);
	/* expand of a 1 to a symbolic size takes it; of a symbol, unifies */
	u = uf_new();
	struct meta_arg e[2] = {tnsr(2, (int64_t[]){1, 6}, (int[]){-1, 1}),
				tuparg(2, (struct meta_arg[]){sarg(4, 0), sarg(6, 2)})};
	ck_assert_int_eq(meta_infer(OPS_expand, e, &u->base, &o), 0);
	expect_shape(&o, 2, (int64_t[]){4, 6}, (int[]){0, 1});
	ck_assert_int_eq(uf_find(&u->base, 2), 1);
	/* flatten of two symbols: their product has no form */
	u = uf_new();
	struct meta_arg f[3] = {tnsr(3, (int64_t[]){2, 3, 4}, (int[]){0, 1, -1}), cnst(val_int(0)), cnst(val_int(1))};
	ck_assert_int_eq(meta_infer(OPS_flatten, f, &u->base, &o), 0);
	expect_shape(&o, 2, (int64_t[]){6, 4}, (int[]){-1, -1});
	ck_assert(is_spec(u, 0) && is_spec(u, 1));
	/* an op with no symbolic form for its arguments specializes them */
	u = uf_new();
	struct meta_arg t[3] = {tnsr(2, (int64_t[]){5, 3}, (int[]){0, -1}), cnst(val_none()), cnst(val_bool(false))};
	ck_assert_int_eq(meta_infer(OPS_tensor, t, &u->base, &o), 0);
	ck_assert(is_spec(u, 0));
}
END_TEST

/* the ops whose size arguments stay symbolic (the tracer specializes a
 * symbolic int given to any other op before the op becomes a node) */
START_TEST(test_sym_sizes_taken)
{
	const int takes[] = {OPS_reshape, OPS_view, OPS_expand, OPS_zeros, OPS_ones,
			     OPS_full, OPS_randn, OPS_rand, OPS_arange};
	const int not[] = {OPS_add, OPS_getitem, OPS_sum, OPS_transpose, OPS_permute, OPS_zeros_like, OPS_cat};
	for (size_t i = 0; i < sizeof takes / sizeof *takes; i++)
		ck_assert_msg(meta_takes_sym_sizes(takes[i]), "%s", ops_table[takes[i]].name);
	for (size_t i = 0; i < sizeof not / sizeof *not; i++)
		ck_assert_msg(!meta_takes_sym_sizes(not[i]), "%s", ops_table[not[i]].name);
	ck_assert(!meta_takes_sym_sizes(-1) && !meta_takes_sym_sizes(OPS_COUNT));
	/* as the rules behave: reshape keeps a symbolic size, unsqueeze uses its value */
	struct meta_out o;
	struct uf *u = uf_new();
	struct meta_arg x = tnsr(2, (int64_t[]){5, 3}, (int[]){0, -1});
	struct meta_arg r[2] = {x, tuparg(2, (struct meta_arg[]){sarg(5, 0), cnst(val_int(-1))})};
	ck_assert_int_eq(meta_infer(OPS_reshape, r, &u->base, &o), 0);
	expect_shape(&o, 2, (int64_t[]){5, 3}, (int[]){0, -1});
	ck_assert(!is_spec(u, 0));
	struct meta_arg q[2] = {tnsr(1, (int64_t[]){3}, (int[]){-1}), sarg(1, 0)};
	ck_assert_int_eq(meta_infer(OPS_unsqueeze, q, &u->base, &o), 0);
	ck_assert(is_spec(u, 0));
}
END_TEST

/* tensor(data) with tensors and sizes in its data: the kernel's shape and
 * dtype, whatever their values */
START_TEST(test_tensor_of_tensors)
{
	struct meta_out o;
	struct uf *u = uf_new();
	struct meta_arg s0 = tnsr(0, NULL, NULL);
	struct meta_arg items[2] = {s0, s0};
	struct meta_arg l = {.kind = META_LIST, .n = 2, .items = items};
	struct meta_arg a[3] = {l, cnst(val_none()), cnst(val_bool(false))};
	ck_assert_int_eq(meta_infer(OPS_tensor, a, &u->base, &o), 0);
	ck_assert_int_eq(o.t[0].dt, DT_FLOAT32);
	expect_shape(&o, 1, (int64_t[]){2}, (int[]){-1});
	/* a size is its value, and its symbol is specialized */
	struct meta_arg rows[2] = {tuparg(2, (struct meta_arg[]){sarg(5, 0), cnst(val_int(1))}),
				   tuparg(2, (struct meta_arg[]){cnst(val_int(2)), cnst(val_int(3))})};
	a[0] = (struct meta_arg){.kind = META_LIST, .n = 2, .items = rows};
	ck_assert_int_eq(meta_infer(OPS_tensor, a, &u->base, &o), 0);
	ck_assert_int_eq(o.t[0].dt, DT_INT64);
	expect_shape(&o, 2, (int64_t[]){2, 2}, (int[]){-1, -1});
	ck_assert(is_spec(u, 0));
	/* a tensor of more than one element is the kernel's error */
	items[1] = tnsr(1, (int64_t[]){3}, (int[]){-1});
	a[0] = l;
	ck_assert_int_eq(meta_infer(OPS_tensor, a, &u->base, &o), -1);
	ck_assert_str_eq(tj_error_peek(), "only one element tensors can be converted to Python scalars");
}
END_TEST

/* ---- the tracer's graphs: every node's rule gives what the trace recorded ----
 * Programs compiled with dynamic shapes; for each op node of each graph,
 * the rule on the node's arguments (with no context: a finished graph has
 * its symbols unified and specialized already) must give the node's
 * dtype, sizes and symbols exactly. */

static int nodes_checked, graph_failures;
static char failure[512];

static void same_node(const struct gnode *n, const struct meta_tensor *m)
{
	bool ok = n->dt == m->dt && n->ndim == m->ndim;
	for (int d = 0; ok && d < n->ndim; d++)
		ok = n->shape[d].value == m->shape[d].value && n->shape[d].sym == m->shape[d].sym;
	if (!ok && !graph_failures++) {
		struct strbuf a = STRBUF_INIT, b = STRBUF_INIT;
		struct gnode r = *n;
		r.dt = m->dt;
		r.ndim = m->ndim;
		memcpy(r.shape, m->shape, sizeof r.shape);
		graph_format_type(n, &a);
		graph_format_type(&r, &b);
		snprintf(failure, sizeof failure, "%s: traced %s, rule %s", n->name, a.buf, b.buf);
		sb_release(&a);
		sb_release(&b);
	}
}

static void on_compile(struct compile_listener *l, const struct compile_record *r)
{
	(void)l;
	const struct graph *g = r->graph;
	for (int i = 0; g && i < g->nnodes; i++) {
		const struct gnode *n = &g->nodes[i];
		if (n->kind != GN_OP)
			continue;
		struct meta_out out;
		if (meta_infer_node(g, n, NULL, &out) < 0) {
			if (!graph_failures++)
				snprintf(failure, sizeof failure, "%s: %s", n->name, tj_error_peek());
			tj_error_clear();
			continue;
		}
		nodes_checked++;
		if (n->nouts == 0) {
			same_node(n, &out.t[0]);
			continue;
		}
		/* a tuple: its items are the GN_GETITEM nodes that follow */
		for (int k = i + 1; k < g->nnodes && g->nodes[k].kind == GN_GETITEM; k++)
			if (g->nodes[k].args[0].node == i && g->nodes[k].index < out.n)
				same_node(&g->nodes[k], &out.t[g->nodes[k].index]);
	}
}

static struct compile_listener listener = {on_compile, NULL};

static void run_program(const char *text)
{
	struct runtime *rt = test_runtime_new(&listener);
	struct vm *vm = prelude_vm_new();
	vm_set_runtime(vm, rt);
	struct source *src;
	struct code *code = test_compile(text, &src);
	value r = vm_run_module(vm, code);
	ck_assert_msg(!val_is_err(r), "%s", tj_error_peek());
	vm_free(vm);
	val_decref(val_obj(VAL_CODE, code));
	source_free(src);
	test_runtime_free(rt, &listener);
}

/* f(x)'s bodies, run on x of shapes (n, 4, 5) for n = 3, 4, 6 with
 * dynamic=True and dynamic=None */
static const char *const graph_bodies[] = {
	"    return x.reshape(x.shape[0], -1) * 2\n",
	"    return x.view(x.shape[0], x.size(1), -1)\n",
	"    return x.view(-1, 20)\n",
	"    return x.reshape(4, -1, 5).sum(0)\n",
	"    n, m, k = x.shape\n    return x.reshape(k, n, m).sum(0)\n",
	"    return x[0] + x[-1] + x[1] + x[-2]\n",
	"    return x[:, 1]\n",
	"    return x[None, :, 0:]\n",
	"    return x[1:] * x[2]\n",
	"    return zeros(len(x), x.size(1)) + x.sum(2)\n",
	"    return ones(x.shape[0], 1, x.shape[2]) * x\n",
	"    return full((x.shape[0], 3), 1.5).sum() + x.sum()\n",
	"    return x.sum(2).unsqueeze(0).expand(x.size(2), -1, -1)\n",
	"    s = x.shape\n    return arange(s[0]) * 1.5\n",
	"    return arange(0, x.shape[1]).float() + x.mean()\n",
	"    return x.view(-1)\n",
	"    return x.view(-1, x.shape[2])\n",
	"    return x.reshape(len(x) * 2, -1)\n",
	"    return (x + x[:1]).abs().exp().sum(-1, keepdim=True)\n",
	"    return x.max(1)[0].sum(1) - x.min(2, True)[1].sum() + x.argmax(0).sum() + x.argmin()\n",
	"    return x.var(0) + x.mean((1, 2)) .sum() + x.prod(2).sum(1, dtype=float64).sum()\n",
	"    return softmax(x, 1) + log_softmax(x, -1) + sigmoid(x) + gelu(x) - silu(x)\n",
	"    return matmul(x, x.transpose(1, 2)) + (x @ x.permute(0, 2, 1)).T.T\n",
	"    return linear(x, ones(3, 5), zeros(3))\n",
	"    return linear(x, ones(3, 5)).flatten(1) + x.flatten(0, 1).sum(1).sum()\n",
	"    return cat([x, x * 2], 1).sum(1) + cat([x, x], 0).sum() + cat((x, x[:, :1]), 1).sum()\n",
	"    return stack([x, x + 1]).sum(0) + stack((x, x), -1).sum(-1)\n",
	"    return where(x > 1, x, 0.5) + clamp(x, 0, 2) + clamp(x, max=x.mean())\n",
	"    return x.unsqueeze(1).squeeze(1) + x[:, :1].squeeze() .unsqueeze(1).sum()\n",
	"    return (x.long() // 2 + x.bool()).double() + x.to(int64) % 3\n",
	"    return (x < 2).float() + (x >= 1) * (x == 3) + (x != 4) + (x > x[0]) + (x <= 1.5)\n",
	"    return zeros_like(x) + ones_like(x, dtype=float64) + x.clone() + x.contiguous() + x.detach()\n",
	"    return maximum(x, x[0]) + minimum(x, 2) + x ** 2 + x / 3 - (-x) + abs(x) + x.sqrt() + x.rsqrt()\n",
	"    return x.sin() + x.cos() + x.tanh() + x.relu() + x.floor() + x.ceil() + round(x) + x.sign() + x.reciprocal() + x.log()\n",
	"    return tensor([1.0, 2.0]) + eye(2).sum() + x.sum()\n",
	"    return x.round(1) + x.float() + x.sum(dim=(0, 2)).sum()\n",
};

START_TEST(test_tracer_graphs)
{
	char text[2048];
	for (int dyn = 0; dyn < 2; dyn++) {
		nodes_checked = graph_failures = 0;
		snprintf(text, sizeof text,
			 "def f(x):\n%s"
			 "g = compile(f, dynamic=%s)\n"
			 "for n in [3, 4, 6]:\n"
			 "    g(arange(n * 20).reshape(n, 4, 5).float() / 7)\n",
			 graph_bodies[_i], dyn ? "True" : "None");
		run_program(text);
		ck_assert_msg(nodes_checked > 0, "no graph in\n%s", text);
		ck_assert_msg(graph_failures == 0, "%s\nin\n%s", failure, text);
	}
}
END_TEST

static Suite *ops_meta_suite(void)
{
	Suite *s = suite_create("ops_meta");
	TCase *tc = tcase_create("columns");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_every_row_filled);
	tcase_add_test(tc, test_no_rule_is_an_error);
	suite_add_tcase(s, tc);

	/* one test case, so that the last test sees every count */
	tc = tcase_create("agree with the kernels");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_creation);
	tcase_add_test(tc, test_pointwise);
	tcase_add_test(tc, test_reductions);
	tcase_add_test(tc, test_linalg);
	tcase_add_test(tc, test_shape_ops);
	tcase_add_test(tc, test_every_rule_compared);
	suite_add_tcase(s, tc);

	tc = tcase_create("symbols");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_sym_broadcast);
	tcase_add_test(tc, test_sym_reshape);
	tcase_add_test(tc, test_sym_ops);
	tcase_add_test(tc, test_sym_sizes_taken);
	tcase_add_test(tc, test_tensor_of_tensors);
	tcase_add_loop_test(tc, test_tracer_graphs, 0, (int)(sizeof graph_bodies / sizeof *graph_bodies));
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(ops_meta_suite());
	/* in one process: test_every_rule_compared reads the counts of the others */
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	tensor_cache_clear();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
