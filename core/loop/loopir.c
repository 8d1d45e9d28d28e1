/* loopir.c - building, hashing and printing loop IR kernels (loopir.h).
 *
 * The DAG is hash-consed: a node is looked up by its content (op, sub,
 * dtype, var, operands, constant bits) in an open-addressing table before
 * it is appended, so an expression built twice is one node. Index
 * arithmetic is simplified as it is built, the few rules that views and
 * reshapes need to leave plain affine indexes (which the vectorizer
 * understands) rather than floor divisions and modulos.
 */
#include "loopir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "error.h"
#include "hash.h"
#include "strbuf.h"
#include "util.h"

struct loop_mem {
	struct arena arena;    /* buffers' names, sections' roots */
	lref *table;           /* hash-consing: node + 1, 0 empty */
	size_t table_cap;      /* a power of two */
};

static int oom(void)
{
	tj_error_set("out of memory");
	return -1;
}

struct lkernel *loop_kernel_new(void)
{
	struct lkernel *k = util_calloc(1, sizeof *k);
	if (!k)
		return NULL;
	k->mem = util_calloc(1, sizeof *k->mem);
	if (!k->mem) {
		free(k);
		return NULL;
	}
	return k;
}

void loop_kernel_free(struct lkernel *k)
{
	if (!k)
		return;
	if (k->mem) {
		arena_free(&k->mem->arena);
		free(k->mem->table);
		free(k->mem);
	}
	for (int s = 0; s < k->nsections; s++)
		free(k->sections[s].roots);
	free(k->sections);
	free(k->bufs);
	free(k->nodes);
	free(k);
}

/* ---- hash-consing ---- */

static uint64_t node_hash(const struct lnode *n)
{
	uint64_t h = HASH_FNV1A_INIT;
	int64_t words[7] = {n->op, n->sub, n->dt, n->var, n->a[0], n->a[1], n->a[2]};
	h = (h ^ hash_fnv1a(words, sizeof words)) * HASH_FNV1A_PRIME;
	return (h ^ hash_fnv1a(&n->c, sizeof n->c)) * HASH_FNV1A_PRIME;
}

static bool node_equal(const struct lnode *a, const struct lnode *b)
{
	return a->op == b->op && a->sub == b->sub && a->dt == b->dt && a->var == b->var &&
	       a->a[0] == b->a[0] && a->a[1] == b->a[1] && a->a[2] == b->a[2] &&
	       memcmp(&a->c, &b->c, sizeof a->c) == 0;
}

static int table_grow(struct lkernel *k)
{
	struct loop_mem *m = k->mem;
	size_t cap = m->table_cap ? m->table_cap * 2 : 256;
	while (cap < (size_t)(k->nnodes + 1) * 2) /* a rebuild (compact) starts from 0 */
		cap *= 2;
	lref *t = util_calloc(cap, sizeof *t);
	if (!t)
		return -1;
	for (int i = 0; i < k->nnodes; i++) {
		size_t j = node_hash(&k->nodes[i]) & (cap - 1);
		while (t[j])
			j = (j + 1) & (cap - 1);
		t[j] = i + 1;
	}
	free(m->table);
	m->table = t;
	m->table_cap = cap;
	return 0;
}

/* the node equal to n, appended when new */
static lref intern(struct lkernel *k, struct lnode n)
{
	struct loop_mem *m = k->mem;
	for (int i = 0; i < 3; i++)
		if (n.a[i] < -1 || n.a[i] >= k->nnodes)
			return -1;
	if ((size_t)(k->nnodes + 1) * 2 > m->table_cap && table_grow(k) < 0)
		return oom();
	size_t j = node_hash(&n) & (m->table_cap - 1);
	while (m->table[j]) {
		lref r = m->table[j] - 1;
		if (node_equal(&k->nodes[r], &n))
			return r;
		j = (j + 1) & (m->table_cap - 1);
	}
	if (k->nnodes == k->cap) {
		int cap = k->cap ? k->cap * 2 : 64;
		struct lnode *nodes = util_realloc(k->nodes, cap * sizeof *nodes);
		if (!nodes)
			return oom();
		k->nodes = nodes;
		k->cap = cap;
	}
	k->nodes[k->nnodes] = n;
	m->table[j] = k->nnodes + 1;
	return k->nnodes++;
}

static struct lnode node_of(enum lop op, int sub, dtype dt, lref a0, lref a1, lref a2)
{
	struct lnode n;
	memset(&n, 0, sizeof n); /* the constant's padding bits take part in the hash */
	n.op = op;
	n.sub = sub;
	n.dt = dt;
	n.var = -1;
	n.a[0] = a0;
	n.a[1] = a1;
	n.a[2] = a2;
	return n;
}

/* ---- leaves ---- */

lref loop_const_int(struct lkernel *k, dtype dt, int64_t v)
{
	struct lnode n = node_of(LOP_CONST, 0, dt, -1, -1, -1);
	n.c.i = dt == DT_BOOL ? v != 0 : v;
	return intern(k, n);
}

lref loop_const_float(struct lkernel *k, dtype dt, double v)
{
	struct lnode n = node_of(LOP_CONST, 0, dt, -1, -1, -1);
	n.c.f = dt == DT_FLOAT32 ? (double)(float)v : v;
	return intern(k, n);
}

lref loop_var_ref(struct lkernel *k, int var)
{
	if (var < 0 || var >= k->nvars)
		return -1;
	struct lnode n = node_of(LOP_VAR, 0, DT_INT64, -1, -1, -1);
	n.var = var;
	return intern(k, n);
}

lref loop_sym(struct lkernel *k, int sym)
{
	if (sym < 0)
		return -1;
	if (sym >= k->nsyms)
		k->nsyms = sym + 1;
	struct lnode n = node_of(LOP_SYM, 0, DT_INT64, -1, -1, -1);
	n.var = sym;
	return intern(k, n);
}

bool loop_is_const(const struct lkernel *k, lref r, int64_t *v)
{
	if (r < 0 || k->nodes[r].op != LOP_CONST || dtype_is_float(k->nodes[r].dt))
		return false;
	*v = k->nodes[r].c.i;
	return true;
}

/* ---- index arithmetic ---- */

static int64_t floordiv64(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static lref ibin(struct lkernel *k, binop op, lref a, lref b)
{
	return intern(k, node_of(LOP_BINARY, op, DT_INT64, a, b, -1));
}

static bool is_binop(const struct lkernel *k, lref r, binop op)
{
	return r >= 0 && k->nodes[r].op == LOP_BINARY && k->nodes[r].sub == op &&
	       k->nodes[r].dt == DT_INT64;
}

lref loop_imul(struct lkernel *k, lref a, lref b)
{
	int64_t x = 0, y = 0;
	if (a < 0 || b < 0)
		return -1;
	bool ca = loop_is_const(k, a, &x), cb = loop_is_const(k, b, &y);
	if (ca && cb)
		return loop_const_int(k, DT_INT64, (int64_t)((uint64_t)x * (uint64_t)y));
	if (ca) { /* constants on the right */
		lref t = a;
		a = b;
		b = t;
		cb = true;
		y = x;
		ca = false;
	}
	if (cb && y == 0)
		return b;
	if (cb && y == 1)
		return a;
	/* (p * c1) * c2 = p * (c1 c2) */
	int64_t z;
	if (cb && is_binop(k, a, BINOP_mul) && loop_is_const(k, k->nodes[a].a[1], &z))
		return loop_imul(k, k->nodes[a].a[0], loop_const_int(k, DT_INT64, z * y));
	if (!cb && a > b) { /* a canonical order for products of symbols */
		lref t = a;
		a = b;
		b = t;
	}
	return ibin(k, BINOP_mul, a, b);
}

/* splits r into p * c with c a constant (c = 1 when r is no such product) */
static lref split_coef(struct lkernel *k, lref r, int64_t *c)
{
	if (is_binop(k, r, BINOP_mul) && loop_is_const(k, k->nodes[r].a[1], c))
		return k->nodes[r].a[0];
	*c = 1;
	return r;
}

/* (x // b) * (b * c) + (x % b) * c = x * c: what a reshape of a contiguous
 * value leaves when it splits an index and the load joins it again. The
 * expected first term is built with the same constructors, so hash-consing
 * makes the comparison one of node numbers (b and c may be symbolic). */
static lref join_divmod(struct lkernel *k, lref p, lref q)
{
	for (int swap = 0; swap < 2; swap++) {
		lref d = swap ? q : p, m = swap ? p : q;
		int64_t cm;
		lref mv = split_coef(k, m, &cm);
		if (!is_binop(k, mv, BINOP_mod))
			continue;
		lref x = k->nodes[mv].a[0], b = k->nodes[mv].a[1];
		lref c = loop_const_int(k, DT_INT64, cm);
		lref want = loop_imul(k, loop_idiv(k, x, b), loop_imul(k, b, c));
		if (want >= 0 && want == d)
			return loop_imul(k, x, c);
	}
	return -1;
}

lref loop_iadd(struct lkernel *k, lref a, lref b)
{
	int64_t x = 0, y = 0;
	if (a < 0 || b < 0)
		return -1;
	bool ca = loop_is_const(k, a, &x), cb = loop_is_const(k, b, &y);
	if (ca && cb)
		return loop_const_int(k, DT_INT64, (int64_t)((uint64_t)x + (uint64_t)y));
	if (ca && x == 0)
		return b;
	if (cb && y == 0)
		return a;
	lref j = join_divmod(k, a, b);
	if (j >= 0)
		return j;
	/* (p + c1) + c2 = p + (c1 + c2): offsets gather on the right */
	int64_t z;
	if (cb && is_binop(k, a, BINOP_add) && loop_is_const(k, k->nodes[a].a[1], &z))
		return loop_iadd(k, k->nodes[a].a[0], loop_const_int(k, DT_INT64, z + y));
	if (ca) {
		lref t = a;
		a = b;
		b = t;
	}
	/* (p + c) + q = (p + q) + c, so that a constant offset stays outermost
	 * and the join above sees the two terms of a split index side by side */
	if (is_binop(k, a, BINOP_add) && loop_is_const(k, k->nodes[a].a[1], &z) && !loop_is_const(k, b, &y))
		return loop_iadd(k, loop_iadd(k, k->nodes[a].a[0], b), k->nodes[a].a[1]);
	/* (r + d) + m where d, m join: r + x*c */
	if (is_binop(k, a, BINOP_add)) {
		lref j2 = join_divmod(k, k->nodes[a].a[1], b);
		if (j2 >= 0)
			return loop_iadd(k, k->nodes[a].a[0], j2);
	}
	return ibin(k, BINOP_add, a, b);
}

/* whether r is a var whose trip count is a constant <= bound: then
 * r // bound is 0 and r % bound is r */
static bool var_below(const struct lkernel *k, lref r, int64_t bound)
{
	int64_t n;
	return r >= 0 && k->nodes[r].op == LOP_VAR && loop_is_const(k, k->vars[k->nodes[r].var].size, &n) &&
	       n <= bound && bound > 0;
}

lref loop_idiv(struct lkernel *k, lref a, lref b)
{
	int64_t x = 0, y = 0;
	if (a < 0 || b < 0)
		return -1;
	bool cb = loop_is_const(k, b, &y);
	if (loop_is_const(k, a, &x) && cb && y != 0)
		return loop_const_int(k, DT_INT64, floordiv64(x, y));
	if (cb && y == 1)
		return a;
	if (loop_is_const(k, a, &x) && x == 0)
		return a;
	if (cb && var_below(k, a, y))
		return loop_const_int(k, DT_INT64, 0);
	return ibin(k, BINOP_floordiv, a, b);
}

lref loop_imod(struct lkernel *k, lref a, lref b)
{
	int64_t x = 0, y = 0;
	if (a < 0 || b < 0)
		return -1;
	bool cb = loop_is_const(k, b, &y);
	if (loop_is_const(k, a, &x) && cb && y != 0)
		return loop_const_int(k, DT_INT64, x - floordiv64(x, y) * y);
	if (cb && y == 1)
		return loop_const_int(k, DT_INT64, 0);
	if (loop_is_const(k, a, &x) && x == 0)
		return a;
	if (cb && var_below(k, a, y))
		return a;
	return ibin(k, BINOP_mod, a, b);
}

/* ---- values ---- */

lref loop_load(struct lkernel *k, int buf, lref index)
{
	if (index < 0 || buf < 0 || buf >= k->nbufs)
		return -1;
	struct lnode n = node_of(LOP_LOAD, 0, k->bufs[buf].dt, index, -1, -1);
	n.var = buf;
	return intern(k, n);
}

lref loop_store(struct lkernel *k, int buf, lref index, lref value)
{
	if (index < 0 || value < 0 || buf < 0 || buf >= k->nbufs)
		return -1;
	if (k->nodes[value].dt != k->bufs[buf].dt) {
		tj_error_set("loop IR: store of %s into a %s buffer", dtype_name(k->nodes[value].dt),
			     dtype_name(k->bufs[buf].dt));
		return -1;
	}
	struct lnode n = node_of(LOP_STORE, 0, k->bufs[buf].dt, index, value, -1);
	n.var = buf;
	return intern(k, n);
}

lref loop_unary(struct lkernel *k, unop op, lref a)
{
	if (a < 0)
		return -1;
	dtype dt = k->nodes[a].dt;
	if (op == UNOP_logical_not)
		dt = DT_BOOL;
	return intern(k, node_of(LOP_UNARY, op, dt, a, -1, -1));
}

static bool binop_is_bool(binop op)
{
	return op >= BINOP_eq && op <= BINOP_logical_or;
}

static bool is_float_const(const struct lkernel *k, lref r, double v)
{
	const struct lnode *n = &k->nodes[r];
	return n->op == LOP_CONST && dtype_is_float(n->dt) && n->c.f == v;
}

/* x when d is 1 + exp(-x) (either order of the add), else -1 */
static lref sigmoid_denominator_of(const struct lkernel *k, lref d)
{
	const struct lnode *add = &k->nodes[d];
	if (add->op != LOP_BINARY || add->sub != BINOP_add)
		return -1;
	lref e = is_float_const(k, add->a[1], 1.0) ? add->a[0] : is_float_const(k, add->a[0], 1.0) ? add->a[1] : -1;
	if (e < 0 || k->nodes[e].op != LOP_UNARY || k->nodes[e].sub != UNOP_exp)
		return -1;
	const struct lnode *neg = &k->nodes[k->nodes[e].a[0]];
	return neg->op == LOP_UNARY && neg->sub == UNOP_neg ? neg->a[0] : -1;
}

lref loop_binary(struct lkernel *k, binop op, lref a, lref b)
{
	if (a < 0 || b < 0)
		return -1;
	dtype dt = k->nodes[a].dt;
	/* sigmoid(x) and silu(x) spelled out in a program, 1 / (1 + exp(-x))
	 * and x / (1 + exp(-x)); as one op the code generator knows the
	 * denominator is finite and at least 1 (cg_math.c) */
	if (op == BINOP_div && dtype_is_float(dt)) {
		lref x = sigmoid_denominator_of(k, b);
		if (x >= 0 && is_float_const(k, a, 1.0))
			return loop_unary(k, UNOP_sigmoid, x);
		if (x >= 0 && x == a)
			return loop_unary(k, UNOP_silu, x);
		/* a division by a power of two is a multiplication by its
		 * reciprocal, which is exact: the same result, at a third of a
		 * divide's cost. Not by another constant: x * (1/3) is within 1
		 * ulp of x / 3 but not it, and that prints (eager's 1537 / 3 is
		 * 512.3333, 1537 * (1/3) 512.3334); nor when the reciprocal is
		 * not a normal number. */
		const struct lnode *c = &k->nodes[b];
		int e = 0;
		double r = c->op == LOP_CONST ? 1.0 / c->c.f : 0;
		double tiny = dt == DT_FLOAT32 ? 0x1p-126 : 0x1p-1022, huge = dt == DT_FLOAT32 ? 0x1p127 : 0x1p1023;
		if (c->op == LOP_CONST && c->c.f != 0 && isfinite(c->c.f) && fabs(frexp(c->c.f, &e)) == 0.5 &&
		    fabs(r) >= tiny && fabs(r) <= huge)
			return loop_binary(k, BINOP_mul, a, loop_const_float(k, dt, r));
	}
	if (dt != k->nodes[b].dt) {
		tj_error_set("loop IR: %s of %s and %s", binop_names[op], dtype_name(dt),
			     dtype_name(k->nodes[b].dt));
		return -1;
	}
	if (dt == DT_INT64) {
		switch (op) {
		case BINOP_add: return loop_iadd(k, a, b);
		case BINOP_mul: return loop_imul(k, a, b);
		default: break;
		}
	}
	return intern(k, node_of(LOP_BINARY, op, binop_is_bool(op) ? DT_BOOL : dt, a, b, -1));
}

lref loop_where(struct lkernel *k, lref cond, lref a, lref b)
{
	if (cond < 0 || a < 0 || b < 0)
		return -1;
	if (a == b)
		return a;
	return intern(k, node_of(LOP_WHERE, 0, k->nodes[a].dt, cond, a, b));
}

lref loop_cast(struct lkernel *k, dtype dt, lref a)
{
	if (a < 0)
		return -1;
	const struct lnode *n = &k->nodes[a];
	if (n->dt == dt)
		return a;
	if (n->op == LOP_CONST) {
		if (dtype_is_float(n->dt))
			return dtype_is_float(dt) ? loop_const_float(k, dt, n->c.f)
						  : loop_const_int(k, dt, dt == DT_BOOL ? n->c.f != 0 : (int64_t)n->c.f);
		return dtype_is_float(dt) ? loop_const_float(k, dt, (double)n->c.i) : loop_const_int(k, dt, n->c.i);
	}
	return intern(k, node_of(LOP_CAST, 0, dt, a, -1, -1));
}

lref loop_reduce(struct lkernel *k, redop op, dtype acc, lref a)
{
	if (a < 0)
		return -1;
	return intern(k, node_of(LOP_REDUCE, op, acc, a, -1, -1));
}

bool loop_uses_var(const struct lkernel *k, lref r, int var)
{
	if (r < 0)
		return false;
	const struct lnode *n = &k->nodes[r];
	if (n->op == LOP_VAR)
		return n->var == var;
	for (int i = 0; i < 3; i++)
		if (n->a[i] >= 0 && loop_uses_var(k, n->a[i], var))
			return true;
	return false;
}

int64_t loop_eval_size(const struct lkernel *k, lref r, const int64_t *syms)
{
	const struct lnode *n = &k->nodes[r];
	switch (n->op) {
	case LOP_CONST: return n->c.i;
	case LOP_SYM: return syms[n->var];
	case LOP_BINARY: {
		int64_t a = loop_eval_size(k, n->a[0], syms), b = loop_eval_size(k, n->a[1], syms);
		switch (n->sub) {
		case BINOP_add: return a + b;
		case BINOP_mul: return a * b;
		case BINOP_floordiv: return b ? floordiv64(a, b) : 0;
		case BINOP_mod: return b ? a - floordiv64(a, b) * b : 0;
		default: return 0;
		}
	}
	default: return 0;
	}
}

/* ---- structure ---- */

int loop_add_buf(struct lkernel *k, dtype dt, bool written, lref numel, const char *name)
{
	struct lbuf *b = util_realloc(k->bufs, (k->nbufs + 1) * sizeof *b);
	if (!b)
		return oom();
	k->bufs = b;
	char *nm = arena_strdup(&k->mem->arena, name ? name : "");
	if (!nm)
		return oom();
	k->bufs[k->nbufs] = (struct lbuf){.dt = dt, .written = written, .numel = numel, .name = nm};
	return k->nbufs++;
}

int loop_add_var(struct lkernel *k, lref size, int section)
{
	if (k->nvars == LOOP_MAX_VARS) {
		tj_error_set("loop IR: more than %d loop variables", LOOP_MAX_VARS);
		return -1;
	}
	if (size < 0 || section >= k->nsections || (section < 0 && k->nsections > 0))
		return -1;
	if (section >= 0) {
		struct lsection *s = &k->sections[section];
		s->inner[s->ninner++] = k->nvars;
	} else {
		k->nouter++;
	}
	k->vars[k->nvars] = (struct lvar){.size = size, .section = section};
	return k->nvars++;
}

int loop_add_section(struct lkernel *k)
{
	struct lsection *s = util_realloc(k->sections, (k->nsections + 1) * sizeof *s);
	if (!s)
		return oom();
	k->sections = s;
	memset(&s[k->nsections], 0, sizeof *s);
	return k->nsections++;
}

int loop_add_root(struct lkernel *k, int section, lref node)
{
	if (node < 0 || section < 0 || section >= k->nsections)
		return -1;
	struct lsection *s = &k->sections[section];
	lref *roots = util_realloc(s->roots, (s->nroots + 1) * sizeof *roots);
	if (!roots)
		return oom();
	s->roots = roots;
	s->roots[s->nroots++] = node;
	return 0;
}

/* ---- hash and listing ---- */

uint64_t loop_kernel_hash(const struct lkernel *k)
{
	uint64_t h = HASH_FNV1A_INIT;
#define MIX(x)                                                     \
	do {                                                       \
		int64_t w_ = (int64_t)(x);                         \
		h = (h ^ hash_fnv1a(&w_, sizeof w_)) * HASH_FNV1A_PRIME; \
	} while (0)
	MIX(k->nbufs);
	for (int i = 0; i < k->nbufs; i++) {
		MIX(k->bufs[i].dt);
		MIX(k->bufs[i].written);
	}
	MIX(k->nsyms);
	MIX(k->nvars);
	MIX(k->nouter);
	for (int i = 0; i < k->nvars; i++) {
		MIX(k->vars[i].size);
		MIX(k->vars[i].section);
	}
	MIX(k->nsections);
	for (int s = 0; s < k->nsections; s++) {
		MIX(k->sections[s].nroots);
		for (int i = 0; i < k->sections[s].nroots; i++)
			MIX(k->sections[s].roots[i]);
	}
	MIX(k->nnodes);
	for (int i = 0; i < k->nnodes; i++)
		MIX(node_hash(&k->nodes[i]));
#undef MIX
	return h;
}

static void mark(const struct lkernel *k, lref r, bool *keep)
{
	if (r < 0 || keep[r])
		return;
	keep[r] = true;
	for (int i = 0; i < 3; i++)
		mark(k, k->nodes[r].a[i], keep);
}

/* drops the nodes that no root, size or length reads (what a builder made
 * and did not use), keeping the others' order: the listing and the hash
 * then depend only on what the kernel computes */
static void compact(struct lkernel *k)
{
	bool *keep = util_calloc((size_t)k->nnodes + 1, sizeof *keep);
	lref *to = util_malloc(((size_t)k->nnodes + 1) * sizeof *to);
	if (!keep || !to)
		goto cleanup; /* the kernel stays as it is: still correct */
	for (int s = 0; s < k->nsections; s++)
		for (int i = 0; i < k->sections[s].nroots; i++)
			mark(k, k->sections[s].roots[i], keep);
	for (int v = 0; v < k->nvars; v++)
		mark(k, k->vars[v].size, keep);
	for (int b = 0; b < k->nbufs; b++)
		mark(k, k->bufs[b].numel, keep);
	int n = 0;
	for (int r = 0; r < k->nnodes; r++) {
		to[r] = keep[r] ? n : -1;
		if (!keep[r])
			continue;
		struct lnode nd = k->nodes[r];
		for (int i = 0; i < 3; i++)
			if (nd.a[i] >= 0)
				nd.a[i] = to[nd.a[i]];
		k->nodes[n++] = nd;
	}
	k->nnodes = n;
	for (int s = 0; s < k->nsections; s++)
		for (int i = 0; i < k->sections[s].nroots; i++)
			k->sections[s].roots[i] = to[k->sections[s].roots[i]];
	for (int v = 0; v < k->nvars; v++)
		k->vars[v].size = to[k->vars[v].size];
	for (int b = 0; b < k->nbufs; b++)
		k->bufs[b].numel = k->bufs[b].numel >= 0 ? to[k->bufs[b].numel] : -1;
	/* the table points at old numbers: rebuild it */
	free(k->mem->table);
	k->mem->table = NULL;
	k->mem->table_cap = 0;
	table_grow(k);
cleanup:
	free(keep);
	free(to);
}

void loop_kernel_finish(struct lkernel *k)
{
	compact(k);
	snprintf(k->name, sizeof k->name, "k_%016llx", (unsigned long long)loop_kernel_hash(k));
}

/* an index expression (int64 arithmetic of vars, symbols, constants) infix */
static bool is_index(const struct lkernel *k, lref r)
{
	const struct lnode *n = &k->nodes[r];
	if (n->dt != DT_INT64)
		return false;
	if (n->op == LOP_VAR || n->op == LOP_SYM || n->op == LOP_CONST)
		return true;
	if (n->op != LOP_BINARY)
		return false;
	return is_index(k, n->a[0]) && is_index(k, n->a[1]);
}

static void format_ref(const struct lkernel *k, struct strbuf *sb, lref r, int prec);

static void format_index(const struct lkernel *k, struct strbuf *sb, lref r, int prec)
{
	const struct lnode *n = &k->nodes[r];
	switch (n->op) {
	case LOP_VAR: sb_printf(sb, "v%d", n->var); return;
	case LOP_SYM: sb_printf(sb, "s%d", n->var); return;
	case LOP_CONST: sb_printf(sb, "%lld", (long long)n->c.i); return;
	default: break;
	}
	/* precedence: + is 1, the others 2 */
	int p = n->sub == BINOP_add ? 1 : 2;
	const char *op = n->sub == BINOP_add ? " + " : n->sub == BINOP_mul ? "*" : n->sub == BINOP_floordiv ? "//" : "%";
	if (p < prec)
		sb_putc(sb, '(');
	format_ref(k, sb, n->a[0], p);
	sb_puts(sb, op);
	format_ref(k, sb, n->a[1], p + 1);
	if (p < prec)
		sb_putc(sb, ')');
}

static void format_ref(const struct lkernel *k, struct strbuf *sb, lref r, int prec)
{
	const struct lnode *n = &k->nodes[r];
	if (is_index(k, r))
		format_index(k, sb, r, prec);
	else if (n->op == LOP_CONST && dtype_is_float(n->dt))
		sb_printf(sb, "%.9g", n->c.f);
	else if (n->op == LOP_CONST)
		sb_printf(sb, n->dt == DT_BOOL ? (n->c.i ? "True" : "False") : "%lld", (long long)n->c.i);
	else
		sb_printf(sb, "t%d", (int)r);
}

static void format_node(const struct lkernel *k, struct strbuf *sb, lref r, const char *indent)
{
	const struct lnode *n = &k->nodes[r];
	if (n->op == LOP_STORE) {
		sb_printf(sb, "%sbuf%d[", indent, n->var);
		format_ref(k, sb, n->a[0], 0);
		sb_puts(sb, "] = ");
		format_ref(k, sb, n->a[1], 0);
		sb_putc(sb, '\n');
		return;
	}
	sb_printf(sb, "%st%d: %s = ", indent, (int)r, dtype_name(n->dt));
	switch (n->op) {
	case LOP_LOAD:
		sb_printf(sb, "buf%d[", n->var);
		format_ref(k, sb, n->a[0], 0);
		sb_putc(sb, ']');
		break;
	case LOP_UNARY: sb_printf(sb, "%s(", unop_names[n->sub]); break;
	case LOP_BINARY: sb_printf(sb, "%s(", binop_names[n->sub]); break;
	case LOP_WHERE: sb_puts(sb, "where("); break;
	case LOP_CAST: sb_printf(sb, "to_%s(", dtype_name(n->dt)); break;
	case LOP_REDUCE: sb_printf(sb, "reduce_%s(", redop_names[n->sub]); break;
	default: sb_puts(sb, "?("); break;
	}
	if (n->op != LOP_LOAD) {
		for (int i = 0; i < 3 && n->a[i] >= 0; i++) {
			if (i)
				sb_puts(sb, ", ");
			format_ref(k, sb, n->a[i], 0);
		}
		sb_putc(sb, ')');
	}
	sb_putc(sb, '\n');
}

/* prints the nodes that r needs and that are not printed yet, operands first */
static void format_tree(const struct lkernel *k, struct strbuf *sb, lref r, bool *done, const char *indent)
{
	if (done[r] || is_index(k, r) || k->nodes[r].op == LOP_CONST)
		return;
	done[r] = true;
	for (int i = 0; i < 3; i++)
		if (k->nodes[r].a[i] >= 0)
			format_tree(k, sb, k->nodes[r].a[i], done, indent);
	format_node(k, sb, r, indent);
}

static void format_size(const struct lkernel *k, struct strbuf *sb, lref size)
{
	format_ref(k, sb, size, 0);
}

char *loop_kernel_format(const struct lkernel *k)
{
	struct strbuf sb = {0};
	bool *done = util_calloc(k->nnodes + 1, 1);
	if (!done)
		return NULL;
	sb_printf(&sb, "kernel %s(", k->name);
	for (int i = 0; i < k->nbufs; i++)
		sb_printf(&sb, "%sbuf%d: %s %s%s%s", i ? ", " : "", i, k->bufs[i].written ? "out" : "in",
			  dtype_name(k->bufs[i].dt), k->bufs[i].name[0] ? " " : "", k->bufs[i].name);
	sb_puts(&sb, ")\n");
	char indent[2 * LOOP_MAX_VARS + 3] = "  ";
	int depth = 1;
	for (int v = 0; v < k->nouter; v++) {
		sb_printf(&sb, "%sfor v%d in 0..", indent, v);
		format_size(k, &sb, k->vars[v].size);
		sb_puts(&sb, ":\n");
		indent[2 * depth] = ' ';
		indent[2 * depth + 1] = ' ';
		indent[2 * ++depth] = '\0';
	}
	for (int s = 0; s < k->nsections; s++) {
		const struct lsection *sec = &k->sections[s];
		int d = depth;
		char in[sizeof indent];
		memcpy(in, indent, sizeof in);
		for (int i = 0; i < sec->ninner; i++) {
			int v = sec->inner[i];
			sb_printf(&sb, "%sfor v%d in 0..", in, v);
			format_size(k, &sb, k->vars[v].size);
			sb_puts(&sb, ":\n");
			in[2 * d] = ' ';
			in[2 * d + 1] = ' ';
			in[2 * ++d] = '\0';
		}
		for (int i = 0; i < sec->nroots; i++)
			format_tree(k, &sb, sec->roots[i], done, in);
	}
	free(done);
	return sb_detach(&sb);
}
