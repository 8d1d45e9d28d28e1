/* viz.h - graphs and runs of the compile log as Graphviz drawings.
 *
 * What the database holds (db/query.h) becomes a Graphviz graph built
 * through cgraph's API, written as DOT (agwrite) or laid out with dot and
 * rendered through gvc (SVG, PNG, PDF). tjit-dot is a command line over
 * these functions; tjit-tui exports the selected graph with
 * viz_export_graph. doc/dot.md shows what each view draws.
 *
 * This header does not include Graphviz's: the tools that call it need
 * only the link flags (libtjviz.a, CGRAPH_LIBS, GVC_LIBS).
 *
 * Errors as in db/query.h: -1 with *err a malloc'd message (no "tool: "
 * prefix, lowercase, no period), e.g. "no graph 12 in x.db" or "cannot
 * write 'out/g.svg': No such file or directory". err may be NULL.
 */
#ifndef TJ_VIZ_H
#define TJ_VIZ_H

#include <stdbool.h>
#include <stdint.h>

struct dbq;

/* The output formats: "dot" (the DOT text, no layout), "svg", "png",
 * "pdf" (laid out by dot, rendered by gvc). */
bool viz_format_known(const char *format);
#define VIZ_FORMATS "dot, svg, png or pdf"
/* png and pdf are binary: the tools refuse to write them to a terminal */
bool viz_format_binary(const char *format);

/* Graph graph_id (graphs.id) in format to path (NULL: stdout): a node per
 * graph node with its type and source line, edges with tensor types, a
 * cluster per inlined function, the graph break it ended in. max_nodes >
 * 0 keeps the first max_nodes ops (graph order) and says how many more
 * there were; 0: no limit. 0, or -1 with *err. Nothing is written on an
 * error, and path is left as it was.
 *
 * An existing path is replaced only by force, or when it is empty, not a
 * regular file, or a drawing (DOT that starts with "digraph", an SVG
 * that Graphviz generated, a PNG, a PDF): else -1 with "not overwriting
 * 'x.tj': it is not a drawing (--force overwrites it)". */
int viz_export_graph(struct dbq *q, int64_t graph_id, const char *format, const char *path, bool force,
		     int max_nodes, char **err);

/* The same drawing with a cluster per inductor kernel of the graph (the
 * nodes it fused, labeled with its name and kind, and "cached" when the
 * kernel cache gave it); nodes no kernel computes stay outside. */
int viz_export_kernels(struct dbq *q, int64_t graph_id, const char *format, const char *path, bool force,
		       int max_nodes, char **err);

/* Run run_id as a chain: a cluster per frame, a node per compile, its
 * graph and its break, the break linked to the frame that resumes after
 * it, recompiles as side branches labelled with the failing guard.
 * max_nodes > 0 keeps the first max_nodes compiles (id order). */
int viz_export_run(struct dbq *q, int64_t run_id, const char *format, const char *path, bool force, int max_nodes,
		   char **err);

/* A tjit-minify session (session_id; 0: the latest): the graph that
 * failed, as captured, with the ops the minifier kept (the culprit)
 * marked red and named in its title; or, minimized, the graph of those
 * ops alone (each dropped node they read an input). The minifier logs
 * both as the graphs (stages captured and minified) of one compile of its
 * run (doc/minify.md). max_nodes > 0 keeps the culprit's ops whatever
 * their place, and the first other ops up to max_nodes in all; the note
 * says how many others are not shown. -1 with *err ("no minifier session
 * 4 in x.db", "minifier session 2 has no minimized graph (...)"). */
int viz_export_minify(struct dbq *q, int64_t session_id, bool minimized, const char *format, const char *path,
		      bool force, int max_nodes, char **err);
/* The ids of session_id's (0: the latest) session and its two graphs. */
int viz_minify_graphs(struct dbq *q, int64_t session_id, int64_t *session, int64_t *original, int64_t *minified,
		      char **err);

/* The graph at stage (NULL: "captured") of the compile labelled label
 * ("0/1") in run run_id: 0 with *graph_id, or -1 with *err ("no compile
 * 0/9 in run 3", "compile 0/1 of run 3 has no aot_forward graph (it has:
 * captured)"). Stage "inductor" is the graph inductor's kernels compute
 * (for viz_export_kernels): the compile's aot_forward graph, or its
 * captured one when it has none; a compile without kernels has none. */
int viz_compile_graph(struct dbq *q, int64_t run_id, const char *label, const char *stage, int64_t *graph_id,
		      char **err);

#endif
