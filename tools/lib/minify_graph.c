/* minify_graph.c - the failing graph read back from the candidates' log
 * and written as a tj program of the nodes kept (minify.h, doc/minify.md
 * "Shrinking the graph"). A dropped node that a kept one reads becomes a
 * parameter of the graph's function, given a random value of its type. */
#include "minify.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "ops.h"
#include "query.h"
#include "strbuf.h"
#include "tensor.h"
#include "util.h"

/* the operators a graph's OPER ops are written with */
static const struct {
	const char *op, *text;
} binops[] = {
	{"add", "+"}, {"sub", "-"}, {"mul", "*"}, {"div", "/"}, {"pow", "**"}, {"floordiv", "//"},
	{"mod", "%"}, {"lt", "<"},  {"le", "<="}, {"gt", ">"},  {"ge", ">="}, {"eq", "=="},
	{"ne", "!="},
};

static const char *binop_text(const char *op)
{
	for (size_t i = 0; i < sizeof binops / sizeof *binops; i++)
		if (strcmp(binops[i].op, op) == 0)
			return binops[i].text;
	return NULL;
}

static bool ident_start(char c)
{
	return isalpha((unsigned char)c) || c == '_';
}

static bool ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

static int find_node(const struct minify_graph *g, const char *name, size_t len)
{
	for (int i = 0; i < g->n; i++)
		if (strlen(g->nodes[i].name) == len && strncmp(g->nodes[i].name, name, len) == 0)
			return i;
	return -1;
}

/* Calls fn(ctx, node, start, len) for each identifier of text that names
 * a node of g (outside strings), and fn(ctx, -1, start, len) for every
 * other run of text. */
static void scan_args(const struct minify_graph *g, const char *text, void (*fn)(void *, int, const char *, size_t),
		      void *ctx)
{
	const char *p = text, *plain = text;
	while (*p) {
		if (*p == '"' || *p == '\'') {
			char q = *p++;
			while (*p && *p != q)
				p += p[0] == '\\' && p[1] ? 2 : 1;
			if (*p)
				p++;
			continue;
		}
		if (ident_start(*p) && (p == text || !ident_char(p[-1]))) {
			const char *s = p;
			while (ident_char(*p))
				p++;
			int i = find_node(g, s, (size_t)(p - s));
			if (i >= 0) {
				if (s > plain)
					fn(ctx, -1, plain, (size_t)(s - plain));
				fn(ctx, i, s, (size_t)(p - s));
				plain = p;
			}
			continue;
		}
		p++;
	}
	if (p > plain)
		fn(ctx, -1, plain, (size_t)(p - plain));
}

struct reads_ctx {
	struct minify_node *n;
};

static void add_read(void *ctx, int node, const char *s, size_t len)
{
	struct minify_node *n = ((struct reads_ctx *)ctx)->n;
	if (node < 0)
		return;
	for (int i = 0; i < n->nreads; i++)
		if (n->reads[i] == node)
			return;
	n->reads = xrealloc(n->reads, (size_t)(n->nreads + 1) * sizeof *n->reads);
	n->reads[n->nreads++] = node;
}

/* can the program write this op node: a tensor op of the table that
 * makes no tensor from nothing, draws no random number, is no extension,
 * and whose arguments are plain values */
static bool can_emit(const struct minify_node *n)
{
	if (n->kind != MZN_OP || !n->shape || !n->op)
		return false;
	int id = ops_find(n->op, OPK_FN | OPK_METH | OPK_OPER | OPK_ATTR);
	if (id < 0)
		return false;
	const struct ops_info *info = &ops_table[id];
	if (info->flags & (OPF_CREATE | OPF_RANDOM | OPF_OPAQUE | OPF_EFFECT))
		return false;
	if (strstr(n->args, "slice(") || strcmp(n->op, "getitem") == 0)
		return false;
	return (info->kind & (OPK_FN | OPK_METH | OPK_ATTR)) || binop_text(n->op) || strcmp(n->op, "neg") == 0;
}

int minify_graph_load(const char *db, long pid, const char *label, struct minify_graph *g, char **err)
{
	memset(g, 0, sizeof *g);
	*err = NULL;
	struct dbq *q = dbq_open(db, err);
	if (!q)
		return -1;
	int rc = -1;
	struct dbq_compile c = {0};
	struct dbq_graph *gs = NULL;
	struct dbq_node *nd = NULL;
	int ngs = 0, nnd = 0;
	int64_t run = dbq_find_run(q, 0, pid, "tjit-minify child");
	if (!run || dbq_compile_get(q, run, label, &c, err) < 0 || dbq_graphs_of(q, c.id, &gs, &ngs, err) < 0)
		goto cleanup;
	int captured = -1;
	for (int i = 0; i < ngs; i++)
		if (strcmp(gs[i].stage, "captured") == 0)
			captured = i;
	if (captured < 0 || dbq_nodes(q, gs[captured].id, &nd, &nnd, err) < 0)
		goto cleanup;
	g->nodes = xcalloc((size_t)nnd + 1, sizeof *g->nodes);
	const char *output = NULL;
	for (int i = 0; i < nnd; i++) {
		if (strcmp(nd[i].kind, "output") == 0) {
			output = nd[i].args;
			continue;
		}
		struct minify_node *n = &g->nodes[g->n++];
		n->kind = strcmp(nd[i].kind, "input") == 0 ? MZN_INPUT : strcmp(nd[i].kind, "op") == 0 ? MZN_OP : MZN_ITEM;
		n->name = xstrdup(nd[i].name);
		n->op = nd[i].op ? xstrdup(nd[i].op) : NULL;
		n->args = xstrdup(nd[i].args ? nd[i].args : "");
		n->dtype = nd[i].dtype ? xstrdup(nd[i].dtype) : NULL;
		n->shape = nd[i].shape ? xstrdup(nd[i].shape) : NULL;
		n->where = nd[i].file ? xasprintf("%s:%d", nd[i].file, nd[i].line) : NULL;
	}
	for (int i = 0; i < g->n; i++) {
		struct minify_node *n = &g->nodes[i];
		if (n->kind != MZN_INPUT)
			scan_args(g, n->args, add_read, &(struct reads_ctx){n});
		n->emit = can_emit(n);
	}
	if (output) {
		struct minify_node out = {0};
		scan_args(g, output, add_read, &(struct reads_ctx){&out});
		g->outputs = out.reads;
		g->noutputs = out.nreads;
	}
	g->label = xstrdup(label);
	rc = 0;
cleanup:
	if (rc < 0 && !*err)
		*err = xasprintf("no graph %s in the candidates' log", label);
	dbq_nodes_free(nd, nnd);
	dbq_graphs_free(gs, ngs);
	if (c.label)
		dbq_compile_release(&c);
	dbq_close(q);
	return rc;
}

void minify_graph_release(struct minify_graph *g)
{
	for (int i = 0; i < g->n; i++) {
		struct minify_node *n = &g->nodes[i];
		free(n->name);
		free(n->op);
		free(n->args);
		free(n->dtype);
		free(n->shape);
		free(n->where);
		free(n->reads);
	}
	free(g->nodes);
	free(g->outputs);
	free(g->label);
	free(g->syms);
	memset(g, 0, sizeof *g);
}

/* ---- the program ---- */

/* the size symbol sN stands for: recorded (minify_graph_bind_sizes), else 3 */
static long sym_size(const struct minify_graph *g, long sym)
{
	return sym >= 0 && sym < g->nsyms && g->syms[sym] >= 0 ? g->syms[sym] : 3;
}

struct rename_ctx {
	const struct minify_graph *g;
	struct strbuf *sb;
};

/* the args with every node named v_NAME, and every symbolic size sN the
 * size its parameters are given (put_value) */
static void put_renamed(void *ctx, int node, const char *s, size_t len)
{
	struct rename_ctx *rc = ctx;
	struct strbuf *sb = rc->sb;
	if (node >= 0) {
		sb_puts(sb, "v_");
		sb_add(sb, s, len);
		return;
	}
	for (size_t i = 0; i < len;) {
		size_t j = i + 1;
		while (j < len && isdigit((unsigned char)s[j]))
			j++;
		bool sym = s[i] == 's' && j > i + 1 && (i == 0 || !ident_char(s[i - 1])) && (j == len || !ident_char(s[j]));
		if (sym) {
			sb_printf(sb, "%ld", sym_size(rc->g, strtol(s + i + 1, NULL, 10)));
			i = j;
		} else {
			sb_putc(sb, s[i++]);
		}
	}
}

/* the top-level items of a renamed args text */
static int split_args(char *text, char **items, int max)
{
	int n = 0, depth = 0;
	char *start = text;
	for (char *p = text;; p++) {
		if (*p == '(' || *p == '[')
			depth++;
		else if (*p == ')' || *p == ']')
			depth--;
		else if (*p == '"' || *p == '\'') {
			char q = *p++;
			while (*p && *p != q)
				p += p[0] == '\\' && p[1] ? 2 : 1;
			if (!*p)
				break;
			continue;
		}
		if ((*p == ',' && depth == 0) || !*p) {
			bool end = !*p;
			*p = '\0';
			while (*start == ' ')
				start++;
			if (n < max && *start)
				items[n++] = start;
			start = p + 1;
			if (end)
				break;
		}
	}
	return n;
}

/* index of the "*name" parameter in params, or -1 */
static int star_param(const char *params)
{
	int i = 0;
	for (const char *p = params; *p; p++) {
		if (*p == '*')
			return i;
		if (*p == ',')
			i++;
	}
	return -1;
}

/* the name of parameter i of params (malloc'd), without default */
static char *param_name(const char *params, int i)
{
	const char *p = params;
	for (int k = 0; k < i && p; k++) {
		p = strchr(p, ',');
		if (p)
			p++;
	}
	if (!p)
		return NULL;
	while (*p == ' ' || *p == '*')
		p++;
	size_t n = 0;
	while (ident_char(p[n]))
		n++;
	return xstrndup(p, n);
}

#define MAX_ARGS 16

/* the expression of op node n */
static void put_expr(const struct minify_graph *g, const struct minify_node *n, struct strbuf *sb)
{
	struct strbuf r = STRBUF_INIT;
	scan_args(g, n->args, put_renamed, &(struct rename_ctx){g, &r});
	char *text = sb_detach(&r);
	char *a[MAX_ARGS];
	int na = split_args(text, a, MAX_ARGS);
	int id = ops_find(n->op, OPK_FN | OPK_METH | OPK_OPER | OPK_ATTR);
	const struct ops_info *info = &ops_table[id];
	const char *bin = binop_text(n->op);
	if (bin && na == 2) {
		sb_printf(sb, "%s %s %s", a[0], bin, a[1]);
	} else if (info->kind & OPK_ATTR) {
		sb_printf(sb, "%s.%s", na ? a[0] : "", n->op);
	} else {
		bool fn = (info->kind & OPK_FN) && !(info->flags & OPF_PYBUILTIN);
		int star = star_param(info->params);
		if (fn)
			sb_printf(sb, "%s(", n->op);
		else
			sb_printf(sb, "%s.%s(", na ? a[0] : "", n->op);
		for (int i = fn ? 0 : 1; i < na; i++) {
			if (i > (fn ? 0 : 1))
				sb_puts(sb, ", ");
			if (star >= 0 && i > star) {
				char *pn = param_name(info->params, i);
				sb_printf(sb, "%s=", pn ? pn : "");
				free(pn);
			}
			sb_puts(sb, a[i]);
		}
		sb_putc(sb, ')');
	}
	free(text);
}

/* a value of n's type, as in: "randn(2, 3)", "zeros(1, 1, dtype=int64)" */
static void put_value(const struct minify_graph *g, const struct minify_node *n, const struct minify_inputs *in,
		      struct strbuf *sb)
{
	struct strbuf dims = STRBUF_INIT;
	const char *s = n->shape ? n->shape : "[]";
	int nd = 0;
	for (const char *p = s; *p;) {
		if (!isalnum((unsigned char)*p)) {
			p++;
			continue;
		}
		/* a size, or a symbolic size sN: as recorded, else 3 (any size above 1) */
		long v;
		if (*p == 's') {
			v = sym_size(g, strtol(p + 1, (char **)&p, 10));
		} else {
			v = strtol(p, (char **)&p, 10);
		}
		if (in && in->shrink < 0)
			v = v > 0 ? 1 : 0;
		else if (in && in->shrink > 0)
			v = v > 0 ? (v >> in->shrink > 0 ? v >> in->shrink : 1) : 0;
		sb_printf(&dims, "%s%ld", nd++ ? ", " : "", v);
	}
	const char *d = nd ? sb_str(&dims) : "()";
	const char *dt = n->dtype ? n->dtype : "float32";
	enum minify_fill fill = in && in->fill != MZ_FILL_RECORDED ? in->fill : MZ_FILL_RANDN;
	if (fill != MZ_FILL_RANDN)
		sb_printf(sb, "%s(%s%s%s)", fill == MZ_FILL_ZEROS ? "zeros" : "ones", d,
			  strcmp(dt, "float32") ? ", dtype=" : "", strcmp(dt, "float32") ? dt : "");
	else if (strcmp(dt, "float64") == 0)
		sb_printf(sb, "randn(%s, dtype=float64)", d);
	else if (strcmp(dt, "int64") == 0)
		sb_printf(sb, "(randn(%s) * 4).to(int64)", d);
	else if (strcmp(dt, "bool") == 0)
		sb_printf(sb, "randn(%s) > 0", d);
	else
		sb_printf(sb, "randn(%s)", d);
	sb_release(&dims);
}

int minify_graph_max_size(const struct minify_graph *g, const bool *keep)
{
	long max = 0;
	for (int i = 0; i < g->n; i++) {
		const char *s = g->nodes[i].shape;
		if (!keep[i] || !s)
			continue;
		for (const char *p = s; *p; p++)
			if (isdigit((unsigned char)*p) && (p == s || !isalnum((unsigned char)p[-1]))) {
				long v = strtol(p, NULL, 10);
				max = v > max ? v : max;
			}
	}
	return max > 3 ? (int)max : 3;
}

int minify_graph_kept(const struct minify_graph *g, const bool *keep)
{
	int k = 0;
	for (int i = 0; i < g->n; i++)
		k += keep[i] && g->nodes[i].kind == MZN_OP && g->nodes[i].emit;
	return k;
}

/* the call's arguments: the parameters, float32 ones with suffix */
static void put_params(const struct minify_graph *g, const bool *param, const char *f32_suffix, struct strbuf *sb)
{
	int np = 0;
	for (int i = 0; i < g->n; i++) {
		if (!param[i])
			continue;
		const char *dt = g->nodes[i].dtype;
		bool f32 = !dt || strcmp(dt, "float32") == 0;
		sb_printf(sb, "%sv_%s%s", np++ ? ", " : "", g->nodes[i].name, f32 ? f32_suffix : "");
	}
}

/* An accuracy repro checks itself: the compiled outputs against the
 * function run eagerly on float64 copies of its float32 inputs, within
 * the print's last digit and rel of float32 rounding; "wrong output" and
 * exit(1) when one differs. */
static void put_check(const struct minify_graph *g, const bool *param, const char *backend, double rel,
		      struct strbuf *sb)
{
	sb_printf(sb, "got = compile(repro, backend=\"%s\")(", backend);
	put_params(g, param, "", sb);
	sb_puts(sb, ")\nwant = repro(");
	put_params(g, param, ".to(float64)", sb);
	sb_puts(sb, ")\nprint(got)\n");
	sb_puts(sb, "for i in range(len(got)):\n");
	sb_puts(sb, "    g = got[i].to(float64)\n");
	sb_puts(sb, "    w = want[i].to(float64)\n");
	sb_printf(sb, "    if ((g - w).abs() > 0.0001 + %.6g * w.abs()).sum().item() > 0:\n", rel);
	sb_puts(sb, "        print(\"wrong output\", i, \"differs from the float64 eager run\")\n");
	sb_puts(sb, "        exit(1)\n");
}

/* What each node is in the graph of the nodes keep[] keeps (arrays of
 * g->n + 1, malloc'd): kept, an op written; read, by a kept one; param,
 * a dropped node a kept one reads (an input there); out, an output (what
 * nothing kept reads, and the graph's own outputs kept). */
struct roles {
	bool *kept, *read, *param, *out;
};

static void roles_of(const struct minify_graph *g, const bool *keep, struct roles *r)
{
	int n = g->n;
	r->kept = xcalloc((size_t)n + 1, sizeof *r->kept);
	r->param = xcalloc((size_t)n + 1, sizeof *r->param);
	r->read = xcalloc((size_t)n + 1, sizeof *r->read);
	r->out = xcalloc((size_t)n + 1, sizeof *r->out);
	for (int i = 0; i < n; i++)
		r->kept[i] = keep[i] && g->nodes[i].kind == MZN_OP && g->nodes[i].emit;
	for (int i = 0; i < n; i++)
		for (int k = 0; r->kept[i] && k < g->nodes[i].nreads; k++) {
			int x = g->nodes[i].reads[k];
			r->read[x] = true;
			if (!r->kept[x])
				r->param[x] = true;
		}
	for (int i = 0; i < n; i++) {
		r->out[i] = r->kept[i] && !r->read[i];
		for (int k = 0; !r->out[i] && r->kept[i] && k < g->noutputs; k++)
			r->out[i] = g->outputs[k] == i;
	}
}

static void roles_release(struct roles *r)
{
	free(r->kept);
	free(r->read);
	free(r->param);
	free(r->out);
}

/* def repro(PARAMS): one statement a kept node, returning outs[] */
static void put_function(const struct minify_graph *g, const struct roles *ro, const bool *outs, struct strbuf *sb)
{
	sb_puts(sb, "def repro(");
	int np = 0;
	for (int i = 0; i < g->n; i++)
		if (ro->param[i])
			sb_printf(sb, "%sv_%s", np++ ? ", " : "", g->nodes[i].name);
	sb_puts(sb, "):\n");
	for (int i = 0; i < g->n; i++) {
		if (!ro->kept[i])
			continue;
		struct strbuf line = STRBUF_INIT;
		sb_printf(&line, "    v_%s = ", g->nodes[i].name);
		put_expr(g, &g->nodes[i], &line);
		if (g->nodes[i].where)
			sb_printf(sb, "%-40s  # %s\n", sb_str(&line), g->nodes[i].where);
		else
			sb_printf(sb, "%s\n", sb_str(&line));
		sb_release(&line);
	}
	sb_puts(sb, "    return (");
	int no = 0;
	for (int i = 0; i < g->n; i++)
		if (outs[i])
			sb_printf(sb, "%sv_%s", no++ ? ", " : "", g->nodes[i].name);
	sb_puts(sb, no == 1 ? ",)\n\n" : ")\n\n");
}

/* the parameters' values: from the sidecar where in says so (slot), else
 * made as in says (seeded) */
static void put_inputs(const struct minify_graph *g, const bool *param, const struct minify_inputs *in,
		       uint64_t seed, struct strbuf *sb)
{
	sb_printf(sb, "manual_seed(%llu)\n", (unsigned long long)seed);
	bool recorded = in && in->fill == MZ_FILL_RECORDED && in->sidecar && in->slot;
	bool any = false;
	for (int i = 0; recorded && i < g->n && !any; i++)
		any = param[i] && in->slot[i] >= 0;
	if (any)
		sb_printf(sb, "vals = load(\"%s\")\n", in->sidecar);
	for (int i = 0; i < g->n; i++) {
		if (!param[i])
			continue;
		sb_printf(sb, "v_%s = ", g->nodes[i].name);
		if (any && in->slot[i] >= 0)
			sb_printf(sb, "vals[%d]", in->slot[i]);
		else
			put_value(g, &g->nodes[i], in, sb);
		sb_putc(sb, '\n');
	}
}

char *minify_graph_program(const struct minify_graph *g, const bool *keep, const char *backend, uint64_t seed,
			   double check_rel, const struct minify_inputs *in, const char *header)
{
	if (minify_graph_kept(g, keep) == 0)
		return NULL;
	struct roles ro;
	roles_of(g, keep, &ro);
	const bool *param = ro.param;
	struct strbuf sb = STRBUF_INIT;
	sb_puts(&sb, header);
	put_function(g, &ro, ro.out, &sb);
	put_inputs(g, param, in, seed, &sb);
	if (check_rel < 0) {
		sb_printf(&sb, "print(compile(repro, backend=\"%s\")(", backend);
		put_params(g, param, "", &sb);
		sb_puts(&sb, "))\n");
	} else {
		put_check(g, param, backend, check_rel, &sb);
	}
	roles_release(&ro);
	return sb_detach(&sb);
}

void minify_graph_params(const struct minify_graph *g, const bool *keep, bool *param)
{
	struct roles ro;
	roles_of(g, keep, &ro);
	memcpy(param, ro.param, (size_t)g->n * sizeof *param);
	roles_release(&ro);
}

/* the nodes whose value the values program saves: every tensor it makes
 * or is given */
static bool saved_value(const struct minify_graph *g, const struct roles *ro, int i)
{
	return g->nodes[i].shape && (ro->kept[i] || ro->param[i]);
}

char *minify_graph_values_program(const struct minify_graph *g, const char *inputs, const char *values,
				  uint64_t seed, int *slot)
{
	bool *all = xcalloc((size_t)g->n + 1, sizeof *all);
	for (int i = 0; i < g->n; i++)
		all[i] = true;
	if (minify_graph_kept(g, all) == 0) {
		free(all);
		return NULL;
	}
	struct roles ro;
	roles_of(g, all, &ro);
	/* the function returns every value it makes; its inputs come from
	 * the recorded file, in the graph's order, the rest random */
	int *in_slot = xcalloc((size_t)g->n + 1, sizeof *in_slot);
	int k = 0, nsaved = 0;
	for (int i = 0; i < g->n; i++) {
		in_slot[i] = g->nodes[i].kind == MZN_INPUT ? k++ : -1;
		bool saved = saved_value(g, &ro, i);
		slot[i] = saved ? nsaved++ : -1;
		all[i] = saved && ro.kept[i];
	}
	struct strbuf sb = STRBUF_INIT;
	sb_puts(&sb, "# tjit-minify: every value of the failing graph, run eagerly\n");
	put_function(g, &ro, all, &sb);
	struct minify_inputs in = {0, MZ_FILL_RECORDED, inputs, in_slot};
	put_inputs(g, ro.param, &in, seed, &sb);
	sb_puts(&sb, "outs = repro(");
	put_params(g, ro.param, "", &sb);
	sb_printf(&sb, ")\nsave(\"%s\", [", values);
	int o = 0, np = 0;
	for (int i = 0; i < g->n; i++) {
		if (slot[i] < 0)
			continue;
		if (ro.kept[i])
			sb_printf(&sb, "%souts[%d]", np++ ? ", " : "", o++);
		else
			sb_printf(&sb, "%sv_%s", np++ ? ", " : "", g->nodes[i].name);
	}
	sb_puts(&sb, "])\n");
	free(in_slot);
	free(all);
	roles_release(&ro);
	return sb_detach(&sb);
}

void minify_graph_bind_sizes(struct minify_graph *g, struct tensor *const *inputs, int n)
{
	int k = 0;
	for (int i = 0; i < g->n; i++) {
		const struct minify_node *nd = &g->nodes[i];
		if (nd->kind != MZN_INPUT)
			continue;
		const tensor *t = k < n ? inputs[k] : NULL;
		k++;
		if (!t || !nd->shape)
			continue;
		int d = 0;
		for (const char *p = nd->shape; *p; d++) {
			while (*p && !isalnum((unsigned char)*p))
				p++;
			if (!*p)
				break;
			if (*p == 's' && d < t->ndim) {
				long sym = strtol(p + 1, (char **)&p, 10);
				if (sym >= 0 && sym < 4096) {
					if (sym >= g->nsyms) {
						g->syms = xrealloc(g->syms, (size_t)(sym + 1) * sizeof *g->syms);
						for (int j = g->nsyms; j <= sym; j++)
							g->syms[j] = -1;
						g->nsyms = (int)sym + 1;
					}
					g->syms[sym] = (long)t->shape[d];
				}
			} else {
				while (isalnum((unsigned char)*p))
					p++;
			}
		}
	}
}

/* ---- the graphs in the user's log ---- */

/* the minimized graph's rows: the kept ops as the log has them, each
 * dropped node they read an input ("was OP(ARGS)"), the output; its
 * listing from the original's lines (line i + 1 is node i) */
static void minimized_rows(const struct minify_graph *g, const struct roles *ro, const struct dbq_graph *orig,
			   const struct dbq_node *nd, struct db_node *out, int *nout, char **was, struct strbuf *listing,
			   struct strbuf *ret)
{
	int ops = 0, m = 0;
	for (int i = 0; i < g->n; i++)
		ops += ro->kept[i];
	const char *s = orig->listing, *nl = strchr(s, '\n');
	/* the header: "graph 1/0 f (prog.tj:9) · 5 ops" as "... [minified] · 1 op" */
	const char *dot = strstr(s, " \xc2\xb7 ");
	int hlen = dot && (!nl || dot < nl) ? (int)(dot - s) : nl ? (int)(nl - s) : (int)strlen(s);
	sb_printf(listing, "%.*s [minified] \xc2\xb7 %d %s\n", hlen, s, ops, ops == 1 ? "op" : "ops");
	for (int i = 0; i < g->n; i++) {
		s = nl ? nl + 1 : s + strlen(s);
		nl = strchr(s, '\n');
		int len = nl ? (int)(nl - s) : (int)strlen(s);
		if (!ro->kept[i] && !ro->param[i])
			continue;
		out[m] = (struct db_node){nd[i].name, nd[i].kind, nd[i].op, nd[i].args, nd[i].dtype, nd[i].shape,
					  nd[i].file, nd[i].line, nd[i].col, nd[i].user_stack};
		if (ro->param[i] && g->nodes[i].kind != MZN_INPUT) {
			was[i] = xasprintf("was %s(%s)", nd[i].op ? nd[i].op : "?", nd[i].args ? nd[i].args : "");
			out[m] = (struct db_node){nd[i].name, "input", NULL, was[i], nd[i].dtype, nd[i].shape, NULL, 0, 0, NULL};
			const char *eq = strstr(s, " = ");
			int pre = eq && eq < s + len ? (int)(eq - s) : len;
			sb_printf(listing, "%.*s = input %s\n", pre, s, was[i]);
		} else {
			sb_printf(listing, "%.*s\n", len, s);
		}
		m++;
	}
	for (int i = 0, k = 0; i < g->n; i++)
		if (ro->out[i])
			sb_printf(ret, "%s%s", k++ ? ", " : "", g->nodes[i].name);
	sb_printf(listing, "  return (%s%s)\n", sb_str(ret), strchr(sb_str(ret), ',') ? "" : ",");
	out[m++] = (struct db_node){"output", "output", NULL, sb_str(ret), NULL, NULL, NULL, 0, 0, NULL};
	*nout = m;
}

int minify_graph_log(struct db_writer *w, const char *db, long pid, const struct minify_graph *g, const bool *keep,
		     const char *backend, const char *signature, char **err)
{
	*err = NULL;
	struct dbq *q = dbq_open(db, err);
	if (!q)
		return -1;
	int rc = -1, ngs = 0, nnd = 0, captured = -1;
	struct dbq_compile c = {0};
	struct dbq_graph *gs = NULL;
	struct dbq_node *nd = NULL;
	struct roles ro = {0};
	int64_t run = dbq_find_run(q, 0, pid, "tjit-minify child");
	if (!run || dbq_compile_get(q, run, g->label, &c, err) < 0 || dbq_graphs_of(q, c.id, &gs, &ngs, err) < 0)
		goto cleanup;
	for (int i = 0; i < ngs; i++)
		if (strcmp(gs[i].stage, "captured") == 0)
			captured = i;
	if (captured < 0 || dbq_nodes(q, gs[captured].id, &nd, &nnd, err) < 0)
		goto cleanup;
	if (nnd != g->n + 1) { /* the graph's nodes and its output, as loaded */
		*err = xasprintf("graph %s changed in the candidates' log", g->label);
		goto cleanup;
	}
	struct db_node *orig = xcalloc((size_t)nnd, sizeof *orig), *mini = xcalloc((size_t)nnd, sizeof *mini);
	for (int i = 0; i < nnd; i++)
		orig[i] = (struct db_node){nd[i].name, nd[i].kind, nd[i].op, nd[i].args, nd[i].dtype, nd[i].shape,
					   nd[i].file, nd[i].line, nd[i].col, nd[i].user_stack};
	char **was = xcalloc((size_t)nnd, sizeof *was);
	struct strbuf listing = STRBUF_INIT, ret = STRBUF_INIT;
	int nmini = 0;
	roles_of(g, keep, &ro);
	minimized_rows(g, &ro, &gs[captured], nd, mini, &nmini, was, &listing, &ret);
	struct db_graph graphs[2] = {
		{"captured", gs[captured].name, (int)gs[captured].op_count, gs[captured].listing, nnd, orig, 0, NULL},
		{"minified", gs[captured].name, minify_graph_kept(g, keep), sb_str(&listing), nmini, mini, 0, NULL},
	};
	int64_t frame = db_log_frame(w, &(struct db_frame){c.frame_index, c.function, c.file, c.line, c.resume_pc,
							  c.resume_line});
	db_log_compile(w,
		       &(struct db_compile){.frame_id = frame, .compile_id = c.label, .compile_index = c.compile_index,
					    .reason = c.reason, .backend = backend, .dynamic = c.dynamic,
					    .outcome = "error", .op_count = (int)c.op_count, .error = signature,
					    .ngraphs = 2, .graphs = graphs},
		       NULL);
	for (int i = 0; i < nnd; i++)
		free(was[i]);
	free(was);
	free(orig);
	free(mini);
	sb_release(&listing);
	sb_release(&ret);
	rc = 0;
cleanup:
	if (rc < 0 && !*err)
		*err = xasprintf("no graph %s in the candidates' log", g->label);
	roles_release(&ro);
	dbq_nodes_free(nd, nnd);
	dbq_graphs_free(gs, ngs);
	if (c.label)
		dbq_compile_release(&c);
	dbq_close(q);
	return rc;
}
