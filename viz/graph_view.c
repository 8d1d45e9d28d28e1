/* graph_view.c - one graph of the compile log as a cgraph graph
 * (viz_impl.h, doc/dot.md).
 *
 * A node per graph node, in graph order, named as the graph names it
 * (a, abs_1, ...): inputs with their source (L['a']), ops as the listing
 * prints them (abs_1: f32[10] = abs(a)) over their source line, the
 * output as "return (...)". The three extra nodes have names that no tj
 * identifier can take: "return", "graph-break", "not-shown".
 */
#include "viz_impl.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

/* LANGUAGE.md section 7's short dtype names, as core/trace/graph.c prints them */
static const char *dtype_short(const char *dtype)
{
	static const char *const names[][2] = {
		{"float32", "f32"}, {"float64", "f64"}, {"int64", "i64"}, {"bool", "b8"},
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(dtype, names[i][0]) == 0)
			return names[i][1];
	return dtype;
}

/* "f32[2, 3]"; nothing for a value that is not a tensor */
static void put_type(struct strbuf *b, const struct dbq_node *n)
{
	if (n->dtype && n->shape) {
		sb_puts(b, dtype_short(n->dtype));
		sb_puts(b, n->shape);
	}
}

static bool is_op(const struct dbq_node *n)
{
	return strcmp(n->kind, "input") != 0 && strcmp(n->kind, "output") != 0;
}

/* the innermost function of a user stack ("f.tj:3 in f\nf.tj:7 in helper"
 * -> "helper"): the function an inlined node came from */
static char *innermost_function(const char *stack)
{
	const char *last = strrchr(stack, '\n');
	last = last ? last + 1 : stack;
	const char *in = strstr(last, " in ");
	if (!in || !in[4])
		return NULL;
	return xstrdup(in + 4);
}

#define ARGS_MAX 48 /* characters of an op's arguments in its label */

static void node_label(struct strbuf *b, const struct dbq_node *n, const struct viz_graph_rows *r)
{
	viz_label_text(b, n->name, 80);
	if (n->dtype && n->shape) {
		sb_puts(b, ": ");
		put_type(b, n);
	}
	if (strcmp(n->kind, "input") == 0) {
		sb_puts(b, VIZ_NEWLINE "input ");
		viz_label_text(b, n->args ? n->args : "?", ARGS_MAX);
		return;
	}
	sb_puts(b, " = ");
	viz_label_text(b, n->op ? n->op : n->kind, 80);
	sb_puts(b, "(");
	viz_label_text(b, n->args ? n->args : "", ARGS_MAX);
	sb_puts(b, ")");
	if (n->file) {
		sb_puts(b, VIZ_NEWLINE);
		viz_place(b, n->file, n->line, r->program, r->source_text);
	}
}

/* the defaults that every node and edge starts from */
static void declare(Agraph_t *g)
{
	agattr(g, AGRAPH, "label", "");
	agattr(g, AGRAPH, "labelloc", "t");
	agattr(g, AGRAPH, "style", "");
	agattr(g, AGRAPH, "color", "");
	agattr(g, AGNODE, "shape", "box");
	agattr(g, AGNODE, "label", "\\N");
	agattr(g, AGNODE, "style", "");
	agattr(g, AGNODE, "color", "");
	agattr(g, AGNODE, "fillcolor", "");
	agattr(g, AGNODE, "peripheries", "");
	agattr(g, AGEDGE, "label", "");
	agattr(g, AGEDGE, "style", "");
}

/* the cluster of an inlined function, made on first use */
static Agraph_t *cluster_of(Agraph_t *g, const char *function)
{
	struct strbuf b = STRBUF_INIT;
	sb_printf(&b, "cluster_%s", function);
	Agraph_t *c = agsubg(g, b.buf, 0);
	if (!c) {
		c = agsubg(g, b.buf, 1);
		sb_reset(&b);
		viz_label_text(&b, function, 80);
		sb_puts(&b, " (inlined)");
		viz_set(c, "label", b.buf);
		viz_set(c, "style", "dashed");
	}
	sb_release(&b);
	return c;
}

/* the cluster of inductor kernel k of r, made on first use: its name,
 * kind, and whether the kernel cache gave it. Its name cannot be an
 * inlined function's (a tj identifier has no '-'). */
static Agraph_t *kernel_cluster(Agraph_t *g, const struct viz_graph_rows *r, int k)
{
	const struct dbq_kernel *kr = &r->kernels[k];
	struct strbuf b = STRBUF_INIT;
	sb_printf(&b, "cluster_kernel-%d", k);
	Agraph_t *c = agsubg(g, b.buf, 0);
	if (!c) {
		c = agsubg(g, b.buf, 1);
		sb_reset(&b);
		viz_label_text(&b, kr->name, 40);
		sb_puts(&b, " (");
		viz_label_text(&b, kr->kind, 20);
		sb_puts(&b, kr->cache_hit ? ", cached)" : ")");
		viz_set(c, "label", b.buf);
		viz_set(c, "style", "filled");
		viz_set(c, "color", "#c08a30");
		viz_set(c, "fillcolor", "#fdf3e1");
	}
	sb_release(&b);
	return c;
}

/* per node of r, the kernel whose fused_nodes name it ("mul, add, tanh"),
 * the first when several do; -1: none */
static int *kernel_of_nodes(const struct viz_graph_rows *r, const struct viz_names *ix)
{
	int n = r->nnodes;
	int *of = xcalloc((size_t)(n > 0 ? n : 1), sizeof *of);
	for (int i = 0; i < n; i++)
		of[i] = -1;
	for (int k = 0; k < r->nkernels; k++) {
		const char *p = r->kernels[k].fused_nodes ? r->kernels[k].fused_nodes : "";
		while (*p) {
			size_t len = strcspn(p, ", ");
			int i = len ? viz_names_find(ix, p, len) : -1;
			if (i >= 0 && of[i] < 0)
				of[i] = k;
			p += len;
			p += strspn(p, ", ");
		}
	}
	return of;
}

static void edge(Agraph_t *g, Agnode_t *t, Agnode_t *h, const char *label, const char *style)
{
	Agedge_t *e = agedge(g, t, h, NULL, 1);
	if (label && *label)
		viz_set(e, "label", label);
	if (style)
		viz_set(e, "style", style);
}

Agraph_t *viz_graph_view(const struct viz_graph_rows *r, int max_nodes)
{
	const struct dbq_graph *gr = r->graph;
	struct strbuf b = STRBUF_INIT;
	sb_printf(&b, "graph %lld", (long long)gr->id);
	Agraph_t *g = agopen(b.buf, Agdirected, NULL);
	declare(g);

	/* the header of the listing: graph 0/0 toy_example (toy.tj:1) · 3 ops */
	sb_reset(&b);
	sb_puts(&b, "graph ");
	viz_label_text(&b, gr->label ? gr->label : "?", 40);
	sb_puts(&b, " ");
	viz_label_text(&b, gr->name ? gr->name : "?", 80);
	if (r->def_file) {
		sb_puts(&b, " (");
		viz_label_text(&b, r->def_file, 200);
		sb_printf(&b, ":%d)", r->def_line);
	}
	if (gr->stage && strcmp(gr->stage, "captured") != 0)
		sb_printf(&b, " [%s]", gr->stage);
	sb_printf(&b, " \xc2\xb7 %lld op%s", (long long)gr->op_count, gr->op_count == 1 ? "" : "s");
	if (r->nkernels)
		sb_printf(&b, " \xc2\xb7 %d kernel%s", r->nkernels, r->nkernels == 1 ? "" : "s");
	for (int i = 0, k = 0; r->culprit && i < r->nnodes; i++)
		if (r->culprit[i] && is_op(&r->nodes[i])) {
			sb_puts(&b, k++ ? ", " : " \xc2\xb7 culprit: ");
			viz_label_text(&b, r->nodes[i].name, 80);
		}
	viz_set(g, "label", b.buf);

	int n = r->nnodes;
	const char **names = xcalloc((size_t)(n > 0 ? n : 1), sizeof *names);
	for (int i = 0; i < n; i++)
		names[i] = r->nodes[i].name;
	struct viz_names *ix = viz_names_new(names, n);
	Agnode_t **made = xcalloc((size_t)(n > 0 ? n : 1), sizeof *made);
	int *refs = xcalloc((size_t)(n > 0 ? n : 1), sizeof *refs);
	int *kernel_of = r->nkernels ? kernel_of_nodes(r, ix) : NULL;
	int cut = 0;
	Agnode_t *ret = NULL;

	/* max_nodes: the culprit's ops always stay, the first other ops in
	 * graph order fill what is left of the N */
	int others = max_nodes;
	for (int i = 0; max_nodes > 0 && r->culprit && i < n; i++)
		others -= r->culprit[i] && is_op(&r->nodes[i]);
	for (int i = 0; i < n; i++) {
		const struct dbq_node *nd = &r->nodes[i];
		bool output = strcmp(nd->kind, "output") == 0;
		if (is_op(nd) && max_nodes > 0 && !(r->culprit && r->culprit[i]) && others-- <= 0) {
			cut++;
			continue;
		}
		Agraph_t *home = g;
		if (kernel_of && !output && kernel_of[i] >= 0)
			home = kernel_cluster(g, r, kernel_of[i]);
		else if (nd->user_stack && !output) {
			char *fn = innermost_function(nd->user_stack);
			if (fn)
				home = cluster_of(g, fn);
			free(fn);
		}
		Agnode_t *v = agnode(home, output ? "return" : nd->name, 1);
		made[i] = v;
		sb_reset(&b);
		if (output) {
			ret = v;
			sb_puts(&b, "output" VIZ_NEWLINE "return (");
			viz_label_text(&b, nd->args ? nd->args : "", ARGS_MAX);
			/* a one-element tuple, as the listing prints it */
			sb_puts(&b, nd->args && *nd->args && !strchr(nd->args, ',') ? ",)" : ")");
			viz_set(v, "shape", "house");
			viz_set(v, "style", "filled");
			viz_set(v, "fillcolor", "#d9f2d9");
		} else {
			node_label(&b, nd, r);
			if (!is_op(nd)) {
				viz_set(v, "shape", "invhouse");
				viz_set(v, "style", "filled");
				viz_set(v, "fillcolor", "#dde8f8");
			} else if (r->culprit && r->culprit[i]) {
				viz_set(v, "style", "filled,bold");
				viz_set(v, "color", "red");
				viz_set(v, "fillcolor", "#fde0dc");
			}
		}
		viz_set(v, "label", b.buf);

		int k = viz_arg_refs(ix, nd->args, output ? n : i, refs, n);
		if (!is_op(nd) && !output)
			k = 0; /* an input's args are its source, not nodes */
		for (int j = 0; j < k; j++) {
			Agnode_t *from = made[refs[j]];
			if (!from)
				continue; /* cut by max_nodes */
			if (output)
				viz_set(from, "peripheries", "2"); /* a value the graph returns */
			sb_reset(&b);
			put_type(&b, &r->nodes[refs[j]]);
			edge(g, from, v, b.buf, NULL);
		}
	}

	if (cut) {
		Agnode_t *note = agnode(g, "not-shown", 1);
		sb_reset(&b);
		sb_printf(&b, "\xe2\x80\xa6 %d more op%s not shown (--max-nodes %d)", cut, cut == 1 ? "" : "s",
			  max_nodes);
		viz_set(note, "label", b.buf);
		viz_set(note, "shape", "note");
		viz_set(note, "style", "dashed");
		if (ret)
			edge(g, note, ret, NULL, "dashed");
	}

	if (gr->break_code) {
		Agnode_t *brk = agnode(g, "graph-break", 1);
		sb_reset(&b);
		viz_label_text(&b, gr->break_code, 20);
		sb_puts(&b, " graph break: ");
		viz_label_text(&b, gr->break_message ? gr->break_message : "?", 80);
		if (gr->break_file) {
			sb_puts(&b, VIZ_NEWLINE);
			viz_place(&b, gr->break_file, gr->break_line, r->program, r->source_text);
		}
		viz_set(brk, "label", b.buf);
		viz_set(brk, "shape", "octagon");
		viz_set(brk, "color", "red");
		viz_set(brk, "style", "filled");
		viz_set(brk, "fillcolor", "#fde0dc");
		if (ret)
			edge(g, ret, brk, NULL, "dashed"); /* the graph returns, then the breaking instruction runs */
	}

	sb_release(&b);
	free(kernel_of);
	free(refs);
	free(made);
	free(names);
	viz_names_free(ix);
	return g;
}
