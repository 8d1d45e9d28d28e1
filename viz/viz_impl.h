/* viz_impl.h - the insides of viz/ shared by its files and its tests
 * (tests/unit/check_viz.c): text helpers, the arguments parser, the two
 * views built from plain rows (no database: the tests hand them rows),
 * and the output.
 *
 * The stages of an export, a file each:
 *   rows from the database     viz/export.c
 *   args -> edges              viz/args.c
 *   rows -> cgraph graph       viz/graph_view.c, viz/run_view.c
 *   graph -> DOT, SVG, ...     viz/render.c
 *
 * viz/ serves the tools only, so it dies on an allocation failure as they
 * do (core/base/util.h); cgraph itself gives no other choice.
 */
#ifndef TJ_VIZ_IMPL_H
#define TJ_VIZ_IMPL_H

#include <cgraph.h>
#include <stdarg.h>
#include <stddef.h>

#include "query.h"
#include "strbuf.h"
#include "viz.h"

/* ---- text (viz/text.c): labels are built in a struct strbuf ---- */

/* s as the text of a label: shown as sb_add_shown shows it (a control
 * character as \\x1b, a line break as a space), a backslash doubled (labels are Graphviz
 * escStrings, in which \n, \l, \N ... mean something), at most max
 * characters (UTF-8 aware), "…" when cut */
void viz_label_text(struct strbuf *b, const char *s, size_t max);
/* the line break of a label */
#define VIZ_NEWLINE "\\n"

/* Line line (1-based) of text without its indentation and trailing
 * spaces: *len bytes at the result, or NULL when there is no such line. */
const char *viz_source_line(const char *text, int line, size_t *len);

/* "file:line" and, when file is the program whose text we have, two
 * spaces and the source line: the second line of a node's label */
void viz_place(struct strbuf *b, const char *file, int line, const char *program, const char *source_text);

/* agsafeset without the casts (cgraph takes char *) */
void viz_set(void *obj, const char *attr, const char *value);
char *viz_err(const char *fmt, ...) __attribute__((format(printf, 1, 2))); /* a malloc'd message */

/* ---- arguments -> edges (viz/args.c) ---- */

/* The node names of a graph, sorted for lookups. */
struct viz_names;
struct viz_names *viz_names_new(const char *const *names, int n);
void viz_names_free(struct viz_names *ix);
/* The index of the node called s[0..len), or -1 */
int viz_names_find(const struct viz_names *ix, const char *s, size_t len);

/* The nodes that an argument text ("abs_1, 1", "[a, b], dim=1",
 * "x, 'add_1'") names: the identifiers in it that are names of nodes
 * before node `before` (graph order), each once, in order of first
 * mention; keyword names (dim=), string literals and numbers (1e-05) are
 * skipped. Writes at most max indexes to out; returns how many. */
int viz_arg_refs(const struct viz_names *ix, const char *args, int before, int *out, int max);

/* ---- the graph view (viz/graph_view.c) ---- */

struct viz_graph_rows {
	const struct dbq_graph *graph;
	const struct dbq_node *nodes;
	int nnodes;
	const char *def_file;       /* where the function is defined, or NULL */
	int def_line;
	const char *program;        /* the run's program, whose text we have */
	const char *source_text;    /* NULL: not stored */
	const struct dbq_kernel *kernels; /* inductor's kernels of this graph: a cluster each */
	int nkernels;
	const bool *culprit;        /* per node: what the minifier kept (marked red); NULL: none */
};
/* The graph; agclose it. max_nodes as viz_export_graph's (the culprit's
 * ops always kept, viz_export_minify). With kernels,
 * the nodes a kernel computes (its fused_nodes) are in its cluster,
 * labeled with its name and kind; the others (inputs, extern calls such as
 * matmul, the output) are outside. */
Agraph_t *viz_graph_view(const struct viz_graph_rows *r, int max_nodes);

/* ---- the run view (viz/run_view.c) ---- */

/* what a compile of the run view shows besides its row */
struct viz_compile_more {
	const struct dbq_graph *graph; /* its captured graph; NULL: none */
	const char *why;               /* a recompile's failing guard: "L['n'] == 0 (got 1)"; NULL: none */
};
struct viz_run_rows {
	const struct dbq_run *run;
	const struct dbq_frame *frames;
	int nframes;
	const struct dbq_compile *compiles; /* all of the run's, in id order */
	int ncompiles;
	const struct viz_compile_more *more; /* one per compile shown (the first min(ncompiles, max_nodes)) */
};
Agraph_t *viz_run_view(const struct viz_run_rows *r, int max_nodes);

/* ---- output (viz/render.c) ---- */

/* g in format (viz_format_known) to path (NULL: stdout); a path that
 * holds something else than a drawing only when force (viz.h). */
int viz_output(Agraph_t *g, const char *format, const char *path, bool force, char **err);
/* g in format into memory: *out (malloc'd) of *len bytes. */
int viz_render(Agraph_t *g, const char *format, char **out, size_t *len, char **err);

#endif
