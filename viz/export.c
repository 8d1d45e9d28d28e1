/* export.c - the rows of a graph or a run from the database, through a
 * view, out in a format: viz.h's entry points. */
#include "viz_impl.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

static int bad_format(const char *format, char **err)
{
	if (viz_format_known(format))
		return 0;
	if (err)
		*err = viz_err("unknown format '%s': expected " VIZ_FORMATS, format ? format : "");
	return -1;
}

/* the kernels of graph graph_id, moved to the front of k: how many, or -1 */
static int kernels_of(struct dbq *q, const struct dbq_graph *gr, struct dbq_kernel **k, int *nk, char **err)
{
	if (dbq_kernels(q, gr->compile_id, k, nk, err) < 0)
		return -1;
	int m = 0;
	for (int i = 0; i < *nk; i++)
		if ((*k)[i].graph_id == gr->id) {
			struct dbq_kernel t = (*k)[m];
			(*k)[m++] = (*k)[i];
			(*k)[i] = t;
		}
	return m;
}

/* per node of nodes[0, n), whether graph marks (what the minifier kept)
 * has an op of that name (malloc'd), or NULL with *err */
static bool *culprit_of(struct dbq *q, int64_t marks, const struct dbq_node *nodes, int n, char **err)
{
	struct dbq_node *m = NULL;
	int nm = 0;
	if (dbq_nodes(q, marks, &m, &nm, err) < 0)
		return NULL;
	bool *c = xcalloc((size_t)n + 1, sizeof *c);
	for (int i = 0; i < n; i++)
		for (int k = 0; k < nm && !c[i]; k++)
			c[i] = strcmp(m[k].kind, "op") == 0 && strcmp(m[k].name, nodes[i].name) == 0;
	dbq_nodes_free(m, nm);
	return c;
}

/* graph graph_id out in format; with_kernels, a cluster per kernel;
 * marks > 0, the ops of that graph's names marked as the culprit */
static int export_graph(struct dbq *q, int64_t graph_id, const char *format, const char *path, bool force,
			int max_nodes, bool with_kernels, int64_t marks, char **err)
{
	if (bad_format(format, err) < 0)
		return -1;
	struct dbq_graph gr;
	if (dbq_graph_get(q, graph_id, &gr, err) < 0)
		return -1;
	struct dbq_node *nodes = NULL;
	int n = 0;
	struct dbq_kernel *kernels = NULL;
	int nk = 0, mine = 0;
	bool *culprit = NULL;
	if (dbq_nodes(q, graph_id, &nodes, &n, err) < 0 ||
	    (with_kernels && (mine = kernels_of(q, &gr, &kernels, &nk, err)) < 0) ||
	    (marks > 0 && !(culprit = culprit_of(q, marks, nodes, n, err)))) {
		dbq_kernels_free(kernels, nk);
		dbq_nodes_free(nodes, n);
		dbq_graph_release(&gr);
		return -1;
	}
	/* the def line and the source text are extras: the graph is drawn without them */
	struct dbq_compile c;
	bool have_compile = dbq_compile_get(q, gr.run_id, gr.label, &c, NULL) == 0;
	struct dbq_run run;
	bool have_run = dbq_run_get(q, gr.run_id, &run, NULL) == 0;
	struct viz_graph_rows rows = {
		.graph = &gr,
		.nodes = nodes,
		.nnodes = n,
		.def_file = have_compile ? c.file : NULL,
		.def_line = have_compile ? c.line : 0,
		.program = have_run ? run.program : NULL,
		.source_text = have_run ? run.source_text : NULL,
		.kernels = kernels,
		.nkernels = mine,
		.culprit = culprit,
	};
	Agraph_t *g = viz_graph_view(&rows, max_nodes);
	int rc = viz_output(g, format, path, force, err);
	agclose(g);
	free(culprit);
	if (have_run)
		dbq_run_release(&run);
	if (have_compile)
		dbq_compile_release(&c);
	dbq_kernels_free(kernels, nk);
	dbq_nodes_free(nodes, n);
	dbq_graph_release(&gr);
	return rc;
}

int viz_export_graph(struct dbq *q, int64_t graph_id, const char *format, const char *path, bool force,
		     int max_nodes, char **err)
{
	return export_graph(q, graph_id, format, path, force, max_nodes, false, 0, err);
}

int viz_export_kernels(struct dbq *q, int64_t graph_id, const char *format, const char *path, bool force,
		       int max_nodes, char **err)
{
	return export_graph(q, graph_id, format, path, force, max_nodes, true, 0, err);
}

/* ---- a minifier session ---- */

int viz_minify_graphs(struct dbq *q, int64_t session_id, int64_t *session, int64_t *original, int64_t *minified,
		      char **err)
{
	struct dbq_session *s = NULL;
	struct dbq_compile *c = NULL;
	struct dbq_graph *g = NULL;
	int ns = 0, nc = 0, ng = 0, rc = -1;
	*original = *minified = 0;
	if (dbq_sessions_page(q, 0, session_id > 0 ? session_id + 1 : INT64_MAX, -1, 1, &s, &ns, err) < 0)
		return -1;
	if (ns == 0 || (session_id > 0 && s[0].id != session_id)) {
		if (err && session_id > 0)
			*err = viz_err("no minifier session %lld in %s", (long long)session_id, dbq_path(q));
		else if (err)
			*err = viz_err("no minifier session in %s (tjit-minify logs them)", dbq_path(q));
		goto cleanup;
	}
	*session = s[0].id;
	/* the minifier's run logs one compile: the failing graph and its minimized form */
	if (dbq_compiles(q, s[0].run_id, 0, 1, &c, &nc, err) < 0 || (nc && dbq_graphs_of(q, c[0].id, &g, &ng, err) < 0))
		goto cleanup;
	for (int i = 0; i < ng; i++) {
		if (strcmp(g[i].stage, "captured") == 0)
			*original = g[i].id;
		else if (strcmp(g[i].stage, "minified") == 0)
			*minified = g[i].id;
	}
	if (!*original || !*minified) {
		if (err)
			*err = viz_err("minifier session %lld has no minimized graph (its failure: %s, result: %s)",
				       (long long)s[0].id, s[0].failure, s[0].result ? s[0].result : "none yet");
		goto cleanup;
	}
	rc = 0;
cleanup:
	dbq_graphs_free(g, ng);
	dbq_compiles_free(c, nc);
	dbq_sessions_free(s, ns);
	return rc;
}

int viz_export_minify(struct dbq *q, int64_t session_id, bool minimized, const char *format, const char *path,
		      bool force, int max_nodes, char **err)
{
	int64_t session, original, minified;
	if (bad_format(format, err) < 0 || viz_minify_graphs(q, session_id, &session, &original, &minified, err) < 0)
		return -1;
	return export_graph(q, minimized ? minified : original, format, path, force, max_nodes, false, minified, err);
}

/* ---- the run view's rows ---- */

struct why_ctx {
	const struct dbq_compile *compiles;
	int shown;
	char **why;           /* per compile: the failure of the previous entry */
	char **first;         /* per compile: its first failure */
};

static int compile_index_of(const struct dbq_compile *c, int n, int64_t id)
{
	int lo = 0, hi = n;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (c[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && c[lo].id == id ? lo : -1;
}

static char *failure_text(const struct dbq_failure *f)
{
	struct strbuf b = STRBUF_INIT;
	sb_printf(&b, "%s (got %s)", f->guard_text ? f->guard_text : "?", f->value_seen ? f->value_seen : "?");
	return b.buf;
}

static int take_failure(void *ctx, const struct dbq_failure *f)
{
	struct why_ctx *w = ctx;
	int i = compile_index_of(w->compiles, w->shown, f->compile_id);
	if (i < 0)
		return 0;
	const struct dbq_compile *c = &w->compiles[i];
	if (!w->first[i])
		w->first[i] = failure_text(f);
	/* the entry just before: F/N-1 */
	struct strbuf prev = STRBUF_INIT;
	sb_printf(&prev, "%d/%d", c->frame_index, c->compile_index - 1);
	if (!w->why[i] && f->failed_label && strcmp(f->failed_label, prev.buf) == 0)
		w->why[i] = failure_text(f);
	sb_release(&prev);
	return 0;
}

int viz_export_run(struct dbq *q, int64_t run_id, const char *format, const char *path, bool force, int max_nodes,
		   char **err)
{
	if (bad_format(format, err) < 0)
		return -1;
	struct dbq_run run;
	if (dbq_run_get(q, run_id, &run, err) < 0)
		return -1;
	int rc = -1;
	struct dbq_frame *frames = NULL;
	struct dbq_compile *compiles = NULL;
	int nframes = 0, ncompiles = 0, shown = 0;
	struct dbq_graph **graphs = NULL;
	int *ngraphs = NULL;
	struct viz_compile_more *more = NULL;
	struct why_ctx w = {0};
	if (dbq_frames(q, run_id, &frames, &nframes, err) < 0 ||
	    dbq_compiles(q, run_id, 0, 0, &compiles, &ncompiles, err) < 0)
		goto cleanup;
	shown = max_nodes > 0 && ncompiles > max_nodes ? max_nodes : ncompiles;
	size_t cap = (size_t)(shown > 0 ? shown : 1);
	graphs = xcalloc(cap, sizeof *graphs);
	ngraphs = xcalloc(cap, sizeof *ngraphs);
	more = xcalloc(cap, sizeof *more);
	w = (struct why_ctx){compiles, shown, xcalloc(cap, sizeof(char *)), xcalloc(cap, sizeof(char *))};
	for (int i = 0; i < shown; i++) {
		if (dbq_graphs_of(q, compiles[i].id, &graphs[i], &ngraphs[i], err) < 0)
			goto cleanup;
		for (int k = 0; k < ngraphs[i] && !more[i].graph; k++)
			if (strcmp(graphs[i][k].stage, "captured") == 0)
				more[i].graph = &graphs[i][k];
	}
	if (dbq_each_failure(q, run_id, take_failure, &w, err) < 0)
		goto cleanup;
	for (int i = 0; i < shown; i++)
		more[i].why = w.why[i] ? w.why[i] : w.first[i];
	struct viz_run_rows rows = {
		.run = &run,
		.frames = frames,
		.nframes = nframes,
		.compiles = compiles,
		.ncompiles = ncompiles,
		.more = more,
	};
	Agraph_t *g = viz_run_view(&rows, max_nodes);
	rc = viz_output(g, format, path, force, err);
	agclose(g);
cleanup:
	for (int i = 0; i < shown; i++) {
		if (graphs && graphs[i])
			dbq_graphs_free(graphs[i], ngraphs[i]);
		if (w.why)
			free(w.why[i]);
		if (w.first)
			free(w.first[i]);
	}
	free(w.why);
	free(w.first);
	free(more);
	free(ngraphs);
	free(graphs);
	dbq_compiles_free(compiles, ncompiles);
	dbq_frames_free(frames, nframes);
	dbq_run_release(&run);
	return rc;
}

int viz_compile_graph(struct dbq *q, int64_t run_id, const char *label, const char *stage, int64_t *graph_id,
		      char **err)
{
	if (!stage)
		stage = "captured";
	struct dbq_compile c;
	if (dbq_compile_get(q, run_id, label, &c, err) < 0)
		return -1;
	struct dbq_graph *g = NULL;
	int n = 0;
	int rc = -1;
	struct dbq_kernel *k = NULL;
	int nk = 0;
	if (dbq_graphs_of(q, c.id, &g, &n, err) < 0)
		goto cleanup;
	/* inductor's kernels compute the forward graph, or the captured one;
	 * inductor_backward's the backward graph */
	bool forward = strcmp(stage, "inductor") == 0, backward = strcmp(stage, "inductor_backward") == 0;
	if ((forward || backward) && dbq_kernels(q, c.id, &k, &nk, err) < 0)
		goto cleanup;
	const char *want[2] = {stage, NULL};
	if (forward && nk) {
		want[0] = "aot_forward";
		want[1] = "captured";
	} else if (backward && nk) {
		want[0] = "aot_backward";
	}
	for (int w = 0; w < 2 && want[w]; w++)
		for (int i = 0; i < n; i++)
			if (strcmp(g[i].stage, want[w]) == 0) {
				*graph_id = g[i].id;
				rc = 0;
				goto cleanup;
			}
	if (err) {
		struct strbuf have = STRBUF_INIT;
		for (int i = 0; i < n; i++)
			sb_printf(&have, "%s%s", i ? ", " : "", g[i].stage);
		if (n)
			*err = viz_err("compile %s of run %lld has no %s graph (it has: %s)", c.label, (long long)run_id,
				       stage, sb_str(&have));
		else
			*err = viz_err("compile %s of run %lld has no graph (its outcome: %s)", c.label,
				       (long long)run_id, c.outcome);
		sb_release(&have);
	}
cleanup:
	dbq_kernels_free(k, nk);
	dbq_graphs_free(g, n);
	dbq_compile_release(&c);
	return rc;
}
