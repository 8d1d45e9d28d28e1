/* graph.c - the graph IR (graph.h): building, naming, printing as
 * LANGUAGE.md §7 shows, and the node-by-node interpreter that the eager
 * backend runs. */
#include "graph.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

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
	char *key;
	int count;     /* for a base: the last suffix handed out */
	bool used;     /* the name itself is taken */
};

struct graph_names {
	struct name_slot *slots;
	size_t cap, n;
};

static struct name_slot *names_slot(struct graph_names *t, const char *key)
{
	if ((t->n + 1) * 2 > t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 64;
		struct name_slot *ns = calloc(ncap, sizeof *ns);
		if (!ns) {
			fputs("tjit: out of memory\n", stderr);
			abort();
		}
		for (size_t i = 0; i < t->cap; i++) {
			if (!t->slots[i].key)
				continue;
			size_t j = hash_fnv1a_str(t->slots[i].key) & (ncap - 1);
			while (ns[j].key)
				j = (j + 1) & (ncap - 1);
			ns[j] = t->slots[i];
		}
		free(t->slots);
		t->slots = ns;
		t->cap = ncap;
	}
	size_t j = hash_fnv1a_str(key) & (t->cap - 1);
	while (t->slots[j].key && strcmp(t->slots[j].key, key) != 0)
		j = (j + 1) & (t->cap - 1);
	if (!t->slots[j].key) {
		t->slots[j].key = xstrdup(key);
		t->n++;
	}
	return &t->slots[j];
}

static bool names_used(struct graph_names *t, const char *key)
{
	if (!t->cap)
		return false;
	size_t j = hash_fnv1a_str(key) & (t->cap - 1);
	while (t->slots[j].key) {
		if (strcmp(t->slots[j].key, key) == 0)
			return t->slots[j].used;
		j = (j + 1) & (t->cap - 1);
	}
	return false;
}

static void names_free(struct graph_names *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->cap; i++)
		free(t->slots[i].key);
	free(t->slots);
	free(t);
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
	for (int i = 0; reserved[i]; i++)
		if (strcmp(reserved[i], s) == 0)
			return true;
	return false;
}

char *graph_fresh_name(struct graph *g, const char *base_in)
{
	if (!g->names) {
		g->names = calloc(1, sizeof *g->names);
		if (!g->names) {
			fputs("tjit: out of memory\n", stderr);
			abort();
		}
	}
	/* an identifier: other characters become '_', no leading digit */
	struct strbuf b = STRBUF_INIT;
	if (!base_in || !*base_in)
		base_in = "_unnamed";
	if (isdigit((unsigned char)base_in[0]))
		sb_putc(&b, '_');
	for (const char *p = base_in; *p; p++)
		sb_putc(&b, isalnum((unsigned char)*p) || *p == '_' ? *p : '_');
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
	struct strbuf cand = STRBUF_INIT;
	if (num)
		sb_printf(&cand, "%s_%ld", b.buf, num);
	else
		sb_puts(&cand, b.buf);
	struct name_slot *base = names_slot(g->names, b.buf);
	if (!num)
		num = base->count;
	while (names_used(g->names, cand.buf) || is_reserved_name(cand.buf)) {
		num++;
		cand.len = 0;
		sb_printf(&cand, "%s_%ld", b.buf, num);
	}
	base = names_slot(g->names, b.buf); /* the table may have grown */
	base->count = (int)num;
	names_slot(g->names, cand.buf)->used = true;
	sb_release(&b);
	return sb_detach(&cand);
}

/* ---- building ---- */

struct graph *graph_new(const char *name, const char *compile_id, const struct source *src, int line,
			enum graph_stage stage)
{
	struct graph *g = calloc(1, sizeof *g);
	if (!g) {
		fputs("tjit: out of memory\n", stderr);
		abort();
	}
	g->name = xstrdup(name ? name : "?");
	g->compile_id = xstrdup(compile_id ? compile_id : "");
	g->src = src;
	g->line = line;
	g->stage = stage;
	return g;
}

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
		free(a->items);
		break;
	case GARG_NODE:
	case GARG_SYM:
		break;
	}
}

static void node_release(struct gnode *n)
{
	free(n->name);
	if (n->kind == GN_CALL)
		val_decref(n->callee);
	for (int i = 0; i < n->nargs; i++)
		garg_release(&n->args[i]);
	free(n->args);
	free(n->source);
	free(n->stack);
}

void graph_free(struct graph *g)
{
	if (!g)
		return;
	for (int i = 0; i < g->nnodes; i++)
		node_release(&g->nodes[i]);
	free(g->nodes);
	free(g->outputs);
	free(g->name);
	free(g->compile_id);
	names_free(g->names);
	free(g);
}

int graph_add(struct graph *g, struct gnode *n)
{
	if (g->nnodes == g->cap) {
		int ncap = g->cap ? g->cap * 2 : 16;
		struct gnode *nn = realloc(g->nodes, sizeof *nn * (size_t)ncap);
		if (!nn) {
			fputs("tjit: out of memory\n", stderr);
			abort();
		}
		g->nodes = nn;
		g->cap = ncap;
	}
	g->nodes[g->nnodes] = *n;
	return g->nnodes++;
}

static void garg_remap(struct garg *a, const int *to)
{
	if (a->kind == GARG_NODE)
		a->node = to[a->node];
	else if (a->kind == GARG_LIST || a->kind == GARG_TUPLE)
		for (int i = 0; i < a->n; i++)
			garg_remap(&a->items[i], to);
}

void graph_hoist_inputs(struct graph *g)
{
	int *to = xmalloc(sizeof(int) * (size_t)(g->nnodes ? g->nnodes : 1));
	struct gnode *nodes = xmalloc(sizeof *nodes * (size_t)(g->cap ? g->cap : 1));
	int k = 0;
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < g->nnodes; i++)
			if ((g->nodes[i].kind == GN_INPUT) == (pass == 0)) {
				to[i] = k;
				nodes[k++] = g->nodes[i];
			}
	for (int i = 0; i < g->nnodes; i++)
		for (int j = 0; j < nodes[i].nargs; j++)
			garg_remap(&nodes[i].args[j], to);
	for (int i = 0; i < g->noutputs; i++)
		g->outputs[i] = to[g->outputs[i]];
	free(g->nodes);
	g->nodes = nodes;
	free(to);
}

void graph_truncate(struct graph *g, int n)
{
	while (g->nnodes > n)
		node_release(&g->nodes[--g->nnodes]);
}

static void garg_copy(struct garg *d, const struct garg *a)
{
	*d = *a;
	if (a->kind == GARG_CONST) {
		val_incref(a->constant);
	} else if (a->kind == GARG_LIST || a->kind == GARG_TUPLE) {
		d->items = xmalloc(sizeof *d->items * (size_t)(a->n ? a->n : 1));
		for (int i = 0; i < a->n; i++)
			garg_copy(&d->items[i], &a->items[i]);
	}
}

struct graph *graph_copy(const struct graph *g)
{
	struct graph *c = graph_new(g->name, g->compile_id, g->src, g->line, g->stage);
	for (int i = 0; i < g->nnodes; i++) {
		const struct gnode *n = &g->nodes[i];
		struct gnode d = *n;
		d.name = xstrdup(n->name);
		names_slot(c->names ? c->names : (c->names = calloc(1, sizeof *c->names)), n->name)->used = true;
		if (n->kind == GN_CALL)
			val_incref(n->callee);
		d.args = xmalloc(sizeof *d.args * (size_t)(n->nargs ? n->nargs : 1));
		for (int k = 0; k < n->nargs; k++)
			garg_copy(&d.args[k], &n->args[k]);
		d.source = n->source ? xstrdup(n->source) : NULL;
		d.stack = xmalloc(sizeof *d.stack * (size_t)(n->nstack ? n->nstack : 1));
		if (n->nstack)
			memcpy(d.stack, n->stack, sizeof *d.stack * (size_t)n->nstack);
		graph_add(c, &d);
	}
	c->noutputs = g->noutputs;
	c->outputs = xmalloc(sizeof(int) * (size_t)(g->noutputs ? g->noutputs : 1));
	if (g->noutputs)
		memcpy(c->outputs, g->outputs, sizeof(int) * (size_t)g->noutputs);
	c->nsyms = g->nsyms;
	return c;
}

int graph_op_count(const struct graph *g)
{
	int k = 0;
	for (int i = 0; i < g->nnodes; i++)
		k += g->nodes[i].kind == GN_OP || g->nodes[i].kind == GN_CALL;
	return k;
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

int graph_interpret(struct vm *vm, const struct graph *g, tensor *const *inputs, value *outputs)
{
	value small[32];
	value *vals = g->nnodes <= 32 ? small : xmalloc(sizeof(value) * (size_t)g->nnodes);
	int64_t symsmall[16];
	int64_t *symval = NULL;
	if (g->nsyms > 0) {
		symval = g->nsyms <= 16 ? symsmall : xmalloc(sizeof(int64_t) * (size_t)g->nsyms);
		bind_syms(g, inputs, symval);
	}
	int nin = 0, done = 0, rc = 0;
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
	if (vals != small)
		free(vals);
	if (symval != symsmall)
		free(symval);
	return rc;
}
