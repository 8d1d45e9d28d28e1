/* run_view.c - a run of the compile log as a chain of frames, compiles,
 * graphs and breaks (viz_impl.h, doc/dot.md).
 *
 * A cluster per frame (a function's entry or a resume point), its
 * compiles side by side in one rank: the first compile, then each
 * recompile to its right, on an edge labelled with the guard of the
 * previous entry that failed. Below a compile hang its captured graph
 * and the graph break it ended in; a break points at the frame that
 * resumes after it.
 *
 * Which resume frame follows which break is not logged: the tracer
 * resumes at pc + 1, or at either target of a data-dependent branch. A
 * resume frame is first compiled right after the break that made it, so
 * it is matched with the latest graph break before its first compile in
 * a frame of the same function; every break at that place then points
 * at it.
 */
#include "viz_impl.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

struct frame_info {
	const struct dbq_frame *f;
	int fn;               /* frames of one function (name and file) share this */
	int first;            /* its first compile (index into compiles), -1: none */
	bool shown;
	Agraph_t *cluster, *rank;
};

struct compile_info {
	Agnode_t *node;       /* the compile */
	Agnode_t *tail;       /* where its chain goes on: its break, else its graph, else itself */
	int frame;            /* index into frames */
};

static void declare(Agraph_t *g)
{
	agattr(g, AGRAPH, "label", "");
	agattr(g, AGRAPH, "labelloc", "t");
	agattr(g, AGRAPH, "compound", "");
	agattr(g, AGRAPH, "rank", "");
	agattr(g, AGRAPH, "style", "");
	agattr(g, AGRAPH, "color", "");
	agattr(g, AGNODE, "shape", "box");
	agattr(g, AGNODE, "label", "\\N");
	agattr(g, AGNODE, "style", "rounded");
	agattr(g, AGNODE, "color", "");
	agattr(g, AGNODE, "fillcolor", "");
	agattr(g, AGEDGE, "label", "");
	agattr(g, AGEDGE, "style", "");
	agattr(g, AGEDGE, "lhead", "");
}

static int frame_of(const struct frame_info *fi, int nframes, int frame_index)
{
	if (frame_index >= 0 && frame_index < nframes && fi[frame_index].f->frame_index == frame_index)
		return frame_index;
	for (int i = 0; i < nframes; i++)
		if (fi[i].f->frame_index == frame_index)
			return i;
	return -1;
}

static void frame_label(struct strbuf *b, const struct dbq_frame *f)
{
	sb_printf(b, "frame %d \xc2\xb7 ", f->frame_index);
	viz_label_text(b, f->function, 80);
	if (f->resume_pc > 0) {
		sb_puts(b, " resumed at ");
		if (f->resume_line > 0) {
			viz_label_text(b, f->file, 200);
			sb_printf(b, ":%d", f->resume_line);
		} else {
			sb_printf(b, "pc %d", f->resume_pc);
		}
	} else {
		sb_puts(b, " (");
		viz_label_text(b, f->file, 200);
		sb_printf(b, ":%d)", f->line);
	}
	sb_printf(b, VIZ_NEWLINE "%lld call%s \xc2\xb7 %lld cache hit%s", (long long)f->calls, f->calls == 1 ? "" : "s",
		  (long long)f->cache_hits, f->cache_hits == 1 ? "" : "s");
	if (f->eager_calls > 0) {
		sb_printf(b, " \xc2\xb7 %lld ran eagerly", (long long)f->eager_calls);
		if (f->eager_reason)
			sb_printf(b, " (%s)", f->eager_reason);
	}
}

static void compile_label(struct strbuf *b, const struct dbq_compile *c)
{
	viz_label_text(b, c->label, 40);
	sb_puts(b, " ");
	viz_label_text(b, c->reason, 40);
	sb_puts(b, " (");
	viz_label_text(b, c->backend, 60);
	sb_puts(b, ")" VIZ_NEWLINE);
	viz_label_text(b, c->outcome, 40);
	sb_printf(b, " \xc2\xb7 %lld op%s \xc2\xb7 %.2f ms", (long long)c->op_count, c->op_count == 1 ? "" : "s",
		  c->total_ms);
	if (c->error) {
		sb_puts(b, VIZ_NEWLINE);
		viz_label_text(b, c->error, 60);
	}
}

static void edge(Agraph_t *g, Agnode_t *t, Agnode_t *h, const char *label, const char *style)
{
	Agedge_t *e = agedge(g, t, h, NULL, 1);
	if (label && *label)
		viz_set(e, "label", label);
	if (style)
		viz_set(e, "style", style);
}

static bool same_place(const struct dbq_graph *a, const struct dbq_graph *b)
{
	return a->break_file && b->break_file && strcmp(a->break_file, b->break_file) == 0 &&
	       a->break_line == b->break_line && a->break_col == b->break_col;
}

/* the frames, their function ids and first compiles */
static struct frame_info *frames_info(const struct viz_run_rows *r, int shown)
{
	struct frame_info *fi = xcalloc((size_t)(r->nframes > 0 ? r->nframes : 1), sizeof *fi);
	for (int i = 0; i < r->nframes; i++) {
		fi[i].f = &r->frames[i];
		fi[i].first = -1;
		fi[i].fn = i;
		for (int j = 0; j < i; j++)
			if (strcmp(r->frames[j].function, r->frames[i].function) == 0 &&
			    strcmp(r->frames[j].file, r->frames[i].file) == 0) {
				fi[i].fn = fi[j].fn;
				break;
			}
		fi[i].shown = r->frames[i].compiles == 0; /* a frame that only ran eagerly */
	}
	for (int i = 0; i < r->ncompiles; i++) {
		int k = frame_of(fi, r->nframes, r->compiles[i].frame_index);
		if (k < 0)
			continue;
		if (fi[k].first < 0)
			fi[k].first = i;
		if (i < shown)
			fi[k].shown = true;
	}
	return fi;
}

/* breaks -> the frames that resume after them (the database does not
 * record the link: a frame resuming after a break is taken to follow the
 * last break of its function) */
static void link_resumes(Agraph_t *g, const struct viz_run_rows *r, const struct frame_info *fi,
			 const struct compile_info *ci, int shown)
{
	struct strbuf b = STRBUF_INIT;
	int *last_break = xcalloc((size_t)(r->nframes > 0 ? r->nframes : 1), sizeof *last_break);
	for (int i = 0; i < r->nframes; i++)
		last_break[i] = -1;
	int *parent = xcalloc((size_t)(r->nframes > 0 ? r->nframes : 1), sizeof *parent);
	for (int i = 0; i < r->nframes; i++)
		parent[i] = -1;
	for (int i = 0; i < r->ncompiles; i++) {
		int k = frame_of(fi, r->nframes, r->compiles[i].frame_index);
		if (k < 0)
			continue;
		if (fi[k].first == i && fi[k].f->resume_pc > 0)
			parent[k] = last_break[fi[k].fn];
		if (strcmp(r->compiles[i].outcome, "graph_break") == 0)
			last_break[fi[k].fn] = i;
	}
	for (int i = 0; i < shown; i++) {
		if (strcmp(r->compiles[i].outcome, "graph_break") != 0)
			continue;
		for (int k = 0; k < r->nframes; k++) {
			int p = parent[k], first = fi[k].first;
			if (p < 0 || p >= shown || first < 0 || first >= shown)
				continue;
			bool linked = p == i;
			/* a later break at the same place of the same frame resumes there too */
			if (!linked && r->compiles[p].frame_index == r->compiles[i].frame_index && r->more[p].graph &&
			    r->more[i].graph)
				linked = same_place(r->more[p].graph, r->more[i].graph);
			if (!linked)
				continue;
			Agedge_t *e = agedge(g, ci[i].tail, ci[first].node, NULL, 1);
			viz_set(e, "label", "resume");
			sb_reset(&b);
			sb_printf(&b, "cluster_frame%d", fi[k].f->frame_index);
			viz_set(e, "lhead", b.buf);
		}
	}
	free(parent);
	free(last_break);
	sb_release(&b);
}

Agraph_t *viz_run_view(const struct viz_run_rows *r, int max_nodes)
{
	int shown = r->ncompiles;
	if (max_nodes > 0 && shown > max_nodes)
		shown = max_nodes;
	struct strbuf b = STRBUF_INIT;
	sb_printf(&b, "run %lld", (long long)r->run->id);
	Agraph_t *g = agopen(b.buf, Agdirected, NULL);
	declare(g);
	viz_set(g, "compound", "true"); /* edges may end at a cluster's border (lhead) */
	sb_reset(&b);
	sb_printf(&b, "run %lld \xc2\xb7 ", (long long)r->run->id);
	viz_label_text(&b, r->run->program, 200);
	sb_printf(&b, " \xc2\xb7 %d compile%s", r->ncompiles, r->ncompiles == 1 ? "" : "s");
	if (!r->run->finished) { /* tjit-profile report's words */
		char state[64];
		dbq_unfinished_text(r->run->pid, state, sizeof state);
		sb_printf(&b, " \xc2\xb7 did not finish (%s)", state);
	}
	viz_set(g, "label", b.buf);

	struct frame_info *fi = frames_info(r, shown);
	for (int i = 0; i < r->nframes; i++) {
		if (!fi[i].shown)
			continue;
		sb_reset(&b);
		sb_printf(&b, "cluster_frame%d", fi[i].f->frame_index);
		fi[i].cluster = agsubg(g, b.buf, 1);
		sb_reset(&b);
		frame_label(&b, fi[i].f);
		viz_set(fi[i].cluster, "label", b.buf);
		viz_set(fi[i].cluster, "style", "rounded");
		viz_set(fi[i].cluster, "color", "gray");
		sb_reset(&b);
		sb_printf(&b, "compiles_frame%d", fi[i].f->frame_index);
		fi[i].rank = agsubg(fi[i].cluster, b.buf, 1);
		viz_set(fi[i].rank, "rank", "same");
		if (fi[i].f->compiles == 0) {
			sb_reset(&b);
			sb_printf(&b, "frame %d eager", fi[i].f->frame_index);
			Agnode_t *v = agnode(fi[i].rank, b.buf, 1);
			sb_reset(&b);
			sb_printf(&b, "ran eagerly (%s)" VIZ_NEWLINE "%lld call%s",
				  fi[i].f->eager_reason ? fi[i].f->eager_reason : "not compiled",
				  (long long)fi[i].f->eager_calls, fi[i].f->eager_calls == 1 ? "" : "s");
			viz_set(v, "label", b.buf);
			viz_set(v, "style", "rounded,dashed");
		}
	}

	struct compile_info *ci = xcalloc((size_t)(shown > 0 ? shown : 1), sizeof *ci);
	for (int i = 0; i < shown; i++) {
		const struct dbq_compile *c = &r->compiles[i];
		const struct viz_compile_more *m = &r->more[i];
		int k = frame_of(fi, r->nframes, c->frame_index);
		ci[i].frame = k;
		Agraph_t *home = k >= 0 ? fi[k].rank : g;
		Agnode_t *v = agnode(home, c->label, 1);
		ci[i].node = ci[i].tail = v;
		sb_reset(&b);
		compile_label(&b, c);
		viz_set(v, "label", b.buf);
		if (strcmp(c->outcome, "error") == 0)
			viz_set(v, "color", "red");
		else if (strcmp(c->outcome, "skipped") == 0)
			viz_set(v, "style", "rounded,dashed");
		Agraph_t *below = k >= 0 ? fi[k].cluster : g;
		if (m->graph) {
			sb_reset(&b);
			sb_printf(&b, "graph %lld", (long long)m->graph->id);
			Agnode_t *gv = agnode(below, b.buf, 1);
			sb_printf(&b, " \xc2\xb7 %lld op%s", (long long)m->graph->op_count,
				  m->graph->op_count == 1 ? "" : "s");
			viz_set(gv, "label", b.buf);
			viz_set(gv, "shape", "note");
			viz_set(gv, "style", "");
			edge(g, v, gv, NULL, NULL);
			ci[i].tail = gv;
			if (m->graph->break_code) {
				sb_reset(&b);
				sb_printf(&b, "break %s", c->label);
				Agnode_t *bv = agnode(below, b.buf, 1);
				sb_reset(&b);
				viz_label_text(&b, m->graph->break_code, 20);
				sb_puts(&b, " ");
				viz_label_text(&b, m->graph->break_message ? m->graph->break_message : "?", 80);
				if (m->graph->break_file) {
					sb_puts(&b, VIZ_NEWLINE);
					viz_place(&b, m->graph->break_file, m->graph->break_line, r->run->program,
						  r->run->source_text);
				}
				viz_set(bv, "label", b.buf);
				viz_set(bv, "shape", "octagon");
				viz_set(bv, "style", "filled");
				viz_set(bv, "color", "red");
				viz_set(bv, "fillcolor", "#fde0dc");
				edge(g, gv, bv, NULL, NULL);
				ci[i].tail = bv;
			}
		}
		/* a recompile: a side branch from the frame's previous compile */
		if (c->compile_index > 0) {
			for (int j = i - 1; j >= 0; j--) {
				const struct dbq_compile *p = &r->compiles[j];
				if (p->frame_index != c->frame_index || p->compile_index != c->compile_index - 1)
					continue;
				sb_reset(&b);
				if (m->why)
					viz_label_text(&b, m->why, 80);
				if (strcmp(c->reason, "recompile") != 0) {
					if (m->why)
						sb_puts(&b, VIZ_NEWLINE);
					viz_label_text(&b, c->reason, 40);
				}
				edge(g, ci[j].node, v, b.buf, "dashed");
				break;
			}
		}
	}

	link_resumes(g, r, fi, ci, shown);

	if (shown < r->ncompiles) {
		int cut = r->ncompiles - shown;
		Agnode_t *note = agnode(g, "not-shown", 1);
		sb_reset(&b);
		sb_printf(&b, "\xe2\x80\xa6 %d more compile%s not shown (--max-nodes %d)", cut, cut == 1 ? "" : "s",
			  max_nodes);
		viz_set(note, "label", b.buf);
		viz_set(note, "shape", "note");
		viz_set(note, "style", "dashed");
	}

	free(ci);
	free(fi);
	sb_release(&b);
	return g;
}
