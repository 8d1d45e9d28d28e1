/* inductor_lower.c - graph -> steps of loop IR kernels and extern calls
 * (inductor_lower.h says which nodes fuse).
 *
 * Two passes. The first walks the nodes in order and forms the groups: a
 * member joins the open group when its value can be emitted in the
 * group's loops (a trial emission into a scratch kernel: a reduction of
 * the group read at another row than the one being computed does not
 * fit). The second builds each group's kernel from scratch in its final
 * shape (reductions' sections first, then one section for the S-shaped
 * stores and one for the others), storing only the members read outside
 * the group.
 *
 * The values themselves are inductor_emit.c's (ind_emit).
 */
#include "inductor_impl.h"

#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "error.h"
#include "ops.h"
#include "util.h"

/* L->owner[i] of an inlined node read by no group, or by several */
#define OWNER_NONE (-2)
#define OWNER_MANY (-1)

/* ---- building a group's kernel ---- */

/* the op node whose args a reduction member reads (an item of max / min
 * with a dim: the tuple node) and its redop */
static const struct gnode *reduce_src(const struct lower *L, int i, redop *op)
{
	const struct gnode *n = &L->g->nodes[i];
	if (n->kind != GN_GETITEM) {
		*op = (redop)ind_op_aux(n->op);
		return n;
	}
	const struct gnode *t = &L->g->nodes[n->args[0].node];
	bool is_max = t->op == OPS_max;
	*op = n->index == 0 ? (is_max ? REDOP_max : REDOP_min) : (is_max ? REDOP_argmax : REDOP_argmin);
	return t;
}

/* the dims that reduction node i reduces (of its input) */
static int reduce_dims(struct lower *L, int i, bool *red)
{
	redop rop;
	return ind_reduced_dims(L->g, reduce_src(L, i, &rop), red);
}

/* a fresh kernel in no group (a view that may be an alias) or group gi */
static int kernel_begin(struct lower *L, int gi)
{
	loop_kernel_free(L->k);
	L->k = loop_kernel_new();
	arena_free(&L->arena);
	memset(L->memo, 0, L->g->nnodes * sizeof *L->memo);
	for (int b = 0; b < L->p->nbufs; b++)
		L->kbuf[b] = -1;
	for (int i = 0; i < L->g->nnodes; i++)
		L->reduce_ref[i] = -1;
	L->cur = gi >= 0 ? &L->groups[gi] : NULL;
	L->cur_index = gi;
	L->incompatible = false;
	if (!L->k) {
		tj_error_set("out of memory");
		return -1;
	}
	return 0;
}

/* the outer loops: every dim of S (or one flat var over S) for a
 * pointwise group, the kept dims for a reduction group */
static int outer_loops(struct lower *L, bool flat)
{
	struct lkernel *k = L->k;
	const struct group *G = L->cur;
	L->sc.nouter = 0;
	if (flat) {
		lref numel = loop_const_int(k, DT_INT64, 1);
		for (int d = 0; d < G->ndim; d++)
			numel = loop_imul(k, numel, ind_size_ref(k, G->shape[d]));
		int v = loop_add_var(k, numel, -1);
		L->sc.outer[L->sc.nouter++] = loop_var_ref(k, v);
		ind_split_index(k, L->sc.outer[0], G->ndim, G->shape, L->sc.idx);
		return v < 0 ? -1 : 0;
	}
	for (int d = 0; d < G->ndim; d++) {
		if (G->red[d])
			continue;
		if (ind_size_is_one(G->shape[d])) {
			/* index 0, as a broadcast read of the dim has it and as
			 * the flat loop splits it: one memo key an element */
			L->sc.outer[L->sc.nouter++] = L->sc.idx[d] = loop_const_int(k, DT_INT64, 0);
			continue;
		}
		int v = loop_add_var(k, ind_size_ref(k, G->shape[d]), -1);
		if (v < 0)
			return -1;
		L->sc.outer[L->sc.nouter++] = L->sc.idx[d] = loop_var_ref(k, v);
	}
	return 0;
}

/* a section with inner loops over R: S's index there */
static int inner_section(struct lower *L)
{
	struct lkernel *k = L->k;
	const struct group *G = L->cur;
	int s = loop_add_section(k);
	if (s < 0)
		return -1;
	for (int d = 0, o = 0; d < G->ndim; d++) {
		if (!G->red[d]) {
			L->sc.idx[d] = L->sc.outer[o++];
			continue;
		}
		if (ind_size_is_one(G->shape[d])) {
			/* a reduced dim of size 1 too: index 0, as broadcasts
			 * read it (outer_loops) */
			L->sc.idx[d] = loop_const_int(k, DT_INT64, 0);
			continue;
		}
		int v = loop_add_var(k, ind_size_ref(k, G->shape[d]), s);
		if (v < 0)
			return -1;
		L->sc.idx[d] = loop_var_ref(k, v);
	}
	return s;
}

/* member i's index in the current section: S's for an S-shaped member,
 * the natural index of the reduced shape otherwise */
static void member_index(struct lower *L, int i, lref *idx)
{
	const struct gnode *n = &L->g->nodes[i];
	const struct group *G = L->cur;
	if (ind_same_shape(n->ndim, n->shape, G->ndim, G->shape)) {
		memcpy(idx, L->sc.idx, G->ndim * sizeof *idx);
		return;
	}
	bool keep = n->ndim == G->ndim;
	for (int d = 0, j = 0, o = 0; d < G->ndim; d++) {
		if (G->red[d]) {
			if (keep)
				idx[j++] = loop_const_int(L->k, DT_INT64, 0);
		} else {
			idx[j++] = L->sc.outer[o++];
		}
	}
}

static bool reduced_shape_of(const struct group *G, const struct gnode *n)
{
	int j = 0;
	bool keep = n->ndim == G->ndim;
	for (int d = 0; d < G->ndim; d++) {
		if (G->red[d]) {
			if (keep && !ind_size_is_one(n->shape[j++]))
				return false;
		} else if (j >= n->ndim || !ind_same_size(n->shape[j++], G->shape[d])) {
			return false;
		}
	}
	return j == n->ndim;
}

static lref emit_reduce(struct lower *L, int i, int section)
{
	const struct gnode *n = &L->g->nodes[i];
	redop op;
	const struct gnode *src = reduce_src(L, i, &op);
	const struct gnode *x = &L->g->nodes[src->args[0].node];
	dtype acc = n->dt;
	if (op == REDOP_sum || op == REDOP_prod)
		acc = dtype_is_float(n->dt) ? DT_FLOAT64 : DT_INT64; /* as the eager kernels accumulate */
	dtype in = (op == REDOP_argmax || op == REDOP_argmin) ? x->dt : acc;
	lref v = ind_emit(L, src->args[0].node, L->sc.idx);
	lref r = loop_reduce(L->k, op, op == REDOP_argmax || op == REDOP_argmin ? DT_INT64 : acc, loop_cast(L->k, in, v));
	if (r < 0 || loop_add_root(L->k, section, r) < 0)
		return -1;
	return L->reduce_ref[i] = loop_cast(L->k, n->dt, r);
}

/* stores member i at its index in section s when store, else only
 * checks that it can be emitted there */
static int emit_member(struct lower *L, int i, int s, bool store)
{
	const struct gnode *n = &L->g->nodes[i];
	lref idx[TENSOR_MAX_DIMS];
	member_index(L, i, idx);
	lref v = ind_emit(L, i, idx);
	if (v < 0)
		return -1;
	if (!store)
		return 0;
	int b = ind_kernel_buf(L, L->p->node_buf[i]);
	if (b < 0)
		return -1;
	L->k->bufs[b].written = true;
	return loop_add_root(L->k, s, loop_store(L->k, b, ind_linear_index(L->k, n->ndim, n->shape, idx), v));
}

/* whether arg a (a node, or a list or tuple of them: cat's) reads a node
 * of dep, and whether it reads m */
static void arg_reads(const struct garg *a, const bool *dep, int m, bool *reads, bool *reads_m)
{
	if (a->kind == GARG_NODE) {
		*reads |= dep[a->node];
		*reads_m |= a->node == m;
	} else if (a->kind == GARG_LIST || a->kind == GARG_TUPLE) {
		for (int k = 0; k < a->n; k++)
			arg_reads(&a->items[k], dep, m, reads, reads_m);
	}
}

/* ---- a reduction's argument, kept for the last section ---- */

/* A reduction group's last S section computes its S-shaped members
 * again, and one that reads a reduction's argument (softmax's
 * exp(x - max) / sum(exp(x - max)), a row normalization's x / x.sum(-1))
 * would compute that argument a second time. When it costs a
 * transcendental, the reduction's section also stores it into the
 * buffer of such a member (of its dtype), and the last section loads it
 * from there before it stores the member over it: an element's
 * transcendentals computed once, a row's store and load that stay in
 * the cache, and that code emitted once. */
struct kept {
	int node;   /* the argument E, -1 when none */
	int reduce; /* the reduction member whose section computes E */
	int member; /* the member M whose buffer holds E between the sections */
	int buf;    /* M's kernel buffer, once E is stored there */
	lref load;  /* E in the last section: the load from there */
};

/* the first member of group gi that the last section stores and that
 * reads node e at its own index (through pointwise nodes), of e's dtype,
 * in a buffer of its own; -1 when none */
static int member_reading(struct lower *L, int gi, const bool *store, int e)
{
	const struct graph *g = L->g;
	const struct group *G = &L->groups[gi];
	bool *dep = util_calloc((size_t)g->nnodes + 1, sizeof *dep);
	if (!dep)
		return -1; /* not kept: computing it twice is still right */
	dep[e] = true;
	int found = -1;
	for (int i = e + 1; i < g->nnodes && found < 0; i++) {
		const struct gnode *n = &g->nodes[i];
		bool reads = false, reads_e = false;
		for (int a = 0; a < n->nargs; a++)
			arg_reads(&n->args[a], dep, e, &reads, &reads_e);
		bool inlined = !L->member[i];
		bool here = L->group_of[i] == gi || (inlined && (L->owner[i] == gi || L->owner[i] == OWNER_MANY));
		if (!reads || !here || L->cls[i] != NC_POINTWISE ||
		    !ind_same_shape(n->ndim, n->shape, G->ndim, G->shape))
			continue;
		dep[i] = true;
		const struct ind_buf *b = &L->p->bufs[L->p->node_buf[i]];
		if (L->group_of[i] == gi && store[i] && n->dt == g->nodes[e].dt && b->kind == IBUF_TEMP &&
		    b->alias_of < 0)
			found = i;
	}
	free(dep);
	return found;
}

/* reduction member r's argument E and a member M that reads it (true),
 * as in struct kept */
static bool kept_candidate(struct lower *L, int gi, const bool *store, int r, struct kept *kp)
{
	const struct group *G = &L->groups[gi];
	redop op;
	const struct gnode *src = reduce_src(L, r, &op);
	if (op == REDOP_argmax || op == REDOP_argmin || src->nargs < 1 || src->args[0].kind != GARG_NODE)
		return false;
	int e = src->args[0].node;
	const struct gnode *en = &L->g->nodes[e];
	if (!dtype_is_float(en->dt) || !ind_same_shape(en->ndim, en->shape, G->ndim, G->shape))
		return false;
	int m = member_reading(L, gi, store, e);
	*kp = (struct kept){.node = e, .reduce = r, .member = m, .buf = -1, .load = -1};
	return m >= 0;
}

/* whether loop value r computes a transcendental, or reads node
 * target when target >= 0 (not through a reduction's result: an earlier
 * section computed it) */
static bool section_value_has(const struct lkernel *k, lref r, lref target, bool *seen)
{
	if (r < 0 || seen[r])
		return false;
	seen[r] = true;
	const struct lnode *n = &k->nodes[r];
	if (target >= 0 ? r == target : n->op == LOP_UNARY && loop_unop_is_transcendental((enum unop)n->sub))
		return true;
	if (n->op == LOP_REDUCE)
		return false;
	for (int j = 0; j < 3; j++)
		if (section_value_has(k, n->a[j], target, seen))
			return true;
	return false;
}

static bool value_has(const struct lkernel *k, lref r, lref target)
{
	bool *seen = util_calloc((size_t)k->nnodes + 1, sizeof *seen);
	bool has = seen && section_value_has(k, r, target, seen);
	free(seen);
	return has;
}

/* in section s, reduction member r's: stores its argument E into the
 * buffer of a member M that reads it, when E costs a transcendental
 * (kp->buf set then) */
static int keep_argument(struct lower *L, int gi, const bool *store, int r, struct kept *kp, int s)
{
	struct lkernel *k = L->k;
	if (!kept_candidate(L, gi, store, r, kp))
		return 0;
	lref v = ind_emit(L, kp->node, L->sc.idx); /* the reduction's own */
	if (v < 0)
		return -1;
	if (!value_has(k, v, -1))
		return 0;
	const struct gnode *mn = &L->g->nodes[kp->member];
	int b = ind_kernel_buf(L, L->p->node_buf[kp->member]);
	if (b < 0)
		return -1;
	k->bufs[b].written = true;
	lref at = ind_linear_index(k, mn->ndim, mn->shape, L->sc.idx);
	if (loop_add_root(k, s, loop_store(k, b, at, v)) < 0)
		return -1;
	kp->buf = b;
	return 0;
}

/* in the last section: E is the load of where it was kept */
static int load_kept(struct lower *L, struct kept *kp)
{
	const struct gnode *mn = &L->g->nodes[kp->member];
	lref at = ind_linear_index(L->k, mn->ndim, mn->shape, L->sc.idx);
	kp->load = loop_load(L->k, kp->buf, at);
	return kp->load < 0 ? -1 : ind_emit_known(L, kp->node, L->sc.idx, kp->load);
}

/* after the last section: whether M's value reads the load of E, which
 * then runs before M's store over it (each other reader shares it). A
 * member that read E at another index would compute E again, and a
 * reader of the load after M's store would get M's value: the kernel is
 * built again without keeping E. (A dim of size 1 was such an index
 * until outer_loops gave it the 0 that broadcast reads use.) */
static bool kept_read(struct lower *L, const struct kept *kp)
{
	lref idx[TENSOR_MAX_DIMS];
	member_index(L, kp->member, idx);
	return value_has(L->k, ind_emit(L, kp->member, idx), kp->load);
}

/* builds group gi's kernel into L->k: a trial (every member emitted, no
 * store) or the final kernel (stores of the members in store[]) */
static int build_group(struct lower *L, int gi, const bool *store, bool flat)
{
	if (kernel_begin(L, gi) < 0 || outer_loops(L, flat) < 0)
		return -1;
	const struct group *G = L->cur;
	if (G->nred == 0) {
		int s = loop_add_section(L->k);
		for (int m = 0; m < G->nmembers; m++)
			if (s < 0 || emit_member(L, G->members[m], s, store && store[G->members[m]]) < 0)
				return -1;
		return 0;
	}
	struct kept kp = {.buf = -1, .load = -1};
	for (int m = 0; m < G->nmembers; m++) {
		int i = G->members[m];
		if (L->cls[i] == NC_REDUCE) {
			int s = inner_section(L);
			if (s < 0 || emit_reduce(L, i, s) < 0 ||
			    (store && !L->no_keep && kp.buf < 0 && keep_argument(L, gi, store, i, &kp, s) < 0))
				return -1;
		}
	}
	int s = inner_section(L);
	if (s < 0 || (kp.buf >= 0 && load_kept(L, &kp) < 0))
		return -1;
	for (int m = 0; m < G->nmembers; m++) {
		int i = G->members[m];
		const struct gnode *n = &L->g->nodes[i];
		if (L->cls[i] != NC_REDUCE && ind_same_shape(n->ndim, n->shape, G->ndim, G->shape) &&
		    emit_member(L, i, s, store && store[i]) < 0)
			return -1;
	}
	if (kp.buf >= 0) {
		if (!kept_read(L, &kp)) {
			L->no_keep = true;
			int rc = build_group(L, gi, store, flat);
			L->no_keep = false;
			return rc;
		}
		sb_printf(&L->p->log, "group %d: %s is computed once, in %s's loop, and kept in %s's buffer for the last "
				      "loop\n", gi, L->g->nodes[kp.node].name, L->g->nodes[kp.reduce].name,
			  L->g->nodes[kp.member].name);
	}
	if ((s = loop_add_section(L->k)) < 0)
		return -1;
	for (int m = 0; m < G->nmembers; m++) {
		int i = G->members[m];
		const struct gnode *n = &L->g->nodes[i];
		if ((L->cls[i] == NC_REDUCE || !ind_same_shape(n->ndim, n->shape, G->ndim, G->shape)) &&
		    emit_member(L, i, s, store && store[i]) < 0)
			return -1;
	}
	return 0;
}

/* ---- pass 1: the groups ---- */

static int new_group(struct lower *L)
{
	struct group *gs = util_realloc(L->groups, (L->ngroups + 1) * sizeof *gs);
	if (!gs) {
		tj_error_set("out of memory");
		return -1;
	}
	L->groups = gs;
	memset(&gs[L->ngroups], 0, sizeof *gs);
	return L->ngroups++;
}

/* Reductions a group may hold: each section recomputes the inlined
 * pointwise work it needs from the group's inputs, so a chain of row
 * normalizations in one kernel would grow quadratically in code and work;
 * softmax, log_softmax and var need two. */
#define GROUP_MAX_REDUCTIONS 2

/* A group takes no member that would make its kernel compute more
 * transcendentals (exp, tanh, sigmoid...: inline polynomials of 10 to 30
 * instructions) than this: each section of a reduction group recomputes
 * the pointwise work it inlines, so a long chain before two reductions
 * is emitted three times over, and LLVM's time grows with it (a row
 * normalization after every ninth op of a 50-op chain took 77 ms in one
 * kernel). Closing the group stores the value instead. */
#define GROUP_MAX_TRANSCENDENTALS 24

/* float32 exp is evaluated in double to round correctly (cg_math.c's
 * exp_f32), about twice the code of the others: it counts twice */
static int transcendentals(const struct lkernel *k)
{
	int n = 0;
	for (int r = 0; r < k->nnodes; r++) {
		const struct lnode *x = &k->nodes[r];
		if (x->op == LOP_UNARY && loop_unop_is_transcendental((enum unop)x->sub))
			n += x->sub == UNOP_exp && x->dt == DT_FLOAT32 ? 2 : 1;
	}
	return n;
}

static int group_reductions(const struct lower *L, const struct group *G)
{
	int n = 0;
	for (int m = 0; m < G->nmembers; m++)
		n += L->cls[G->members[m]] == NC_REDUCE;
	return n;
}

/* whether member i fits group gi by shape: sets S and R for a new group */
static bool shape_fits(struct lower *L, int gi, int i)
{
	struct group *G = &L->groups[gi];
	const struct gnode *n = &L->g->nodes[i];
	bool red[TENSOR_MAX_DIMS];
	if (L->cls[i] == NC_REDUCE) {
		redop rop;
		const struct gnode *x = &L->g->nodes[reduce_src(L, i, &rop)->args[0].node];
		int nred = reduce_dims(L, i, red);
		if (nred < 0)
			return false;
		if (G->nmembers == 0 || (G->nred == 0 && ind_same_shape(x->ndim, x->shape, G->ndim, G->shape))) {
			G->ndim = x->ndim;
			memcpy(G->shape, x->shape, sizeof G->shape);
			memcpy(G->red, red, sizeof G->red);
			G->nred = nred;
			return true;
		}
		return ind_same_shape(x->ndim, x->shape, G->ndim, G->shape) && G->nred == nred &&
		       memcmp(G->red, red, sizeof red) == 0 && group_reductions(L, G) < GROUP_MAX_REDUCTIONS;
	}
	if (G->nmembers == 0) {
		G->ndim = n->ndim;
		memcpy(G->shape, n->shape, sizeof G->shape);
		memset(G->red, 0, sizeof G->red);
		G->nred = 0;
		return true;
	}
	return ind_same_shape(n->ndim, n->shape, G->ndim, G->shape) || (G->nred > 0 && reduced_shape_of(G, n));
}

static int add_member(struct lower *L, int gi, int i)
{
	struct group *G = &L->groups[gi];
	int *m = util_realloc(G->members, (G->nmembers + 1) * sizeof *m);
	if (!m) {
		tj_error_set("out of memory");
		return -1;
	}
	G->members = m;
	G->members[G->nmembers++] = i;
	L->group_of[i] = gi;
	return 0;
}

static void drop_member(struct lower *L, int gi)
{
	struct group *G = &L->groups[gi];
	L->group_of[G->members[--G->nmembers]] = -1;
}

static int add_buf(struct lower *L, int i, enum ind_buf_kind kind)
{
	struct ind_program *p = L->p;
	const struct gnode *n = &L->g->nodes[i];
	struct ind_buf *b = util_realloc(p->bufs, (p->nbufs + 1) * sizeof *b);
	int *kb = util_realloc(L->kbuf, (p->nbufs + 1) * sizeof *kb);
	if (kb)
		L->kbuf = kb;
	if (b)
		p->bufs = b;
	if (!b || !kb) {
		tj_error_set("out of memory");
		return -1;
	}
	b = &p->bufs[p->nbufs];
	b->node = i;
	b->kind = kind;
	b->by_kernel = false;
	b->alias_of = -1;
	b->dt = n->dt;
	b->ndim = n->ndim;
	memcpy(b->shape, n->shape, sizeof b->shape);
	p->node_buf[i] = p->nbufs;
	return p->nbufs++;
}

static int close_group(struct lower *L, int gi)
{
	const struct group *G = &L->groups[gi];
	for (int m = 0; m < G->nmembers; m++) {
		int b = add_buf(L, G->members[m], IBUF_TEMP);
		if (b < 0)
			return -1;
		L->p->bufs[b].by_kernel = true;
	}
	return 0;
}

/* puts member i into the open group *gi if it fits there, else into a new one */
static int place_member(struct lower *L, int *gi, int i)
{
	const struct gnode *n = &L->g->nodes[i];
	if (*gi >= 0) {
		struct group saved = L->groups[*gi];
		if (shape_fits(L, *gi, i)) {
			if (add_member(L, *gi, i) < 0)
				return -1;
			int costly = 0;
			if (build_group(L, *gi, NULL, false) == 0 &&
			    (costly = transcendentals(L->k)) <= GROUP_MAX_TRANSCENDENTALS) {
				sb_printf(&L->p->log, "fused %s into group %d\n", n->name, *gi);
				return 0;
			}
			drop_member(L, *gi);
			if (!L->incompatible && !costly)
				return -1;
			if (costly)
				sb_printf(&L->p->log, "group %d closed before %s: its kernel would compute %d transcendentals "
					  "(its sections each recompute what they inline)\n", *gi, n->name, costly);
			else
				sb_printf(&L->p->log, "group %d closed before %s: %s\n", *gi, n->name,
					  "it reads a reduction of the group at another index");
		} else {
			bool full = L->cls[i] == NC_REDUCE && group_reductions(L, &L->groups[*gi]) >= GROUP_MAX_REDUCTIONS;
			sb_printf(&L->p->log, "group %d closed before %s: %s\n", *gi, n->name,
				  full ? "the group holds its most reductions" : "its shape or reduced dims differ");
		}
		int *members = L->groups[*gi].members;
		int nmembers = L->groups[*gi].nmembers;
		L->groups[*gi] = saved;
		L->groups[*gi].members = members;
		L->groups[*gi].nmembers = nmembers;
		if (close_group(L, *gi) < 0)
			return -1;
	}
	if ((*gi = new_group(L)) < 0 || !shape_fits(L, *gi, i) || add_member(L, *gi, i) < 0)
		return -1;
	if (build_group(L, *gi, NULL, false) < 0) {
		if (L->incompatible)
			tj_error_set("inductor: cannot lower %s", n->name);
		return -1;
	}
	sb_printf(&L->p->log, "group %d starts with %s\n", *gi, n->name);
	return 0;
}

/* ---- matmuls that BLAS computes reading their operands in place ---- */

/* x when node v is x transposed, permute(x, (1, 0)) of a matrix x; else -1 */
static int transposed_matrix(const struct lower *L, int v)
{
	const struct gnode *n = &L->g->nodes[v];
	if (n->kind != GN_OP || n->op != OPS_permute || n->ndim != 2 || n->args[0].kind != GARG_NODE)
		return -1;
	int64_t perm[TENSOR_MAX_DIMS];
	int np = ind_garg_ints(L, n, &n->args[1], perm);
	if (np < 0) {
		tj_error_clear();
		return -1;
	}
	int x = n->args[0].node;
	bool swap = np == 2 && (perm[0] == 1 || perm[0] == -1) && (perm[1] == 0 || perm[1] == -2);
	return swap && L->g->nodes[x].ndim == 2 ? x : -1;
}

/* node v under the transposes of a matrix that read it: the node below
 * them, and whether their number is odd. A transpose that is a BLAS call
 * of its own (a matmul's transpose, computed as one product: plan_mm)
 * ends the walk: it is stored, and the matmul below it never is (choose_
 * members plans the nodes in order, so is_mm of v is already known) */
static int through_transposes(const struct lower *L, int v, bool *odd)
{
	*odd = false;
	for (int x; !L->is_mm[v] && (x = transposed_matrix(L, v)) >= 0; v = x)
		*odd = !*odd;
	return v;
}

/* node i as a matmul of two matrices: its operands under their transposes */
static bool matmul_operands(const struct lower *L, int i, struct ind_mm *mm)
{
	const struct gnode *n = &L->g->nodes[i];
	if (n->kind != GN_OP || n->op != OPS_matmul || n->ndim != 2)
		return false;
	for (int a = 0; a < 2; a++) {
		if (n->args[a].kind != GARG_NODE || L->g->nodes[n->args[a].node].ndim != 2)
			return false;
		mm->arg[a] = through_transposes(L, n->args[a].node, &mm->t[a]);
	}
	return true;
}

/* whether node i is one BLAS call on two stored matrices that reads them
 * in place: a matmul of two matrices (transposed or not), or the
 * transpose of a matmul that nothing else reads ((op(x) op(y))^T =
 * op'(y) op'(x)) */
static bool plan_mm(const struct lower *L, int i, struct ind_mm *mm)
{
	if (matmul_operands(L, i, mm))
		return true;
	int m = transposed_matrix(L, i);
	struct ind_mm in;
	if (m < 0 || L->users.noutputs[m] > 0 || graph_users_count(&L->users, m) != 1 || !matmul_operands(L, m, &in))
		return false;
	*mm = (struct ind_mm){.arg = {in.arg[1], in.arg[0]}, .t = {!in.t[1], !in.t[0]}};
	return true;
}

/* marks what matmul step i computes besides i: the transposes between
 * its operands and their matrices, and the matmul it transposes */
static void mark_mm_covered(const struct lower *L, int i, bool *mark)
{
	const struct gnode *n = &L->g->nodes[i];
	if (n->op != OPS_matmul) {
		i = n->args[0].node;
		mark[i] = true;
		n = &L->g->nodes[i];
	}
	for (int a = 0; a < 2; a++) /* the transposes through_transposes went through */
		for (int v = n->args[a].node, x; !L->is_mm[v] && (x = transposed_matrix(L, v)) >= 0; v = x)
			mark[v] = true;
}

/* whether extern node u reads v other than through a matmul's transposes */
static bool extern_reads(const struct lower *L, int u, int v)
{
	return !L->is_mm[u] || v == L->mm[u].arg[0] || v == L->mm[u].arg[1];
}

/* ---- pass 2: what each group stores, the kernels ---- */

static int combine_owner(int a, int b)
{
	return a == OWNER_NONE ? b : a == b ? a : OWNER_MANY;
}

/* the one group that an inlined node is emitted in (OWNER_MANY when an
 * extern call, the outputs or two groups read it) */
static void compute_owners(struct lower *L)
{
	const struct graph *g = L->g;
	for (int i = g->nnodes - 1; i >= 0; i--) {
		int o = L->users.noutputs[i] > 0 ? OWNER_MANY : OWNER_NONE;
		for (int j = L->users.first[i]; j < L->users.first[i + 1]; j++) {
			int u = L->users.user[j];
			int ou = L->group_of[u] >= 0 ? L->group_of[u] : L->member[u] ? OWNER_MANY : L->owner[u];
			o = combine_owner(o, ou);
		}
		L->owner[i] = o;
	}
}

static bool needs_store(struct lower *L, int i)
{
	if (L->users.noutputs[i] > 0)
		return true;
	/* a BLAS call reads its operand's buffer, also where its plan sees
	 * through transposes that the group computes (x.T.T @ w reads x) */
	if (L->mm_read[i])
		return true;
	int gi = L->group_of[i];
	for (int j = L->users.first[i]; j < L->users.first[i + 1]; j++) {
		int u = L->users.user[j];
		int ou = L->group_of[u] >= 0 ? L->group_of[u] : L->member[u] ? OWNER_MANY : L->owner[u];
		if (ou != gi)
			return true;
	}
	return false;
}

/* whether the kernel's listing has a floor division or modulo left (a
 * flat loop over a layout that does not flatten) */
static bool has_divmod(const struct lkernel *k)
{
	for (int r = 0; r < k->nnodes; r++) {
		const struct lnode *n = &k->nodes[r];
		if (n->op == LOP_BINARY && n->dt == DT_INT64 && (n->sub == BINOP_floordiv || n->sub == BINOP_mod))
			return true;
	}
	return false;
}

static int add_step(struct ind_program *p, struct ind_step *st)
{
	struct ind_step *s = util_realloc(p->steps, (p->nsteps + 1) * sizeof *s);
	if (!s) {
		tj_error_set("out of memory");
		return -1;
	}
	p->steps = s;
	p->steps[p->nsteps++] = *st;
	return 0;
}

static int step_nodes(struct lower *L, struct ind_step *st, int gi, int extern_node)
{
	st->nodes = util_malloc(L->g->nnodes * sizeof *st->nodes);
	bool *covered = st->mm ? util_calloc((size_t)L->g->nnodes + 1, sizeof *covered) : NULL;
	if (!st->nodes || (st->mm && !covered)) {
		free(covered);
		tj_error_set("out of memory");
		return -1;
	}
	if (covered)
		mark_mm_covered(L, extern_node, covered);
	for (int i = 0; i < L->g->nnodes; i++)
		if (gi >= 0 ? (L->group_of[i] == gi || (!L->member[i] && L->owner[i] == gi && L->cls[i] != NC_INPUT))
			    : i == extern_node || (covered && covered[i] && !L->member[i]))
			st->nodes[st->nnodes++] = i;
	free(covered);
	return 0;
}

static bool computes_relu(const struct lkernel *k)
{
	for (int r = 0; r < k->nnodes; r++)
		if (k->nodes[r].op == LOP_UNARY && k->nodes[r].sub == UNOP_relu)
			return true;
	return false;
}

/* TJIT_INJECT_BUG=inductor:compile_error and runtime_error, in a kernel
 * that computes a relu: a compile error, or a store 2^40 elements past its
 * buffer (the generated code faults, as a real miscompile would) */
static int plant_bug(struct lower *L)
{
	const struct inject_bug *bug = L->bug;
	if (bug->stage != INJECT_INDUCTOR || bug->kind == INJECT_ACCURACY || !computes_relu(L->k))
		return 0;
	if (bug->kind == INJECT_COMPILE_ERROR) {
		tj_error_set("inductor: InductorCompileError: a kernel computes relu (TJIT_INJECT_BUG=inductor:compile_error)");
		L->planted = true;
		return -1;
	}
	struct lkernel *k = L->k;
	for (int s = 0; s < k->nsections; s++)
		for (int i = 0; i < k->sections[s].nroots; i++) {
			lref r = k->sections[s].roots[i];
			if (k->nodes[r].op != LOP_STORE)
				continue;
			int buf = k->nodes[r].var;
			lref value = k->nodes[r].a[1];
			lref far = loop_iadd(k, k->nodes[r].a[0], loop_const_int(k, DT_INT64, (int64_t)1 << 40));
			lref bad = loop_store(k, buf, far, value);
			if (bad < 0)
				return -1;
			k->sections[s].roots[i] = bad;
			return 0;
		}
	return 0;
}

static int final_kernel(struct lower *L, int gi, const bool *store)
{
	const struct group *G = &L->groups[gi];
	bool flat = G->nred == 0 && G->ndim >= 2, flat_done = false;
	if (flat && build_group(L, gi, store, true) == 0 && (loop_kernel_finish(L->k), !has_divmod(L->k))) {
		sb_printf(&L->p->log, "group %d: one flat loop\n", gi);
		flat_done = true;
	} else if (build_group(L, gi, store, false) < 0) {
		if (L->incompatible)
			tj_error_set("inductor: group %d does not build", gi);
		return -1;
	}
	if (plant_bug(L) < 0)
		return -1;
	loop_kernel_finish(L->k);
	struct ind_step st = {.kind = ISTEP_KERNEL, .node = -1, .group = gi, .flat = flat_done};
	st.kbufs = util_malloc((L->k->nbufs + 1) * sizeof *st.kbufs);
	if (!st.kbufs) {
		tj_error_set("out of memory");
		return -1;
	}
	for (int b = 0; b < L->p->nbufs; b++)
		if (L->kbuf[b] >= 0)
			st.kbufs[L->kbuf[b]] = b;
	if (step_nodes(L, &st, gi, -1) < 0) {
		free(st.kbufs);
		return -1;
	}
	st.k = L->k;
	L->k = NULL;
	if (add_step(L->p, &st) < 0) {
		loop_kernel_free(st.k);
		free(st.kbufs);
		free(st.nodes);
		return -1;
	}
	return 0;
}

/* ---- the whole lowering ---- */

/* which nodes are members (computed by a group, or extern calls) */
static int choose_members(struct lower *L)
{
	const struct graph *g = L->g;
	for (int i = 0; i < g->nnodes; i++)
		L->cls[i] = (unsigned char)ind_classify(g, i);
	for (int i = 0; i < g->nnodes; i++) {
		L->is_mm[i] = (L->cls[i] == NC_EXTERN || L->cls[i] == NC_VIEW) && plan_mm(L, i, &L->mm[i]);
		if (!L->is_mm[i])
			continue;
		if (L->cls[i] == NC_VIEW) { /* the transpose of a matmul: one call, the matmul is in it */
			L->cls[i] = NC_EXTERN;
			L->cls[g->nodes[i].args[0].node] = NC_ABSORBED;
		}
		L->mm_read[L->mm[i].arg[0]] = L->mm_read[L->mm[i].arg[1]] = true;
	}
	for (int i = 0; i < g->nnodes; i++) {
		int c = L->cls[i];
		bool m = c == NC_REDUCE || c == NC_EXTERN || L->users.noutputs[i] > 0 || L->mm_read[i];
		if (c == NC_POINTWISE && graph_users_count(&L->users, i) >= 2)
			m = true;
		for (int j = L->users.first[i]; j < L->users.first[i + 1] && !m; j++)
			if (L->cls[L->users.user[j]] == NC_EXTERN && extern_reads(L, L->users.user[j], i))
				m = true;
		L->member[i] = m && c != NC_INPUT && c != NC_TUPLE && c != NC_ABSORBED;
	}
	return 0;
}

/* The stored buffer that view member i reads in order, element for
 * element (a reshape of a stored value, permutes that cancel): i is then
 * that buffer under its own shape (tensor_reshape shares the storage),
 * not a copy. -1 when there is none. */
static int alias_source(struct lower *L, int i)
{
	const struct gnode *n = &L->g->nodes[i];
	if (L->cls[i] != NC_VIEW || kernel_begin(L, -1) < 0)
		return -1;
	struct lkernel *k = L->k;
	lref numel = loop_const_int(k, DT_INT64, 1);
	for (int d = 0; d < n->ndim; d++)
		numel = loop_imul(k, numel, ind_size_ref(k, n->shape[d]));
	int v = loop_add_var(k, numel, -1);
	lref flat = loop_var_ref(k, v), idx[TENSOR_MAX_DIMS];
	ind_split_index(k, flat, n->ndim, n->shape, idx);
	lref val = ind_emit(L, i, idx);
	int src = -1;
	if (val >= 0 && k->nodes[val].op == LOP_LOAD && k->nodes[val].a[0] == flat &&
	    k->bufs[k->nodes[val].var].numel == numel && k->nodes[val].dt == n->dt)
		for (int b = 0; b < L->p->nbufs; b++)
			if (L->kbuf[b] == k->nodes[val].var)
				src = b;
	if (val < 0)
		tj_error_clear(); /* a view that needs a kernel: not an error here */
	L->incompatible = false;
	return src;
}

/* pass 1 in graph order; order[] gets the groups and extern nodes in
 * the order their steps run (a group as -1 - its number) */
static int form_groups(struct lower *L, int *order, int *norder)
{
	const struct graph *g = L->g;
	int gi = -1, group_at = 0; /* the open group, its place in order[] */
	for (int i = 0; i < g->nnodes; i++) {
		if (L->cls[i] == NC_INPUT) {
			if (add_buf(L, i, IBUF_INPUT) < 0)
				return -1;
			continue;
		}
		if (!L->member[i] || L->p->node_buf[i] >= 0 || L->cls[i] == NC_TUPLE)
			continue;
		if (L->cls[i] == NC_EXTERN) {
			if (gi >= 0 && close_group(L, gi) < 0)
				return -1;
			gi = -1;
			const struct ind_mm mm = L->mm[i];
			if (L->is_mm[i])
				sb_printf(&L->p->log, "extern %s: matmul(%s%s, %s%s), one BLAS call%s\n", g->nodes[i].name,
					  g->nodes[mm.arg[0]].name, mm.t[0] ? ".T" : "", g->nodes[mm.arg[1]].name,
					  mm.t[1] ? ".T" : "", mm.t[0] || mm.t[1] ? " that reads the transposes in place" : "");
			else
				sb_printf(&L->p->log, "extern %s: %s runs on the eager kernels\n", g->nodes[i].name,
					  g->nodes[i].kind == GN_OP ? ops_table[g->nodes[i].op].name : "a call");
			if (add_buf(L, i, IBUF_TEMP) < 0)
				return -1;
			/* the items of a tuple result are written by the same call */
			for (int j = L->users.first[i]; j < L->users.first[i + 1]; j++) {
				int u = L->users.user[j];
				if (g->nodes[u].kind == GN_GETITEM && L->p->node_buf[u] < 0 && add_buf(L, u, IBUF_TEMP) < 0)
					return -1;
			}
			order[(*norder)++] = i;
			continue;
		}
		int src = alias_source(L, i);
		if (src >= 0) {
			int b = add_buf(L, i, IBUF_ALIAS);
			if (b < 0)
				return -1;
			L->p->bufs[b].alias_of = src;
			sb_printf(&L->p->log, "%s is %s under another shape: no copy\n", g->nodes[i].name,
				  g->nodes[L->p->bufs[src].node].name);
			/* its source is stored already (an input, or what a step
			 * before makes): the alias goes before the open group,
			 * which may read it (a generated program found the group
			 * run first, reading a buffer not made yet) */
			int at = gi >= 0 ? group_at++ : *norder;
			memmove(order + at + 1, order + at, (size_t)(*norder - at) * sizeof *order);
			order[at] = i;
			(*norder)++;
			continue;
		}
		int before = gi;
		if (place_member(L, &gi, i) < 0)
			return -1;
		if (gi != before) {
			group_at = *norder;
			order[(*norder)++] = -1 - gi;
		}
	}
	return gi >= 0 ? close_group(L, gi) : 0;
}

static int lower_steps(struct lower *L, const int *order, int norder)
{
	const struct graph *g = L->g;
	compute_owners(L);
	bool *store = util_calloc((size_t)g->nnodes + 1, sizeof *store);
	if (!store) {
		tj_error_set("out of memory");
		return -1;
	}
	for (int i = 0; i < g->nnodes; i++) {
		if (L->group_of[i] < 0)
			continue;
		store[i] = needs_store(L, i);
		if (!store[i]) {
			L->p->bufs[L->p->node_buf[i]].kind = IBUF_UNUSED;
			sb_printf(&L->p->log, "%s stays in registers in group %d\n", g->nodes[i].name, L->group_of[i]);
		}
	}
	int rc = 0;
	for (int s = 0; s < norder && rc == 0; s++) {
		if (order[s] < 0) {
			rc = final_kernel(L, -1 - order[s], store);
			continue;
		}
		bool alias = L->p->bufs[L->p->node_buf[order[s]]].kind == IBUF_ALIAS;
		struct ind_step st = {.kind = alias ? ISTEP_ALIAS : ISTEP_EXTERN, .node = order[s]};
		if (!alias && L->is_mm[order[s]]) {
			st.mm = true;
			st.mm_plan = L->mm[order[s]];
		}
		rc = step_nodes(L, &st, -1, order[s]);
		if (rc == 0 && (rc = add_step(L->p, &st)) < 0)
			free(st.nodes);
	}
	free(store);
	return rc;
}

/* ---- epilogues: a kernel that runs on a matmul's rows as BLAS makes them ---- */

/* whether node i, computed in an epilogue, reads what it reads of the
 * product in the row it is on: pointwise work, and reductions of a matrix
 * along its rows (max / min with a dim too); a view could read another
 * row */
static bool row_local(struct lower *L, int i)
{
	if (L->cls[i] == NC_POINTWISE)
		return true;
	if (L->cls[i] != NC_REDUCE && L->cls[i] != NC_TUPLE)
		return false;
	redop op;
	const struct gnode *n = L->cls[i] == NC_TUPLE ? &L->g->nodes[i] : reduce_src(L, i, &op);
	bool red[TENSOR_MAX_DIMS];
	int nd = ind_reduced_dims(L->g, n, red);
	if (nd < 0)
		tj_error_clear();
	return nd == 1 && L->g->nodes[n->args[0].node].ndim == 2 && red[1];
}

/* Step s, a matmul into m (n x m), and step s + 1, the kernel of group
 * gi: the kernel is m's epilogue when its loops are m's rows (S is m's
 * shape, R at most the last dim) and everything in it that depends on m
 * reads m's row the kernel is on. Then m is made and consumed a block of
 * rows at a time, and when nothing else reads m, a block is all of m that
 * exists. */
static bool is_epilogue(struct lower *L, int m, int gi, bool *scratch)
{
	const struct graph *g = L->g;
	const struct group *G = &L->groups[gi];
	const struct gnode *mn = &g->nodes[m];
	if (mn->ndim != 2 || !ind_same_shape(G->ndim, G->shape, 2, mn->shape) || G->red[0])
		return false;
	bool *dep = util_calloc((size_t)g->nnodes + 1, sizeof *dep);
	if (!dep)
		return false; /* not fused: the plain order is still right */
	bool ok = true, used = false;
	*scratch = L->users.noutputs[m] == 0;
	dep[m] = true;
	for (int i = m + 1; i < g->nnodes && ok; i++) {
		const struct gnode *n = &g->nodes[i];
		bool reads = false, reads_m = false;
		for (int a = 0; a < n->nargs; a++)
			arg_reads(&n->args[a], dep, m, &reads, &reads_m);
		if (!reads)
			continue;
		/* what K may compute: its members, and what is inlined in it
		 * (a node inlined in several kernels may be inlined in K) */
		bool inlined = !L->member[i];
		if (L->group_of[i] == gi || (inlined && (L->owner[i] == gi || L->owner[i] == OWNER_MANY))) {
			ok = row_local(L, i);
			dep[i] = used = true;
			if (inlined && L->owner[i] != gi)
				*scratch = false; /* computed from m elsewhere too */
			continue;
		}
		/* another step reads what K stores, or m itself */
		if (reads_m)
			*scratch = false;
	}
	free(dep);
	return ok && used;
}

static void mark_epilogues(struct lower *L)
{
	struct ind_program *p = L->p;
	for (int s = 0; s + 1 < p->nsteps; s++) {
		struct ind_step *st = &p->steps[s], *k = &p->steps[s + 1];
		bool scratch;
		/* the runner steps var 0 over the product's rows (or a flat
		 * var over its elements); a product of one row has no loop
		 * over its rows (outer_loops), so a kernel of loops is no
		 * epilogue there: var 0 would be its columns */
		if (st->kind != ISTEP_EXTERN || !st->mm || k->kind != ISTEP_KERNEL ||
		    (!k->flat && ind_size_is_one(L->g->nodes[st->node].shape[0])) ||
		    !is_epilogue(L, st->node, k->group, &scratch))
			continue;
		st->epilogue = true;
		st->scratch = scratch;
		sb_printf(&p->log, "group %d is %s's epilogue: it runs on each block of rows as BLAS makes it, %s\n",
			  k->group, L->g->nodes[st->node].name,
			  scratch ? "in a buffer of one block" : "and the product is kept whole (something else reads it)");
	}
}

int ind_lower(const struct graph *g, struct ind_program *p, struct compile_ctx *cc)
{
	static const struct inject_bug no_bug = {INJECT_NONE, INJECT_COMPILE_ERROR};
	struct lower L = {.g = g, .p = p, .bug = cc && cc->bug ? cc->bug : &no_bug};
	int n = g->nnodes, rc = -1, norder = 0;
	int *order = NULL;
	p->g = g;
	p->node_buf = util_malloc((n + 1) * sizeof *p->node_buf);
	L.cls = util_calloc(n + 1, 1);
	L.member = util_calloc(n + 1, sizeof *L.member);
	L.group_of = util_malloc((n + 1) * sizeof *L.group_of);
	L.owner = util_malloc((n + 1) * sizeof *L.owner);
	L.is_mm = util_calloc(n + 1, sizeof *L.is_mm);
	L.mm_read = util_calloc(n + 1, sizeof *L.mm_read);
	L.mm = util_calloc(n + 1, sizeof *L.mm);
	L.reduce_ref = util_malloc((n + 1) * sizeof *L.reduce_ref);
	L.memo = util_calloc(n + 1, sizeof *L.memo);
	order = util_malloc((n + 1) * sizeof *order);
	if (!p->node_buf || !L.cls || !L.member || !L.group_of || !L.owner || !L.is_mm || !L.mm_read || !L.mm ||
	    !L.reduce_ref || !L.memo || !order || graph_users_build(g, &L.users) < 0) {
		tj_error_set("out of memory");
		goto cleanup;
	}
	for (int i = 0; i < n; i++)
		p->node_buf[i] = L.group_of[i] = -1;
	int ph = cc ? compile_ctx_phase_begin(cc, "schedule") : -1;
	int ok = choose_members(&L) < 0 ? -1 : form_groups(&L, order, &norder);
	if (cc)
		compile_ctx_phase_end(cc, ph);
	if (ok < 0)
		goto cleanup;
	ph = cc ? compile_ctx_phase_begin(cc, "lower") : -1;
	ok = lower_steps(&L, order, norder);
	if (ok == 0)
		mark_epilogues(&L);
	if (cc)
		compile_ctx_phase_end(cc, ph);
	if (ok < 0)
		goto cleanup;
	rc = 0;
cleanup:
	/* a failure is a graph this stage cannot lower (the frame falls back;
	 * out of memory too), unless it is the planted bug (raised) */
	if (rc < 0 && cc)
		cc->unsupported = !L.planted;
	graph_users_release(&L.users);
	loop_kernel_free(L.k);
	arena_free(&L.arena);
	for (int gi = 0; gi < L.ngroups; gi++)
		free(L.groups[gi].members);
	free(L.groups);
	free(L.kbuf);
	free(L.cls);
	free(L.member);
	free(L.group_of);
	free(L.owner);
	free(L.is_mm);
	free(L.mm_read);
	free(L.mm);
	free(L.reduce_ref);
	free(L.memo);
	free(order);
	return rc;
}

void ind_program_release(struct ind_program *p)
{
	for (int s = 0; s < p->nsteps; s++) {
		loop_kernel_free(p->steps[s].k);
		free(p->steps[s].kbufs);
		free(p->steps[s].nodes);
	}
	free(p->steps);
	free(p->bufs);
	free(p->node_buf);
	sb_release(&p->log);
	memset(p, 0, sizeof *p);
}

char *ind_program_format(const struct ind_program *p)
{
	struct strbuf sb = {0};
	for (int s = 0; s < p->nsteps; s++) {
		const struct ind_step *st = &p->steps[s];
		sb_printf(&sb, "step %d:", s);
		for (int j = 0; j < st->nnodes; j++)
			sb_printf(&sb, " %s", p->g->nodes[st->nodes[j]].name);
		sb_putc(&sb, '\n');
		if (st->kind == ISTEP_EXTERN) {
			sb_printf(&sb, "  extern %s", p->g->nodes[st->node].name);
			if (st->mm)
				sb_printf(&sb, " = matmul(%s%s, %s%s)", p->g->nodes[st->mm_plan.arg[0]].name,
					  st->mm_plan.t[0] ? ".T" : "", p->g->nodes[st->mm_plan.arg[1]].name,
					  st->mm_plan.t[1] ? ".T" : "");
			if (st->epilogue)
				sb_printf(&sb, ", by blocks of rows, step %d on each%s", s + 1,
					  st->scratch ? " (a block's buffer)" : "");
			sb_putc(&sb, '\n');
			continue;
		}
		if (st->kind == ISTEP_ALIAS) {
			const struct ind_buf *b = &p->bufs[p->node_buf[st->node]];
			sb_printf(&sb, "  alias %s = %s\n", p->g->nodes[st->node].name,
				  p->g->nodes[p->bufs[b->alias_of].node].name);
			continue;
		}
		char *text = loop_kernel_format(st->k);
		if (!text) {
			sb_release(&sb);
			return NULL;
		}
		sb_puts(&sb, text);
		free(text);
	}
	return sb_detach(&sb);
}
