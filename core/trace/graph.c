/* graph.c - the graph IR (graph.h): building, naming, the users of each
 * node, editing for passes, the verifier, printing as LANGUAGE.md §7
 * shows, and the node-by-node interpreter that the eager backend runs. */
#include "graph.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "hash.h"
#include "ops.h"
#include "util.h"
#include "vm.h"

const char *graph_stage_name(enum graph_stage s)
{
	switch (s) {
	case STAGE_CAPTURED: return "captured";
	case STAGE_AOT_FORWARD: return "aot_forward";
	case STAGE_AOT_BACKWARD: return "aot_backward";
	case STAGE_INDUCTOR: return "inductor";
	}
	return "?";
}

/* ---- names: FX's scheme ----
 * A base name is used as is the first time ("add"), then with the next
 * free suffix ("add_1", "add_2"); a name that would shadow a Python
 * builtin or keyword starts at suffix 1 ("abs_1"). */

struct name_slot {
	char *key;     /* in the graph's arena */
	uint64_t hash; /* of key: probes compare it first, growing needs no hashing */
	int count;     /* for a base: the last suffix handed out */
	bool used;     /* the name itself is taken */
};

/* what a graph owns besides its nodes: the arena, and the names in use */
struct graph_mem {
	struct arena arena;
	struct name_slot *slots; /* open addressing; malloc'd, as it grows */
	size_t cap, n;
	/* a copy's table holds none of its nodes' names until it first
	 * makes a fresh name: most copies never do (a stage's graphs, the
	 * log's), and a name hashed per node copied was most of a copy */
	bool names_lazy;
	char **copied;            /* while names_lazy: the names of the nodes copied */
	int ncopied;
	struct strbuf base, cand; /* graph_fresh_name's, kept from call to call */
};

/* room for ncap slots (a power of 2, above cap); -1 when out of memory */
static int names_grow(struct graph_mem *t, size_t ncap)
{
	struct name_slot *ns = calloc(ncap, sizeof *ns);
	if (!ns)
		return -1;
	for (size_t i = 0; i < t->cap; i++) {
		if (!t->slots[i].key)
			continue;
		size_t j = t->slots[i].hash & (ncap - 1);
		while (ns[j].key)
			j = (j + 1) & (ncap - 1);
		ns[j] = t->slots[i];
	}
	free(t->slots);
	t->slots = ns;
	t->cap = ncap;
	return 0;
}

/* the slot of key (len bytes, hash h), made when missing; NULL when out
 * of memory */
static struct name_slot *names_slot_h(struct graph_mem *t, const char *key, size_t len, uint64_t h)
{
	if ((t->n + 1) * 2 > t->cap && names_grow(t, t->cap ? t->cap * 2 : 64) < 0)
		return NULL;
	size_t j = h & (t->cap - 1);
	while (t->slots[j].key && (t->slots[j].hash != h || strcmp(t->slots[j].key, key) != 0))
		j = (j + 1) & (t->cap - 1);
	if (!t->slots[j].key) {
		char *k = arena_alloc(&t->arena, len + 1);
		if (!k)
			return NULL;
		memcpy(k, key, len + 1);
		t->slots[j].key = k;
		t->slots[j].hash = h;
		t->n++;
	}
	return &t->slots[j];
}

static struct name_slot *names_slot(struct graph_mem *t, const char *key)
{
	return names_slot_h(t, key, strlen(key), hash_fnv1a_str(key));
}

static bool is_reserved_name(const char *s)
{
	static const char *const reserved[] = {
		"False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
		"def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in",
		"is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with", "yield",
		"abs", "all", "any", "bin", "bool", "bytes", "callable", "chr", "dict", "dir", "divmod",
		"enumerate", "eval", "exec", "filter", "float", "format", "getattr", "globals", "hasattr", "hash",
		"hex", "id", "input", "int", "isinstance", "iter", "len", "list", "locals", "map", "max", "min",
		"next", "object", "oct", "open", "ord", "pow", "print", "property", "range", "repr", "reversed",
		"round", "set", "slice", "sorted", "str", "sum", "super", "tuple", "type", "vars", "zip", NULL,
	};
	/* all letters: a name with a suffix ("add_1") is none of them */
	if (strpbrk(s, "_0123456789"))
		return false;
	for (int i = 0; reserved[i]; i++)
		if (strcmp(reserved[i], s) == 0)
			return true;
	return false;
}

/* cand = base_num (num > 0), without printf: it runs for every node */
/* cand = its first blen bytes (the base, of hash h) then _num, without
 * printf: it runs for every node; the candidate's hash */
static uint64_t put_suffixed(struct strbuf *cand, size_t blen, uint64_t h, long num)
{
	char d[24];
	int k = (int)sizeof d;
	d[--k] = '\0';
	do
		d[--k] = (char)('0' + num % 10);
	while ((num /= 10) > 0 && k > 0);
	d[--k] = '_';
	cand->len = blen;
	sb_puts(cand, d + k);
	for (const char *p = d + k; *p; p++)
		h = (h ^ (unsigned char)*p) * HASH_FNV1A_PRIME;
	return h;
}
/* the names of the nodes copied into a copy's table, which had none (a
 * pass may have moved the nodes since: the list kept at the copy says
 * which they were) */
static int names_index(struct graph_mem *t)
{
	/* room for as many names again as were copied: a pass adds some */
	size_t ncap = t->cap ? t->cap : 64;
	while (((size_t)t->ncopied + 1) * 4 > ncap)
		ncap *= 2;
	if (ncap > t->cap && names_grow(t, ncap) < 0)
		return -1;
	for (int i = 0; i < t->ncopied; i++) {
		struct name_slot *slot = names_slot(t, t->copied[i]);
		if (!slot)
			return -1;
		slot->used = true;
	}
	free(t->copied);
	t->copied = NULL;
	t->ncopied = 0;
	t->names_lazy = false;
	return 0;
}

char *graph_fresh_name(struct graph *g, const char *base_in)
{
	char *name = NULL;
	if (g->mem->names_lazy && names_index(g->mem) < 0)
		return NULL;
	/* an identifier: other characters become '_', no leading digit */
	struct strbuf b = g->mem->base;
	struct strbuf cand = g->mem->cand;
	sb_reset(&b);
	sb_reset(&cand);
	if (!base_in || !*base_in)
		base_in = "_unnamed";
	size_t n = strlen(base_in);
	sb_grow(&b, n + 2);
	if (isdigit((unsigned char)base_in[0]))
		b.buf[b.len++] = '_';
	for (size_t i = 0; i < n; i++) {
		char c = base_in[i];
		b.buf[b.len++] = isalnum((unsigned char)c) || c == '_' ? c : '_';
	}
	b.buf[b.len] = '\0';
	/* a numeric suffix is split off: "x_1" is base "x", number 1 */
	long num = 0;
	size_t len = b.len;
	size_t k = len;
	while (k > 0 && isdigit((unsigned char)b.buf[k - 1]))
		k--;
	if (k < len && k > 1 && b.buf[k - 1] == '_') {
		num = strtol(b.buf + k, NULL, 10);
		b.buf[k - 1] = '\0';
		b.len = k - 1;
	}
	uint64_t hb = hash_fnv1a_str(b.buf), hc = 0;
	struct name_slot *base = names_slot_h(g->mem, b.buf, b.len, hb);
	if (!base)
		goto cleanup;
	/* each candidate looked up once, its slot made when missing, its hash
	 * the base's continued (this runs for every node a pass makes): the
	 * bare base first unless a suffix was asked for, then base_num up
	 * from the base's count */
	sb_add(&cand, b.buf, b.len);
	struct name_slot *taken = num ? NULL : base;
	if (num)
		hc = put_suffixed(&cand, b.len, hb, num);
	else
		num = base->count;
	size_t cap = g->mem->cap;
	for (;;) {
		if (!taken && !(taken = names_slot_h(g->mem, cand.buf, cand.len, hc)))
			goto cleanup;
		/* only a bare base can be a keyword or builtin */
		if (!taken->used && (taken != base || !is_reserved_name(taken->key)))
			break;
		taken = NULL;
		hc = put_suffixed(&cand, b.len, hb, ++num);
	}
	taken->used = true;
	char *key = taken->key; /* in the arena: it outlives a regrown table */
	/* the table may have grown: base is then stale */
	if (g->mem->cap != cap && !(base = names_slot_h(g->mem, b.buf, b.len, hb)))
		goto cleanup;
	base->count = (int)num;
	name = key;
cleanup:
	g->mem->base = b;
	g->mem->cand = cand;
	return name;
}

/* ---- building ---- */

struct graph *graph_new(const char *name, const char *compile_id, const struct source *src, int line,
			enum graph_stage stage)
{
	struct graph *g = util_calloc(1, sizeof *g);
	if (!g)
		return NULL;
	g->mem = util_calloc(1, sizeof *g->mem);
	g->name = util_strdup(name ? name : "?");
	g->compile_id = util_strdup(compile_id ? compile_id : "");
	if (!g->mem || !g->name || !g->compile_id) {
		if (g->mem)
			graph_free(g);
		else
			free(g->name), free(g->compile_id), free(g);
		return NULL;
	}
	g->src = src;
	g->line = line;
	g->stage = stage;
	return g;
}

void *graph_alloc(struct graph *g, size_t size)
{
	return arena_alloc(&g->mem->arena, size);
}

char *graph_strdup(struct graph *g, const char *s)
{
	return arena_strdup(&g->mem->arena, s);
}

/* the references an arg holds (its memory is the arena's) */
static void garg_release(struct garg *a)
{
	switch (a->kind) {
	case GARG_CONST:
		val_decref(a->constant);
		break;
	case GARG_LIST:
	case GARG_TUPLE:
		for (int i = 0; i < a->n; i++)
			garg_release(&a->items[i]);
		break;
	case GARG_NODE:
	case GARG_SYM:
		break;
	}
}

static void node_release(struct gnode *n)
{
	if (n->kind == GN_CALL)
		val_decref(n->callee);
	for (int i = 0; i < n->nargs; i++)
		garg_release(&n->args[i]);
}

void graph_free(struct graph *g)
{
	if (!g)
		return;
	for (int i = 0; i < g->nnodes; i++)
		node_release(&g->nodes[i]);
	arena_free(&g->mem->arena);
	free(g->mem->slots);
	sb_release(&g->mem->base);
	sb_release(&g->mem->cand);
	free(g->mem->copied);
	free(g->mem);
	free(g->nodes);
	free(g->outputs);
	free(g->name);
	free(g->compile_id);
	free(g);
}

/* room for one more node; -1 when out of memory */
static int grow(struct graph *g)
{
	if (g->nnodes < g->cap)
		return 0;
	int ncap = g->cap ? g->cap * 2 : 16;
	struct gnode *nn = realloc(g->nodes, sizeof *nn * (size_t)ncap);
	if (!nn)
		return -1;
	g->nodes = nn;
	g->cap = ncap;
	return 0;
}

/* a copy of a[0..n)'s trees in g's arena (NULL for none); -1 when out of
 * memory. The originals stay as they are. */
static int gargs_copy(struct graph *g, struct garg **out, const struct garg *a, int n)
{
	*out = NULL;
	if (!n)
		return 0;
	struct garg *c = arena_memdup(&g->mem->arena, a, sizeof *a * (size_t)n);
	if (!c)
		return -1;
	for (int i = 0; i < n; i++)
		if ((a[i].kind == GARG_LIST || a[i].kind == GARG_TUPLE) &&
		    gargs_copy(g, &c[i].items, a[i].items, a[i].n) < 0)
			return -1;
	*out = c;
	return 0;
}

/* frees the malloc'd blocks of a node's arg trees */
static void gargs_free(struct garg *a, int n)
{
	for (int i = 0; a && i < n; i++)
		if (a[i].kind == GARG_LIST || a[i].kind == GARG_TUPLE)
			gargs_free(a[i].items, a[i].n);
	free(a);
}

void graph_node_discard(struct gnode *n)
{
	node_release(n);
	gargs_free(n->args, n->nargs);
	free(n->stack);
	free(n->source);
	memset(n, 0, sizeof *n);
}

int graph_add(struct graph *g, struct gnode *n)
{
	struct gnode d = *n;
	int rc = grow(g);
	if (rc == 0)
		rc = gargs_copy(g, &d.args, n->args, n->nargs);
	d.stack = NULL;
	if (rc == 0 && n->nstack && !(d.stack = arena_memdup(&g->mem->arena, n->stack, sizeof *d.stack * (size_t)n->nstack)))
		rc = -1;
	if (rc == 0 && n->source && !(d.source = arena_strdup(&g->mem->arena, n->source)))
		rc = -1;
	if (rc < 0) {
		graph_node_discard(n);
		return -1;
	}
	gargs_free(n->args, n->nargs);
	free(n->stack);
	free(n->source);
	g->nodes[g->nnodes] = d;
	return g->nnodes++;
}

void graph_remap_arg(struct garg *a, const int *to)
{
	if (a->kind == GARG_NODE)
		a->node = to[a->node];
	else if (a->kind == GARG_LIST || a->kind == GARG_TUPLE)
		for (int i = 0; i < a->n; i++)
			graph_remap_arg(&a->items[i], to);
}

int graph_hoist_inputs(struct graph *g)
{
	/* in place, the inputs (few) set aside: a second array of every
	 * node would be the biggest block of a compile */
	size_t nin = 0;
	for (int i = 0; i < g->nnodes; i++)
		nin += g->nodes[i].kind == GN_INPUT;
	int *to = util_malloc(sizeof(int) * (g->nnodes > 0 ? (size_t)g->nnodes : 1));
	struct gnode *inputs = util_malloc(sizeof *inputs * (nin ? nin : 1));
	if (!to || !inputs) {
		free(to);
		free(inputs);
		return -1;
	}
	int k = 0;
	for (int i = 0; i < g->nnodes; i++)
		if (g->nodes[i].kind == GN_INPUT) {
			to[i] = k;
			inputs[k++] = g->nodes[i];
		}
	/* the others move to the back, last first: a slot is written only
	 * after its node was read */
	int j = g->nnodes;
	for (int i = g->nnodes - 1; i >= 0; i--)
		if (g->nodes[i].kind != GN_INPUT) {
			to[i] = --j;
			g->nodes[j] = g->nodes[i];
		}
	if (nin)
		memcpy(g->nodes, inputs, sizeof *inputs * nin);
	for (int i = 0; i < g->nnodes; i++)
		for (int a = 0; a < g->nodes[i].nargs; a++)
			graph_remap_arg(&g->nodes[i].args[a], to);
	for (int i = 0; i < g->noutputs; i++)
		g->outputs[i] = to[g->outputs[i]];
	free(inputs);
	free(to);
	return 0;
}

void graph_truncate(struct graph *g, int n)
{
	/* their memory stays in the arena until graph_free */
	while (g->nnodes > n)
		node_release(&g->nodes[--g->nnodes]);
}

/* a copy of a's tree in c's arena, holding its own references; -1 when out of memory */
static int garg_copy(struct graph *c, struct garg *d, const struct garg *a)
{
	*d = *a;
	if (a->kind == GARG_CONST) {
		val_incref(a->constant);
	} else if (a->kind == GARG_LIST || a->kind == GARG_TUPLE) {
		d->n = 0; /* what a failure leaves is releasable */
		d->items = graph_alloc(c, sizeof *d->items * (size_t)a->n);
		if (!d->items)
			return -1;
		for (; d->n < a->n; d->n++)
			if (garg_copy(c, &d->items[d->n], &a->items[d->n]) < 0)
				return -1;
	}
	return 0;
}

/* node n of g appended to c, in c's arena; -1 when out of memory */
/* the last user stack copied: the nodes that shared it in the original
 * (a decomposed composite's, the rules' of one node) share its copy */
struct stack_memo {
	const struct user_frame *from;
	struct user_frame *to;
};

static int copy_node(struct graph *c, const struct gnode *n, struct stack_memo *memo)
{
	if (grow(c) < 0)
		return -1;
	/* the table is made when a fresh name is first asked (names_lazy) */
	char *name = arena_strdup(&c->mem->arena, n->name ? n->name : "");
	if (!name)
		return -1;
	c->mem->copied[c->mem->ncopied++] = name;
	struct gnode *d = &c->nodes[c->nnodes];
	*d = *n;
	d->name = name;
	d->nargs = 0;
	d->args = graph_alloc(c, sizeof *d->args * (size_t)n->nargs);
	d->source = n->source ? graph_strdup(c, n->source) : NULL;
	if (n->nstack && n->stack == memo->from) {
		d->stack = memo->to;
	} else {
		d->stack = arena_memdup(&c->mem->arena, n->stack, sizeof *d->stack * (size_t)n->nstack);
		if (n->nstack)
			*memo = (struct stack_memo){n->stack, d->stack};
	}
	if (!d->args || (n->source && !d->source) || !d->stack)
		return -1;
	if (n->kind == GN_CALL)
		val_incref(n->callee);
	c->nnodes++; /* from here on graph_free releases what the node holds */
	for (; d->nargs < n->nargs; d->nargs++)
		if (garg_copy(c, &d->args[d->nargs], &n->args[d->nargs]) < 0) {
			d->nargs++; /* the failed one is releasable too */
			return -1;
		}
	if (!n->nargs)
		d->args = NULL;
	if (!n->nstack)
		d->stack = NULL;
	return 0;
}

struct graph *graph_copy(const struct graph *g)
{
	struct graph *c = graph_new(g->name, g->compile_id, g->src, g->line, g->stage);
	if (!c)
		return NULL;
	/* the nodes array at its size at once, not grown by doubling */
	if (g->nnodes > 0 && !(c->nodes = malloc(sizeof *c->nodes * (size_t)g->nnodes)))
		goto fail;
	c->cap = g->nnodes;
	c->mem->names_lazy = true;
	if (!(c->mem->copied = malloc(sizeof *c->mem->copied * ((size_t)g->nnodes + 1))))
		goto fail;
	struct stack_memo memo = {NULL, NULL};
	for (int i = 0; i < g->nnodes; i++)
		if (copy_node(c, &g->nodes[i], &memo) < 0)
			goto fail;
	c->noutputs = g->noutputs;
	c->outputs = malloc(sizeof(int) * (size_t)(g->noutputs ? g->noutputs : 1));
	if (!c->outputs)
		goto fail;
	if (g->noutputs)
		memcpy(c->outputs, g->outputs, sizeof(int) * (size_t)g->noutputs);
	c->nsyms = g->nsyms;
	graph_check(c, "graph_copy");
	return c;
fail:
	c->noutputs = 0;
	graph_free(c);
	return NULL;
}

struct graph *graph_extract(const struct graph *g, int n, const int *order, const char *const *as_input, int noutputs,
			    const int *outputs)
{
	struct graph *c = graph_new(g->name, g->compile_id, g->src, g->line, g->stage);
	int *to = malloc(sizeof *to * ((size_t)g->nnodes + 1));
	if (!c || !to || (n > 0 && !(c->nodes = malloc(sizeof *c->nodes * (size_t)n))))
		goto fail;
	c->cap = n;
	c->mem->names_lazy = true;
	if (!(c->mem->copied = malloc(sizeof *c->mem->copied * ((size_t)n + 1))))
		goto fail;
	struct stack_memo memo = {NULL, NULL};
	for (int k = 0; k < n; k++) {
		const struct gnode *from = &g->nodes[order[k]];
		struct gnode in;
		if (as_input && as_input[k]) {
			/* its type and name, no args, no stack */
			in = *from;
			in.kind = GN_INPUT;
			in.op = 0;
			in.callee = val_none();
			in.nargs = 0;
			in.args = NULL;
			in.index = 0;
			in.source = (char *)as_input[k];
			in.nouts = 0;
			in.nstack = 0;
			in.stack = NULL;
			from = &in;
		}
		to[order[k]] = k;
		if (copy_node(c, from, &memo) < 0)
			goto fail;
		for (int a = 0; a < c->nodes[k].nargs; a++)
			graph_remap_arg(&c->nodes[k].args[a], to);
	}
	if (!(c->outputs = malloc(sizeof(int) * (size_t)(noutputs ? noutputs : 1))))
		goto fail;
	c->noutputs = noutputs;
	for (int k = 0; k < noutputs; k++)
		c->outputs[k] = to[outputs[k]];
	c->nsyms = g->nsyms;
	free(to);
	return c;
fail:
	free(to);
	if (c)
		c->noutputs = 0;
	graph_free(c);
	return NULL;
}

int graph_op_count(const struct graph *g)
{
	int k = 0;
	for (int i = 0; i < g->nnodes; i++)
		k += g->nodes[i].kind == GN_OP || g->nodes[i].kind == GN_CALL;
	return k;
}

int graph_const_items(const struct garg *a, value *items, int max)
{
	if (a->kind == GARG_CONST) {
		value v = a->constant;
		int cnt = v.tag == VAL_TUPLE ? (int)val_tuple(v)->len : 1;
		if (cnt > max)
			return -1;
		for (int k = 0; k < cnt; k++)
			items[k] = v.tag == VAL_TUPLE ? val_tuple(v)->items[k] : v;
		return cnt;
	}
	if (a->kind != GARG_TUPLE || a->n > max)
		return -1;
	for (int k = 0; k < a->n; k++) {
		if (a->items[k].kind != GARG_CONST)
			return -1;
		items[k] = a->items[k].constant;
	}
	return a->n;
}

int64_t graph_node_bytes(const struct gnode *n)
{
	int64_t b = (int64_t)dtype_size(n->dt);
	for (int k = 0; k < n->ndim; k++)
		b *= n->shape[k].value;
	return n->is_tensor ? b : 0;
}

/* ---- users ---- */

/* calls f(node, ctx) for each node arg in a's tree */
static void garg_each_node(const struct garg *a, void (*f)(int, void *), void *ctx)
{
	if (a->kind == GARG_NODE)
		f(a->node, ctx);
	else if (a->kind == GARG_LIST || a->kind == GARG_TUPLE)
		for (int i = 0; i < a->n; i++)
			garg_each_node(&a->items[i], f, ctx);
}

static void mark_node(int node, void *mark) { ((bool *)mark)[node] = true; }

void graph_mark_reads(const struct gnode *n, bool *mark)
{
	for (int a = 0; a < n->nargs; a++)
		garg_each_node(&n->args[a], mark_node, mark);
}

struct users_walk {
	struct graph_users *u;
	int *last;      /* the last reader counted for each node (each once) */
	int reader;
	bool fill;      /* second pass: write user[] */
};

static void count_use(int node, void *ctx)
{
	struct users_walk *w = ctx;
	if (node < 0 || node >= w->u->nnodes || w->last[node] == w->reader)
		return;
	w->last[node] = w->reader;
	if (w->fill)
		w->u->user[w->u->first[node]++] = w->reader;
	else
		w->u->first[node + 1]++;
}

int graph_users_build(const struct graph *g, struct graph_users *u)
{
	int n = g->nnodes;
	memset(u, 0, sizeof *u);
	int *ints = malloc(sizeof(int) * (size_t)(3 * n + 1));
	if (!ints)
		return -1;
	u->nnodes = n;
	u->first = ints;
	u->noutputs = ints + n + 1;
	struct users_walk w = {u, ints + 2 * n + 1, 0, false};
	memset(ints, 0, sizeof(int) * (size_t)(2 * n + 1));
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < n; i++)
			w.last[i] = -1;
		for (w.reader = 0; w.reader < n; w.reader++)
			for (int k = 0; k < g->nodes[w.reader].nargs; k++)
				garg_each_node(&g->nodes[w.reader].args[k], count_use, &w);
		if (pass == 1)
			break;
		for (int i = 0; i < n; i++)
			u->first[i + 1] += u->first[i];
		u->user = malloc(sizeof(int) * (size_t)(u->first[n] ? u->first[n] : 1));
		if (!u->user) {
			free(ints);
			memset(u, 0, sizeof *u);
			return -1;
		}
		w.fill = true;
	}
	/* filling moved each first[i] to where node i + 1's readers start */
	for (int i = n; i > 0; i--)
		u->first[i] = u->first[i - 1];
	u->first[0] = 0;
	for (int i = 0; i < g->noutputs; i++)
		if (g->outputs[i] >= 0 && g->outputs[i] < n)
			u->noutputs[g->outputs[i]]++;
	return 0;
}

void graph_users_release(struct graph_users *u)
{
	free(u->first);
	free(u->user);
	memset(u, 0, sizeof *u);
}

/* ---- editing ---- */

/* node args at or after `from` move by delta */
static void garg_shift(struct garg *a, int from, int delta)
{
	if (a->kind == GARG_NODE && a->node >= from)
		a->node += delta;
	else if (a->kind == GARG_LIST || a->kind == GARG_TUPLE)
		for (int i = 0; i < a->n; i++)
			garg_shift(&a->items[i], from, delta);
}

/* Args read earlier nodes (graph_verify), so only the nodes from index
 * start on can read one at or after `from`: an edit near the end of a
 * long graph costs what follows it, not the whole list. */
static void shift_refs(struct graph *g, int start, int from, int delta)
{
	for (int i = start; i < g->nnodes; i++)
		for (int k = 0; k < g->nodes[i].nargs; k++)
			garg_shift(&g->nodes[i].args[k], from, delta);
	for (int i = 0; i < g->noutputs; i++)
		if (g->outputs[i] >= from)
			g->outputs[i] += delta;
}

int graph_insert(struct graph *g, int pos, const struct gnode *n)
{
	if (pos < 0 || pos > g->nnodes || grow(g) < 0)
		return -1;
	shift_refs(g, pos, pos, 1);
	memmove(&g->nodes[pos + 1], &g->nodes[pos], sizeof *g->nodes * (size_t)(g->nnodes - pos));
	g->nodes[pos] = *n;
	g->nnodes++;
	return pos;
}

bool graph_same_type(const struct gnode *a, const struct gnode *b)
{
	if (a->is_tensor != b->is_tensor || a->nouts != b->nouts || a->dt != b->dt || a->ndim != b->ndim)
		return false;
	for (int k = 0; k < a->ndim; k++)
		if (a->shape[k].value != b->shape[k].value || a->shape[k].sym != b->shape[k].sym)
			return false;
	return true;
}

int graph_insert_copy(struct graph *g, int pos, const struct gnode *n, const int *to, int nouter,
		      const struct user_frame *outer)
{
	struct gnode d = *n;
	d.source = NULL;
	d.nargs = 0;
	d.name = graph_fresh_name(g, n->name);
	d.args = n->nargs ? graph_alloc(g, sizeof *d.args * (size_t)n->nargs) : NULL;
	d.nstack = nouter + n->nstack;
	d.stack = d.nstack ? graph_alloc(g, sizeof *d.stack * (size_t)d.nstack) : NULL;
	if (!d.name || (n->nargs && !d.args) || (d.nstack && !d.stack))
		return -1;
	if (nouter)
		memcpy(d.stack, outer, sizeof *d.stack * (size_t)nouter);
	if (n->nstack)
		memcpy(d.stack + nouter, n->stack, sizeof *d.stack * (size_t)n->nstack);
	for (; d.nargs < n->nargs; d.nargs++) {
		if (garg_copy(g, &d.args[d.nargs], &n->args[d.nargs]) < 0) {
			d.nargs++;
			goto fail;
		}
		graph_remap_arg(&d.args[d.nargs], to);
	}
	if (n->kind == GN_CALL)
		val_incref(n->callee);
	if (graph_insert(g, pos, &d) >= 0)
		return pos;
	if (n->kind == GN_CALL)
		val_decref(n->callee);
fail:
	for (int i = 0; i < d.nargs; i++)
		garg_release(&d.args[i]);
	return -1;
}

static int garg_replace(struct garg *a, int from, int to)
{
	if (a->kind == GARG_NODE && a->node == from) {
		a->node = to;
		return 1;
	}
	int k = 0;
	if (a->kind == GARG_LIST || a->kind == GARG_TUPLE)
		for (int i = 0; i < a->n; i++)
			k += garg_replace(&a->items[i], from, to);
	return k;
}

int graph_replace_uses(struct graph *g, int from, int to)
{
	int k = 0;
	/* args read earlier nodes (graph_verify): from's readers come after it */
	for (int i = from + 1; i < g->nnodes; i++)
		for (int j = 0; j < g->nodes[i].nargs; j++)
			k += garg_replace(&g->nodes[i].args[j], from, to);
	for (int i = 0; i < g->noutputs; i++)
		if (g->outputs[i] == from) {
			g->outputs[i] = to;
			k++;
		}
	return k;
}

static void find_reader(int node, void *ctx)
{
	int *want = ctx;
	if (node == want[0])
		want[1] = 1;
}

int graph_erase(struct graph *g, int i)
{
	if (i < 0 || i >= g->nnodes) {
		tj_error_set("graph %s: no node %d to erase", g->compile_id, i);
		return -1;
	}
	const char *name = g->nodes[i].name;
	for (int k = 0; k < g->noutputs; k++)
		if (g->outputs[k] == i) {
			tj_error_set("graph %s: cannot erase %s, an output", g->compile_id, name);
			return -1;
		}
	/* args read earlier nodes (graph_verify): readers come after i */
	for (int r = i + 1; r < g->nnodes; r++) {
		int want[2] = {i, 0};
		for (int k = 0; k < g->nodes[r].nargs; k++)
			garg_each_node(&g->nodes[r].args[k], find_reader, want);
		if (want[1]) {
			tj_error_set("graph %s: cannot erase %s, %s reads it", g->compile_id, name, g->nodes[r].name);
			return -1;
		}
	}
	node_release(&g->nodes[i]);
	memmove(&g->nodes[i], &g->nodes[i + 1], sizeof *g->nodes * (size_t)(g->nnodes - i - 1));
	g->nnodes--;
	shift_refs(g, i, i + 1, -1);
	return 0;
}

struct erase_check {
	const bool *drop;
	int nnodes;
	int reader;     /* -1: none found */
	int read;       /* the dropped node it reads */
};

static void find_dropped(int node, void *ctx)
{
	struct erase_check *c = ctx;
	if (c->reader < 0 && node >= 0 && node < c->nnodes && c->drop[node])
		c->read = node;
}

int graph_erase_nodes(struct graph *g, const bool *drop)
{
	for (int k = 0; k < g->noutputs; k++)
		if (drop[g->outputs[k]]) {
			tj_error_set("graph %s: cannot erase %s, an output", g->compile_id, g->nodes[g->outputs[k]].name);
			return -1;
		}
	struct erase_check c = {drop, g->nnodes, -1, -1};
	for (int r = 0; r < g->nnodes && c.reader < 0; r++) {
		if (drop[r])
			continue;
		for (int k = 0; k < g->nodes[r].nargs; k++)
			garg_each_node(&g->nodes[r].args[k], find_dropped, &c);
		if (c.read >= 0)
			c.reader = r;
	}
	if (c.reader >= 0) {
		tj_error_set("graph %s: cannot erase %s, %s reads it", g->compile_id, g->nodes[c.read].name,
			     g->nodes[c.reader].name);
		return -1;
	}
	int *to = malloc(sizeof *to * ((size_t)g->nnodes + 1));
	if (!to) {
		tj_error_set("out of memory");
		return -1;
	}
	int n = 0;
	for (int i = 0; i < g->nnodes; i++) {
		if (drop[i]) {
			to[i] = -1;
			node_release(&g->nodes[i]);
			continue;
		}
		to[i] = n;
		g->nodes[n++] = g->nodes[i];
	}
	g->nnodes = n;
	for (int i = 0; i < n; i++)
		for (int a = 0; a < g->nodes[i].nargs; a++)
			graph_remap_arg(&g->nodes[i].args[a], to);
	for (int k = 0; k < g->noutputs; k++)
		g->outputs[k] = to[g->outputs[k]];
	free(to);
	return 0;
}

/* ---- checking ---- */

struct verify {
	const struct graph *g;
	struct strbuf *why;
	const struct gnode *n;  /* the node being checked */
};

static int broken(struct verify *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int broken(struct verify *v, const char *fmt, ...)
{
	if (v->n)
		sb_printf(v->why, "node %s: ", v->n->name ? v->n->name : "?");
	va_list ap, again;
	va_start(ap, fmt);
	va_copy(again, ap);
	int n = vsnprintf(NULL, 0, fmt, ap);
	if (n > 0) {
		sb_grow(v->why, (size_t)n);
		vsnprintf(v->why->buf + v->why->len, (size_t)n + 1, fmt, again);
		v->why->len += (size_t)n;
	}
	va_end(again);
	va_end(ap);
	return -1;
}

/* node k read by arg of the node at index at (-1: an output) */
static int check_read(struct verify *v, int k, int at, const char *what)
{
	const struct graph *g = v->g;
	if (k < 0 || k >= g->nnodes)
		return broken(v, "%s reads node %d of %d", what, k, g->nnodes);
	if (at >= 0 && k >= at)
		return broken(v, "%s reads %s, which %s", what, g->nodes[k].name, k == at ? "is itself" : "comes later");
	if (g->nodes[k].nouts > 0)
		return broken(v, "%s reads the tuple %s without a getitem", what, g->nodes[k].name);
	return 0;
}

static int check_garg(struct verify *v, const struct garg *a, int at, const char *what, int depth)
{
	switch (a->kind) {
	case GARG_NODE:
		return check_read(v, a->node, at, what);
	case GARG_CONST:
		return val_is_err(a->constant) ? broken(v, "%s is an error value", what) : 0;
	case GARG_SYM:
		if (a->sym < 0 || a->sym >= v->g->nsyms)
			return broken(v, "%s is symbol s%d of %d", what, a->sym, v->g->nsyms);
		return 0;
	case GARG_LIST:
	case GARG_TUPLE:
		if (a->n < 0 || (a->n > 0 && !a->items) || depth > 64)
			return broken(v, "%s is a broken list", what);
		for (int i = 0; i < a->n; i++)
			if (check_garg(v, &a->items[i], at, what, depth + 1) < 0)
				return -1;
		return 0;
	}
	return broken(v, "%s has kind %d", what, (int)a->kind);
}

static int check_result(struct verify *v, const struct gnode *n)
{
	if (n->nouts > 0)
		return n->is_tensor ? broken(v, "a tuple of %d that says it is a tensor", n->nouts) : 0;
	if (n->nouts < 0)
		return broken(v, "nouts is %d", n->nouts);
	if (!n->is_tensor)
		return 0;
	if (n->dt < 0 || n->dt >= DT_COUNT)
		return broken(v, "dtype %d", (int)n->dt);
	if (n->ndim < 0 || n->ndim > TENSOR_MAX_DIMS)
		return broken(v, "ndim %d (at most %d)", n->ndim, TENSOR_MAX_DIMS);
	for (int d = 0; d < n->ndim; d++)
		if (n->shape[d].sym < -1 || n->shape[d].sym >= v->g->nsyms)
			return broken(v, "dimension %d is symbol s%d of %d", d, n->shape[d].sym, v->g->nsyms);
	return 0;
}

static int check_node(struct verify *v, int i)
{
	const struct gnode *n = &v->g->nodes[i];
	char what[32];
	switch (n->kind) {
	case GN_INPUT:
		if (!n->source)
			return broken(v, "an input without a source");
		if (n->nargs)
			return broken(v, "an input with %d args", n->nargs);
		break;
	case GN_OP:
		if (n->op < 0 || n->op >= OPS_COUNT)
			return broken(v, "op id %d", n->op);
		break;
	case GN_CALL:
		if (n->callee.tag != VAL_FUNC && n->callee.tag != VAL_BUILTIN)
			return broken(v, "calls a %s", val_type_name(n->callee));
		break;
	case GN_GETITEM:
		if (n->nargs != 1 || !n->args || n->args[0].kind != GARG_NODE)
			return broken(v, "a getitem reads no node");
		if (n->args[0].node < 0 || n->args[0].node >= i)
			return check_read(v, n->args[0].node, i, "arg 0");
		const struct gnode *t = &v->g->nodes[n->args[0].node];
		if (t->nouts <= 0)
			return broken(v, "a getitem of %s, which is no tuple", t->name);
		if (n->index < 0 || n->index >= t->nouts)
			return broken(v, "item %d of %s, a tuple of %d", n->index, t->name, t->nouts);
		break;
	default:
		return broken(v, "kind %d", (int)n->kind);
	}
	if (n->kind != GN_INPUT && (n->nstack < 1 || !n->stack))
		return broken(v, "no user stack");
	if (n->nstack < 0 || (n->nstack > 0 && !n->stack))
		return broken(v, "a broken user stack");
	if (n->nargs < 0 || (n->nargs > 0 && !n->args))
		return broken(v, "%d args and no array", n->nargs);
	for (int k = 0; n->kind != GN_GETITEM && k < n->nargs; k++) {
		snprintf(what, sizeof what, "arg %d", k);
		if (check_garg(v, &n->args[k], i, what, 0) < 0)
			return -1;
	}
	return check_result(v, n);
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* sorted, so that equal names sit side by side */
static int check_names(struct verify *v)
{
	const struct graph *g = v->g;
	char **names = malloc(sizeof *names * (size_t)(g->nnodes ? g->nnodes : 1));
	if (!names)
		return broken(v, "out of memory");
	int rc = 0;
	for (int i = 0; i < g->nnodes; i++)
		names[i] = g->nodes[i].name;
	qsort(names, (size_t)g->nnodes, sizeof *names, cmp_name);
	for (int i = 1; i < g->nnodes && rc == 0; i++)
		if (strcmp(names[i - 1], names[i]) == 0)
			rc = broken(v, "two nodes are named %s", names[i]);
	free(names);
	return rc;
}

int graph_verify(const struct graph *g, struct strbuf *why)
{
	struct verify v = {g, why, NULL};
	if (g->nnodes < 0 || g->nnodes > g->cap || (g->nnodes && !g->nodes))
		return broken(&v, "%d nodes in room for %d", g->nnodes, g->cap);
	if (g->nsyms < 0)
		return broken(&v, "%d symbols", g->nsyms);
	bool past_inputs = false;
	for (int i = 0; i < g->nnodes; i++) {
		const struct gnode *n = &g->nodes[i];
		v.n = NULL;
		if (!n->name || !*n->name)
			return broken(&v, "node %d has no name", i);
		v.n = n;
		if (n->kind == GN_INPUT && past_inputs)
			return broken(&v, "an input after %s", g->nodes[i - 1].name);
		past_inputs = n->kind != GN_INPUT;
		if (check_node(&v, i) < 0)
			return -1;
	}
	v.n = NULL;
	if (g->noutputs < 0 || (g->noutputs > 0 && !g->outputs))
		return broken(&v, "%d outputs and no array", g->noutputs);
	for (int i = 0; i < g->noutputs; i++) {
		char what[32];
		snprintf(what, sizeof what, "output %d", i);
		if (check_read(&v, g->outputs[i], -1, what) < 0)
			return -1;
	}
	return check_names(&v);
}

/* a debug build (configure --enable-debug), or a test run's environment */
static bool verify_enabled(void)
{
#ifdef TJIT_DEBUG
	return true;
#else
	const char *e = getenv("TJIT_VERIFY_GRAPHS");
	return e && *e && strcmp(e, "0") != 0;
#endif
}

void graph_check(const struct graph *g, const char *after)
{
	if (!g || !verify_enabled())
		return;
	struct strbuf why = STRBUF_INIT;
	if (graph_verify(g, &why) == 0) {
		sb_release(&why);
		return;
	}
	/* a broken graph is a compiler bug: stop where it was made */
	fprintf(stderr, "tjit: graph %s %s is broken after %s: %s\n", g->compile_id, g->name, after, why.buf);
	abort();
}

/* ---- printing ---- */

static const char *dtype_short(dtype dt)
{
	switch (dt) {
	case DT_BOOL: return "b8";
	case DT_INT64: return "i64";
	case DT_FLOAT32: return "f32";
	case DT_FLOAT64: return "f64";
	default: return "?";
	}
}

void graph_format_type(const struct gnode *n, struct strbuf *out)
{
	if (!n->is_tensor) {
		sb_puts(out, n->nouts > 0 ? "tuple" : "?");
		return;
	}
	sb_puts(out, dtype_short(n->dt));
	sb_putc(out, '[');
	for (int i = 0; i < n->ndim; i++) {
		if (i)
			sb_puts(out, ", ");
		if (n->shape[i].sym >= 0)
			sb_printf(out, "s%d", n->shape[i].sym);
		else
			sb_printf(out, "%lld", (long long)n->shape[i].value);
	}
	sb_putc(out, ']');
}

static void format_garg(const struct graph *g, const struct garg *a, struct strbuf *out)
{
	switch (a->kind) {
	case GARG_NODE:
		sb_puts(out, a->node >= 0 && a->node < g->nnodes ? g->nodes[a->node].name : "?");
		break;
	case GARG_CONST:
		val_repr(a->constant, out);
		break;
	case GARG_LIST:
	case GARG_TUPLE:
		sb_putc(out, a->kind == GARG_LIST ? '[' : '(');
		for (int i = 0; i < a->n; i++) {
			if (i)
				sb_puts(out, ", ");
			format_garg(g, &a->items[i], out);
		}
		if (a->kind == GARG_TUPLE && a->n == 1)
			sb_putc(out, ',');
		sb_putc(out, a->kind == GARG_LIST ? ']' : ')');
		break;
	case GARG_SYM:
		sb_printf(out, "s%d", a->sym);
		break;
	}
}

/* The default of parameter i of op as ops.def spells it ("None", "False",
 * "1"), or NULL (none, or the *vararg); *kwonly tells whether the
 * parameter comes after the *vararg. */
static const char *param_default(int op, int i, char *buf, size_t size, bool *kwonly, bool *vararg)
{
	const char *p = ops_table[op].params;
	*kwonly = *vararg = false;
	bool seen_star = false;
	for (int k = 0; *p; k++) {
		while (*p == ' ' || *p == ',')
			p++;
		const char *start = p;
		while (*p && *p != ',')
			p++;
		if (k == i) {
			*kwonly = seen_star;
			if (*start == '*') {
				*vararg = true;
				return NULL;
			}
			const char *eq = memchr(start, '=', (size_t)(p - start));
			if (!eq)
				return NULL;
			size_t n = (size_t)(p - eq - 1);
			if (n >= size)
				n = size - 1;
			memcpy(buf, eq + 1, n);
			buf[n] = '\0';
			return buf;
		}
		if (*start == '*')
			seen_star = true;
	}
	return NULL;
}

static bool arg_is_default(const struct garg *a, const char *def)
{
	if (!def || a->kind != GARG_CONST)
		return false;
	struct strbuf sb = STRBUF_INIT;
	val_repr(a->constant, &sb);
	bool same = sb.buf && strcmp(sb.buf, def) == 0;
	sb_release(&sb);
	return same;
}

void graph_format_args(const struct graph *g, const struct gnode *n, struct strbuf *out)
{
	bool keywords = false; /* once an argument was left out, the rest go by name */
	bool first = true;
	for (int i = 0; i < n->nargs; i++) {
		const char *name = NULL;
		if (n->kind == GN_OP) {
			char buf[32];
			bool kwonly, vararg;
			const char *def = param_default(n->op, i, buf, sizeof buf, &kwonly, &vararg);
			if (arg_is_default(&n->args[i], def)) {
				keywords = true;
				continue;
			}
			if (keywords || kwonly)
				name = ops_param_name(n->op, i);
		}
		if (!first)
			sb_puts(out, ", ");
		first = false;
		if (name)
			sb_printf(out, "%s=", name);
		format_garg(g, &n->args[i], out);
	}
}

/* the node text: "abs_1: f32[10] = abs(a)" */
static void format_node(const struct graph *g, const struct gnode *n, struct strbuf *out)
{
	sb_puts(out, n->name);
	if (n->is_tensor || n->nouts > 0) {
		sb_puts(out, ": ");
		graph_format_type(n, out);
	}
	sb_puts(out, " = ");
	switch (n->kind) {
	case GN_INPUT:
		sb_printf(out, "input %s", n->source ? n->source : "?");
		break;
	case GN_OP:
		sb_printf(out, "%s(", ops_table[n->op].name);
		graph_format_args(g, n, out);
		sb_putc(out, ')');
		break;
	case GN_CALL: {
		const char *fname = "?";
		if (n->callee.tag == VAL_FUNC)
			fname = val_func(n->callee)->code->name;
		else if (n->callee.tag == VAL_BUILTIN)
			fname = ((struct builtin *)n->callee.o)->name;
		sb_printf(out, "%s(", fname);
		graph_format_args(g, n, out);
		sb_putc(out, ')');
		break;
	}
	case GN_GETITEM:
		sb_printf(out, "%s[%d]",
			  n->nargs > 0 && n->args[0].kind == GARG_NODE ? g->nodes[n->args[0].node].name : "?",
			  n->index);
		break;
	}
}

#define GRAPH_COMMENT_COLUMN 43 /* where "# file:line" starts, counting the two-space indent */

void graph_print(const struct graph *g, struct strbuf *out)
{
	int nops = graph_op_count(g);
	sb_printf(out, "graph %s %s", g->compile_id, g->name);
	if (g->src)
		sb_printf(out, " (%s:%d)", g->src->path, g->line);
	if (g->stage != STAGE_CAPTURED)
		sb_printf(out, " [%s]", graph_stage_name(g->stage));
	sb_printf(out, " \xc2\xb7 %d op%s\n", nops, nops == 1 ? "" : "s");
	const struct source *last_src = NULL;
	int last_line = -1;
	for (int i = 0; i < g->nnodes; i++) {
		const struct gnode *n = &g->nodes[i];
		size_t start = out->len;
		sb_puts(out, "  ");
		format_node(g, n, out);
		if (n->kind != GN_INPUT && n->nstack > 0 && n->stack[n->nstack - 1].src) {
			const struct user_frame *uf = &n->stack[n->nstack - 1];
			size_t w = out->len - start;
			if (w < GRAPH_COMMENT_COLUMN)
				for (; w < GRAPH_COMMENT_COLUMN; w++)
					sb_putc(out, ' ');
			else
				sb_putc(out, ' ');
			sb_printf(out, "# %s:%d", uf->src->path, uf->line);
			if (uf->src != last_src || uf->line != last_line) {
				size_t len;
				const char *text = source_line(uf->src, uf->line, &len);
				while (text && len && (*text == ' ' || *text == '\t')) {
					text++;
					len--;
				}
				while (text && len && (text[len - 1] == ' ' || text[len - 1] == '\t' || text[len - 1] == '\r'))
					len--;
				if (text && len) {
					sb_puts(out, "  ");
					sb_add(out, text, len);
				}
				last_src = uf->src;
				last_line = uf->line;
			}
		}
		sb_putc(out, '\n');
	}
	sb_puts(out, "  return (");
	for (int i = 0; i < g->noutputs; i++) {
		if (i)
			sb_puts(out, ", ");
		int k = g->outputs[i];
		sb_puts(out, k >= 0 && k < g->nnodes ? g->nodes[k].name : "?");
	}
	if (g->noutputs == 1)
		sb_putc(out, ',');
	sb_puts(out, ")\n");
}

/* ---- the interpreter ---- */

/* the value of an argument: borrowed for nodes and constants, a new
 * container (owned: *owned set) for lists and tuples, an int for a
 * symbol (symval: the bound sizes, -1 unbound) */
static value garg_value(const struct garg *a, const value *vals, const int64_t *symval, bool *owned)
{
	*owned = false;
	switch (a->kind) {
	case GARG_NODE:
		return vals[a->node];
	case GARG_CONST:
		return a->constant;
	case GARG_SYM:
		if (!symval || symval[a->sym] < 0) {
			tj_error_set("graph symbol s%d is bound by no input", a->sym);
			return val_err();
		}
		return val_int(symval[a->sym]);
	case GARG_LIST:
	case GARG_TUPLE: {
		value c = a->kind == GARG_LIST ? list_new((size_t)a->n) : tuple_new((size_t)a->n);
		value *items = a->kind == GARG_LIST ? val_list(c)->items : val_tuple(c)->items;
		if (a->kind == GARG_LIST)
			val_list(c)->len = (size_t)a->n;
		for (int i = 0; i < a->n; i++) {
			bool o;
			value v = garg_value(&a->items[i], vals, symval, &o);
			if (val_is_err(v)) {
				for (int k = i; k < a->n; k++)
					items[k] = val_none();
				val_decref(c);
				return v;
			}
			if (!o)
				val_incref(v);
			items[i] = v;
		}
		*owned = true;
		return c;
	}
	}
	return val_none();
}

#define GRAPH_MAX_ARGS 16

static value run_node(struct vm *vm, const struct gnode *n, const value *vals, const int64_t *symval)
{
	value args[GRAPH_MAX_ARGS];
	bool owned[GRAPH_MAX_ARGS];
	if (n->nargs > GRAPH_MAX_ARGS) {
		tj_error_set("graph node %s has too many arguments", n->name);
		return val_err();
	}
	for (int i = 0; i < n->nargs; i++) {
		const struct garg *a = &n->args[i];
		owned[i] = false;
		if (a->kind == GARG_NODE)
			args[i] = vals[a->node];
		else if (a->kind == GARG_CONST)
			args[i] = a->constant;
		else
			args[i] = garg_value(a, vals, symval, &owned[i]);
		if (val_is_err(args[i])) {
			for (int k = 0; k < i; k++)
				if (owned[k])
					val_decref(args[k]);
			return args[i];
		}
	}
	value r;
	if (n->kind == GN_OP) {
		r = ops_call(n->op, args);
	} else {
		/* allow_in_graph: the function runs eagerly, outside the evaluator */
		void *ctx;
		vm_eval_frame_fn hook = vm_get_eval_frame(vm, &ctx);
		vm_set_eval_frame(vm, NULL, NULL);
		r = vm_call(vm, n->callee, args, n->nargs, val_none());
		vm_set_eval_frame(vm, hook, ctx);
		if (val_is_err(r)) {
			const char *msg = vm_error_message(vm);
			if (msg && !tj_error_peek())
				tj_error_set("%s", msg);
			vm_error_clear(vm);
		} else if (r.tag != VAL_TENSOR) {
			tj_error_set("%s returned %s, not a tensor", n->name, val_type_name(r));
			val_decref(r);
			r = val_err();
		}
	}
	for (int i = 0; i < n->nargs; i++)
		if (owned[i])
			val_decref(args[i]);
	return r;
}

/* The value of each symbol, from the sizes of the inputs (the guards
 * made every dimension of one symbol equal); -1: bound by none. */
static void bind_syms(const struct graph *g, tensor *const *inputs, int64_t *symval)
{
	for (int s = 0; s < g->nsyms; s++)
		symval[s] = -1;
	int nin = 0;
	for (int i = 0; i < g->nnodes; i++) {
		const struct gnode *n = &g->nodes[i];
		if (n->kind != GN_INPUT)
			continue;
		const tensor *t = inputs[nin++];
		for (int d = 0; d < n->ndim && d < t->ndim; d++) {
			int s = n->shape[d].sym;
			if (s >= 0 && s < g->nsyms && symval[s] < 0)
				symval[s] = t->shape[d];
		}
	}
}

/* zeros of node n's type, its symbols' sizes from symval */
static value zeros_of(const struct gnode *n, const int64_t *symval)
{
	int64_t shape[TENSOR_MAX_DIMS];
	for (int d = 0; d < n->ndim; d++)
		shape[d] = n->shape[d].sym >= 0 ? symval[n->shape[d].sym] : n->shape[d].value;
	tensor *z = tensor_full(n->dt, n->ndim, shape, 0.0);
	return z ? val_tensor(z) : val_err();
}

int graph_interpret(struct vm *vm, const struct graph *g, tensor *const *inputs, value *outputs)
{
	return graph_interpret_skipping(vm, g, inputs, NULL, outputs);
}

int graph_interpret_skipping(struct vm *vm, const struct graph *g, tensor *const *inputs, const bool *skip,
			     value *outputs)
{
	value small[32];
	value *vals = g->nnodes <= 32 ? small : util_malloc(sizeof(value) * (size_t)g->nnodes);
	int64_t symsmall[16];
	int64_t *symval = NULL;
	int nin = 0, done = 0, rc = 0;
	bool *read = NULL;
	if (g->nsyms > 0)
		symval = g->nsyms <= 16 ? symsmall : util_malloc(sizeof(int64_t) * (size_t)g->nsyms);
	if (!vals || (g->nsyms > 0 && !symval)) {
		tj_error_set("out of memory");
		rc = -1;
		goto cleanup;
	}
	if (symval)
		bind_syms(g, inputs, symval);
	/* a skipped node's zeros are made only where a running node or an
	 * output reads it */
	if (skip && !(read = util_calloc((size_t)g->nnodes + 1, sizeof *read))) {
		tj_error_set("out of memory");
		rc = -1;
		goto cleanup;
	}
	for (int i = 0; read && i < g->nnodes; i++)
		if (!skip[i])
			graph_mark_reads(&g->nodes[i], read);
	for (int i = 0; read && i < g->noutputs; i++)
		read[g->outputs[i]] = true;
	for (; done < g->nnodes; done++) {
		const struct gnode *n = &g->nodes[done];
		value r;
		switch (n->kind) {
		case GN_INPUT:
			r = val_tensor(inputs[nin++]);
			val_incref(r);
			break;
		case GN_GETITEM: {
			value t = vals[n->args[0].node];
			if (t.tag != VAL_TUPLE || n->index < 0 || (size_t)n->index >= val_tuple(t)->len) {
				tj_error_set("graph node %s: no item %d", n->name, n->index);
				r = val_err();
			} else {
				r = val_tuple(t)->items[n->index];
				val_incref(r);
			}
			break;
		}
		default:
			if (skip && skip[done])
				r = read[done] ? zeros_of(n, symval) : val_none();
			else
				r = run_node(vm, n, vals, symval);
			break;
		}
		if (val_is_err(r)) {
			rc = -1;
			break;
		}
		vals[done] = r;
	}
	if (rc == 0)
		for (int i = 0; i < g->noutputs; i++) {
			outputs[i] = vals[g->outputs[i]];
			val_incref(outputs[i]);
		}
	for (int i = 0; i < done; i++)
		val_decref(vals[i]);
cleanup:
	if (vals != small)
		free(vals);
	if (symval != symsmall)
		free(symval);
	free(read);
	return rc;
}

/* ---- one node at a time, for a stage's own runner ---- */

void graph_bind_syms(const struct graph *g, tensor *const *inputs, int64_t *symval)
{
	bind_syms(g, inputs, symval);
}

value graph_run_node(struct vm *vm, const struct gnode *n, const value *vals, const int64_t *symval)
{
	return run_node(vm, n, vals, symval);
}
