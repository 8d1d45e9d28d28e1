/* compile_log.c - every compile event goes through here: the TJIT_LOGS
 * lines on stderr, the database rows (db/db.h) and the explain listeners.
 *
 * The frame evaluator hands over one compile_record per compile attempt
 * (compile_log_compile). Each enabled artifact formats its lines into one
 * buffer, every line prefixed with the compile id ("[0/1] "), and the
 * buffer goes out with one write, so that an event is never interleaved
 * with anything else. Then the record becomes database rows in one
 * transaction, and each open listener (explain) sees it.
 *
 * The database needs a frame row id per frame index and, to count break
 * hits, the break row id per compile: both live in a table by frame index.
 */
#include "compile_log.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "dtype.h"
#include "ops.h"
#include "vm.h"

/* ---- TJIT_LOGS ---- */

static const struct {
	const char *name;
	unsigned bit;
} artifact_names[] = {
	{"graph_breaks", LOG_GRAPH_BREAKS}, {"recompiles", LOG_RECOMPILES},
	{"guards", LOG_GUARDS},             {"graph_code", LOG_GRAPH_CODE},
	{"dynamic", LOG_DYNAMIC},           {"aot_graphs", LOG_AOT_GRAPHS},
	{"output_code", LOG_OUTPUT_CODE},   {"fusion", LOG_FUSION},
	{"perf_hints", LOG_PERF_HINTS},
};
#define NARTIFACTS (sizeof artifact_names / sizeof artifact_names[0])

int log_parse_artifacts(const char *spec, unsigned *out, char **err)
{
	unsigned bits = 0;
	if (err)
		*err = NULL;
	const char *p = spec ? spec : "";
	while (*p) {
		while (*p == ',' || *p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		const char *start = p;
		while (*p && *p != ',' && *p != ' ' && *p != '\t')
			p++;
		const char *name = start;
		size_t len = (size_t)(p - start);
		if (*name == '+') { /* TORCH_LOGS's "+name" (more verbose): the same here */
			name++;
			len--;
		}
		if (len == 3 && strncmp(name, "all", 3) == 0) {
			for (size_t i = 0; i < NARTIFACTS; i++)
				bits |= artifact_names[i].bit;
			continue;
		}
		size_t i = 0;
		while (i < NARTIFACTS && !(strlen(artifact_names[i].name) == len &&
					   strncmp(artifact_names[i].name, name, len) == 0))
			i++;
		if (i == NARTIFACTS) {
			if (err) {
				struct strbuf sb = STRBUF_INIT;
				sb_puts(&sb, "unknown log artifact '");
				sb_add(&sb, start, (size_t)(p - start));
				sb_puts(&sb, "' (valid: ");
				for (size_t j = 0; j < NARTIFACTS; j++)
					sb_printf(&sb, "%s, ", artifact_names[j].name);
				sb_puts(&sb, "all)");
				*err = sb_detach(&sb);
			}
			return -1;
		}
		bits |= artifact_names[i].bit;
	}
	*out = bits;
	return 0;
}

/* ---- the log of one run ---- */

struct compile_row {
	int64_t break_id;   /* 0: the compile has no break row */
	int64_t hits;
};

struct frame_row {
	int64_t id;         /* 0: not logged yet */
	int ncompiles, cap;
	struct compile_row *compiles; /* by compile index */
};

struct compile_log {
	unsigned artifacts;
	FILE *out;
	struct db_writer *db;
	struct frame_row *frames; /* by frame index */
	int nframes;
	struct compile_listener *listeners; /* the newest first */
	struct warned_at *warned; /* compile_log_warning_once_at's places */
	int nwarned, capwarned;
};

struct warned_at {
	const struct source *src;
	struct src_loc loc;
};

struct compile_log *compile_log_new(const struct compile_log_config *cfg)
{
	struct compile_log *log = calloc(1, sizeof *log);
	if (!log)
		return NULL;
	log->artifacts = cfg ? cfg->artifacts : 0;
	log->out = cfg && cfg->out ? cfg->out : stderr;
	log->db = cfg ? cfg->db : NULL;
	return log;
}

void compile_log_free(struct compile_log *log)
{
	if (!log)
		return;
	for (int i = 0; i < log->nframes; i++)
		free(log->frames[i].compiles);
	free(log->frames);
	free(log->warned);
	free(log);
}

unsigned compile_log_artifacts(const struct compile_log *log)
{
	return log->artifacts;
}

struct db_writer *compile_log_db(const struct compile_log *log)
{
	return log->db;
}

static struct frame_row *frame_row(struct compile_log *log, int frame_index)
{
	if (frame_index < 0)
		return NULL;
	if (frame_index >= log->nframes) {
		int n = log->nframes ? log->nframes : 8;
		while (n <= frame_index)
			n *= 2;
		struct frame_row *bigger = realloc(log->frames, (size_t)n * sizeof *bigger);
		if (!bigger)
			return NULL;
		memset(bigger + log->nframes, 0, (size_t)(n - log->nframes) * sizeof *bigger);
		log->frames = bigger;
		log->nframes = n;
	}
	return &log->frames[frame_index];
}

static struct compile_row *compile_row(struct compile_log *log, int frame_index, int compile_index)
{
	struct frame_row *f = frame_row(log, frame_index);
	if (!f || compile_index < 0)
		return NULL;
	if (compile_index >= f->cap) {
		int n = f->cap ? f->cap : 4;
		while (n <= compile_index)
			n *= 2;
		struct compile_row *bigger = realloc(f->compiles, (size_t)n * sizeof *bigger);
		if (!bigger)
			return NULL;
		memset(bigger + f->cap, 0, (size_t)(n - f->cap) * sizeof *bigger);
		f->compiles = bigger;
		f->cap = n;
	}
	if (compile_index >= f->ncompiles)
		f->ncompiles = compile_index + 1;
	return &f->compiles[compile_index];
}

/* ---- formatting helpers ---- */

static const char *src_path(const struct source *src)
{
	return src && src->path ? src->path : "<unknown>";
}

void compile_log_format_frame(const struct user_frame *f, struct strbuf *out)
{
	sb_printf(out, "%s:%d", src_path(f->src), f->line);
}

void compile_log_source_line(const struct source *src, int line, struct strbuf *out)
{
	if (!src || line < 1 || line > src->nlines)
		return;
	size_t len = 0;
	const char *s = source_line(src, line, &len);
	if (!s)
		return;
	while (len && (*s == ' ' || *s == '\t')) {
		s++;
		len--;
	}
	while (len && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r'))
		len--;
	sb_add(out, s, len);
}

/* Appends text to out with every line prefixed by "[id] ", as a terminal
 * may show it: the program's source lines, strings and names inside never
 * send an escape sequence (sb_add_shown). */
static void add_tagged(struct strbuf *out, const char *id, const char *text, size_t len)
{
	size_t i = 0;
	while (i < len) {
		size_t j = i;
		while (j < len && text[j] != '\n')
			j++;
		sb_printf(out, "[%s] ", id);
		sb_add_shown(out, text + i, j - i);
		sb_putc(out, '\n');
		i = j + 1;
	}
}

static void tagged_printf(struct strbuf *out, const char *id, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void tagged_printf(struct strbuf *out, const char *id, const char *fmt, ...)
{
	struct strbuf line = STRBUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	char small[256];
	int n = vsnprintf(small, sizeof small, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof small) {
		add_tagged(out, id, small, (size_t)n);
		return;
	}
	sb_grow(&line, (size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(line.buf, (size_t)n + 1, fmt, ap);
	va_end(ap);
	add_tagged(out, id, line.buf, (size_t)n);
	sb_release(&line);
}

/* The name a record's frame goes by in the logs: the function, or for a
 * resume point the function and the line it resumes at. */
static void frame_title(const struct compile_record *r, struct strbuf *out)
{
	sb_printf(out, "%s in %s:%d", r->function ? r->function : "<unknown>", src_path(r->src),
		  r->def_line);
	if (r->resume_pc > 0)
		sb_printf(out, " (resume at line %d)", r->resume_line);
}

static const char *guard_function(const struct compile_record *r, const struct guard_record *g)
{
	if (g->function)
		return g->function;
	if (g->src && g->src == r->src)
		return r->function;
	return NULL;
}

/* ---- the log artifacts ---- */

static void log_recompile(struct strbuf *out, const struct compile_record *r)
{
	const char *why = r->reason ? r->reason : "first";
	if (strcmp(why, "first") == 0)
		return;
	struct strbuf title = STRBUF_INIT;
	frame_title(r, &title);
	if (strcmp(why, "recompile") == 0)
		tagged_printf(out, r->compile_id, "Recompiling function %s", title.buf);
	else if (strcmp(why, "cache_limit") == 0)
		tagged_printf(out, r->compile_id,
			      "Not recompiling function %s: cache_size_limit reached, it runs eagerly",
			      title.buf);
	else if (strcmp(why, "frozen_miss") == 0)
		tagged_printf(out, r->compile_id,
			      "Not recompiling function %s: it is frozen, the miss runs eagerly", title.buf);
	else
		tagged_printf(out, r->compile_id, "Compiling function %s (%s)", title.buf, why);
	sb_release(&title);
	if (r->nfailures > 0) {
		tagged_printf(out, r->compile_id, "    triggered by the following guard failure(s):");
		for (int i = 0; i < r->nfailures; i++) {
			const struct failure_record *f = &r->failures[i];
			tagged_printf(out, r->compile_id, "    - %s: %s (got %s)",
				      f->failed_compile ? f->failed_compile : "?",
				      f->guard_text ? f->guard_text : "?",
				      f->value_seen ? f->value_seen : "?");
		}
	}
}

static void log_break(struct strbuf *out, const struct compile_record *r)
{
	const struct break_record *b = r->brk;
	const struct break_info *info = breaks_info(b->code);
	const struct user_frame *top = b->nstack > 0 ? &b->stack[b->nstack - 1] : NULL;
	const char *id = r->compile_id;
	if (top)
		tagged_printf(out, id, "Graph break in user code at %s:%d", src_path(top->src), top->line);
	else
		tagged_printf(out, id, "Graph break in user code at %s:%d", src_path(r->src), r->def_line);
	if (info)
		tagged_printf(out, id, "Code: %s (%s)", info->code, info->category);
	tagged_printf(out, id, "Reason: %s", b->message ? b->message : info ? info->message : "?");
	if (info)
		tagged_printf(out, id, "Hint: %s", info->hint);
	if (b->nstack > 0) {
		tagged_printf(out, id, "User code traceback:");
		struct strbuf line = STRBUF_INIT;
		for (int i = 0; i < b->nstack; i++) {
			const struct user_frame *f = &b->stack[i];
			tagged_printf(out, id, "  File \"%s\", line %d, in %s", src_path(f->src), f->line,
				      f->function ? f->function : "<unknown>");
			line.len = 0;
			compile_log_source_line(f->src, f->line, &line);
			if (line.len)
				tagged_printf(out, id, "    %s", line.buf);
		}
		sb_release(&line);
	}
}

static void log_graph(struct strbuf *out, const char *id, const struct graph *g)
{
	struct strbuf listing = STRBUF_INIT;
	graph_print(g, &listing);
	add_tagged(out, id, listing.buf ? listing.buf : "", listing.len);
	sb_release(&listing);
}

static void log_guards(struct strbuf *out, const struct compile_record *r)
{
	const char *id = r->compile_id;
	tagged_printf(out, id, "GUARDS:");
	struct strbuf line = STRBUF_INIT;
	for (int i = 0; i < r->nguards; i++) {
		const struct guard_record *g = &r->guards[i];
		line.len = 0;
		sb_printf(&line, "  %s", g->text ? g->text : "?");
		if (g->src && g->line > 0) {
			while (line.len < 48)
				sb_putc(&line, ' ');
			sb_printf(&line, "  # %s:%d", src_path(g->src), g->line);
			const char *fn = guard_function(r, g);
			if (fn)
				sb_printf(&line, " in %s", fn);
			size_t mark = line.len;
			sb_puts(&line, "  ");
			compile_log_source_line(g->src, g->line, &line);
			if (line.len == mark + 2)
				line.len = mark;
		}
		add_tagged(out, id, line.buf, line.len);
	}
	sb_release(&line);
}

/* the node of the k-th saved tensor of a partition */
static int saved_node(const struct saved_info *s, int k)
{
	return s->fwd->outputs[s->fwd->noutputs - s->nsaved + k];
}

/* the bytes saved between forward and backward, at the example sizes */
static int64_t saved_bytes(const struct saved_info *s)
{
	int64_t b = 0;
	for (int k = 0; k < s->nsaved; k++)
		b += graph_node_bytes(&s->fwd->nodes[saved_node(s, k)]);
	return b;
}

/* after the forward and backward graphs: what passes between them */
static void log_saved(struct strbuf *out, const struct compile_record *r)
{
	const struct saved_info *s = &r->saved;
	tagged_printf(out, r->compile_id,
		      "%s: %d saved tensor%s between forward and backward, %lld bytes, %d node%s recomputed",
		      r->backend ? r->backend : "?", s->nsaved, s->nsaved == 1 ? "" : "s",
		      (long long)saved_bytes(s), s->nrecomputed, s->nrecomputed == 1 ? "" : "s");
}

/* an error that raised: not a backend's that fell back */
static bool raised(const struct compile_record *r)
{
	return r->outcome && strcmp(r->outcome, "error") == 0 && !r->fallback;
}

/* No entry came out of it: a cache-limit or frozen miss, or an error. */
static bool skipped(const struct compile_record *r)
{
	return r->outcome && (strcmp(r->outcome, "skipped") == 0 || raised(r));
}

static void log_lines(struct compile_log *log, const struct compile_record *r)
{
	unsigned a = log->artifacts;
	struct strbuf out = STRBUF_INIT;
	if (a & LOG_RECOMPILES)
		log_recompile(&out, r);
	/* a fullgraph failure raises Unsupported instead: not a break that happened */
	if ((a & LOG_GRAPH_BREAKS) && r->brk && !raised(r))
		log_break(&out, r);
	if ((a & LOG_GRAPH_CODE) && r->graph)
		log_graph(&out, r->compile_id, r->graph);
	for (int i = 0; i < r->ngraphs_extra; i++) {
		const struct graph *g = r->graphs_extra[i];
		if (!g)
			continue;
		unsigned want = g->stage == STAGE_INDUCTOR ? LOG_OUTPUT_CODE : LOG_AOT_GRAPHS;
		if (a & want)
			log_graph(&out, r->compile_id, g);
	}
	if ((a & LOG_AOT_GRAPHS) && r->saved.fwd)
		log_saved(&out, r);
	if ((a & LOG_GUARDS) && !skipped(r))
		log_guards(&out, r);
	if (out.len) {
		fwrite(out.buf, 1, out.len, log->out);
		fflush(log->out);
	}
	sb_release(&out);
}

/* ---- database rows ---- */

/* "file:line in function" lines, outermost first */
static void format_user_stack(const struct user_frame *s, int n, struct strbuf *out)
{
	for (int i = 0; i < n; i++) {
		if (i)
			sb_putc(out, '\n');
		sb_printf(out, "%s:%d in %s", src_path(s[i].src), s[i].line,
			  s[i].function ? s[i].function : "<unknown>");
	}
}

static const char *node_kind(const struct gnode *n)
{
	switch (n->kind) {
	case GN_INPUT: return "input";
	case GN_OP: return "op";
	case GN_GETITEM: return "getitem";
	case GN_CALL: return "call";
	}
	return "op";
}

/* The op name of an op node ("abs"), a call node's function, or NULL. */
static const char *node_op(const struct gnode *n)
{
	switch (n->kind) {
	case GN_OP:
		return n->op >= 0 && n->op < OPS_COUNT ? ops_table[n->op].name : "?";
	case GN_GETITEM:
		return "getitem";
	case GN_CALL:
		if (n->callee.tag == VAL_FUNC)
			return val_func(n->callee)->code->name;
		return "call";
	default:
		return NULL;
	}
}

void compile_log_node_op(const struct gnode *n, struct strbuf *out)
{
	const char *op = node_op(n);
	if (op)
		sb_puts(out, op);
}

/* Every string a graph's rows point at, freed after the insert. */
struct graph_rows {
	struct db_graph g;
	struct db_kernel *kernels;
	struct db_node *nodes;
	char **strings;
	int nstrings;
};

static const char *keep(struct graph_rows *gr, struct strbuf *sb)
{
	char *s = sb_detach(sb);
	if (!s)
		s = strdup("");
	gr->strings[gr->nstrings++] = s;
	return s;
}

static void graph_rows_build(struct graph_rows *gr, const struct graph *g)
{
	memset(gr, 0, sizeof *gr);
	int nrows = g->nnodes + 1;
	gr->nodes = calloc((size_t)nrows, sizeof *gr->nodes);
	gr->strings = calloc((size_t)nrows * 3 + 1, sizeof *gr->strings);
	struct strbuf sb = STRBUF_INIT;
	graph_print(g, &sb);
	gr->g.stage = graph_stage_name(g->stage);
	gr->g.name = g->name ? g->name : "";
	gr->g.op_count = graph_op_count(g);
	if (!gr->nodes || !gr->strings) {
		free(gr->nodes);
		free(gr->strings);
		gr->nodes = NULL;
		gr->strings = calloc(1, sizeof *gr->strings);
		gr->g.listing = gr->strings ? keep(gr, &sb) : "";
		sb_release(&sb);
		return;
	}
	gr->g.listing = keep(gr, &sb);
	for (int i = 0; i < g->nnodes; i++) {
		const struct gnode *n = &g->nodes[i];
		struct db_node *d = &gr->nodes[i];
		d->name = n->name ? n->name : "";
		d->kind = node_kind(n);
		d->op = node_op(n);
		if (n->kind == GN_INPUT)
			d->args = n->source ? n->source : "";
		else {
			graph_format_args(g, n, &sb);
			d->args = keep(gr, &sb);
		}
		if (n->is_tensor && n->nouts == 0) {
			d->dtype = dtype_name(n->dt);
			sb_putc(&sb, '[');
			for (int k = 0; k < n->ndim; k++) {
				if (k)
					sb_puts(&sb, ", ");
				if (n->shape[k].sym >= 0)
					sb_printf(&sb, "s%d", n->shape[k].sym);
				else
					sb_printf(&sb, "%lld", (long long)n->shape[k].value);
			}
			sb_putc(&sb, ']');
			d->shape = keep(gr, &sb);
		}
		if (n->nstack > 0) {
			const struct user_frame *top = &n->stack[n->nstack - 1];
			d->file = src_path(top->src);
			d->line = top->line;
			d->col = top->col;
			if (n->nstack > 1) {
				format_user_stack(n->stack, n->nstack, &sb);
				d->user_stack = keep(gr, &sb);
			}
		}
	}
	/* the output row: the names returned, in order */
	struct db_node *o = &gr->nodes[g->nnodes];
	o->name = "output";
	o->kind = "output";
	for (int i = 0; i < g->noutputs; i++) {
		int k = g->outputs[i];
		if (i)
			sb_puts(&sb, ", ");
		sb_puts(&sb, k >= 0 && k < g->nnodes && g->nodes[k].name ? g->nodes[k].name : "?");
	}
	o->args = keep(gr, &sb);
	gr->g.nnodes = nrows;
	gr->g.nodes = gr->nodes;
	sb_release(&sb);
}

static void graph_rows_release(struct graph_rows *gr)
{
	for (int i = 0; i < gr->nstrings; i++)
		free(gr->strings[i]);
	free(gr->strings);
	free(gr->nodes);
	free(gr->kernels);
}

/* the kernels of r that belong to g (those without a graph: to the captured one) */
static void graph_rows_kernels(struct graph_rows *gr, const struct compile_record *r, const struct graph *g)
{
	int n = 0;
	for (int i = 0; i < r->nkernels; i++)
		if (r->kernels[i].graph == g || (!r->kernels[i].graph && g == r->graph))
			n++;
	if (!n || !(gr->kernels = calloc((size_t)n, sizeof *gr->kernels)))
		return;
	for (int i = 0; i < r->nkernels; i++) {
		const struct kernel_record *k = &r->kernels[i];
		if (!(k->graph == g || (!k->graph && g == r->graph)))
			continue;
		struct db_kernel *d = &gr->kernels[gr->g.nkernels++];
		d->name = k->name ? k->name : "";
		d->kind = k->kind ? k->kind : "";
		d->hash = k->hash ? k->hash : "";
		d->fused_nodes = k->fused_nodes ? k->fused_nodes : "";
		d->loop_ir = k->loop_ir ? k->loop_ir : "";
		d->llvm_ir = k->source;
		d->cache_hit = k->cache_hit;
		d->codegen_ms = k->codegen_ms;
	}
	gr->g.kernels = gr->kernels;
}

static const char *db_guard_kind(const char *kind)
{
	if (!kind)
		return "";
	return strcmp(kind, "tensor") == 0 ? "tensor_match" : kind;
}

int64_t compile_log_frame(struct compile_log *log, int frame_index, const char *function,
			  const struct source *src, int def_line, int resume_pc, int resume_line)
{
	struct frame_row *f = frame_row(log, frame_index);
	if (f && f->id)
		return f->id;
	struct db_frame row = {
		.frame_index = frame_index,
		.function = function ? function : "",
		.file = src_path(src),
		.line = def_line,
		.resume_pc = resume_pc,
		.resume_line = resume_line,
	};
	int64_t id = db_log_frame(log->db, &row);
	if (f)
		f->id = id;
	return id;
}

void compile_log_frame_counts(struct compile_log *log, int64_t frame_id, const struct db_frame_counts *c)
{
	db_frame_counts(log->db, frame_id, c);
}

/* the aot_saved rows of r's partition, whose forward graph's rows are fr
 * (their strings are fr's); NULL when none or out of memory */
static struct db_saved *saved_rows(const struct compile_record *r, const struct graph_rows *fr)
{
	const struct saved_info *s = &r->saved;
	struct db_saved *rows = s->nsaved > 0 && fr->nodes ? calloc((size_t)s->nsaved, sizeof *rows) : NULL;
	for (int k = 0; rows && k < s->nsaved; k++) {
		int i = saved_node(s, k);
		rows[k].node = i;
		rows[k].name = fr->nodes[i].name;
		rows[k].dtype = fr->nodes[i].dtype;
		rows[k].shape = fr->nodes[i].shape;
		rows[k].bytes = graph_node_bytes(&s->fwd->nodes[i]);
	}
	return rows;
}

static void db_rows(struct compile_log *log, const struct compile_record *r)
{
	int64_t frame_id = compile_log_frame(log, r->frame_index, r->function, r->src, r->def_line,
					     r->resume_pc, r->resume_line);
	struct db_guard *guards = r->nguards ? calloc((size_t)r->nguards, sizeof *guards) : NULL;
	for (int i = 0; guards && i < r->nguards; i++) {
		const struct guard_record *g = &r->guards[i];
		guards[i].kind = db_guard_kind(g->kind);
		guards[i].text = g->text ? g->text : "";
		guards[i].file = g->src ? src_path(g->src) : NULL;
		guards[i].line = g->line;
		guards[i].col = g->col;
	}
	/* the newest DB_FAILURES_PER_COMPILE entries' failures: a frame with n
	 * entries would otherwise log n(n-1)/2 rows over its recompiles, and
	 * the newest ones already carry every value the frame took */
	int nfail = r->nfailures < DB_FAILURES_PER_COMPILE ? r->nfailures : DB_FAILURES_PER_COMPILE;
	struct db_guard_failure *failures = nfail ? calloc((size_t)nfail, sizeof *failures) : NULL;
	for (int i = 0; failures && i < nfail; i++) {
		failures[i].failed_compile = r->failures[i].failed_compile;
		failures[i].guard_text = r->failures[i].guard_text;
		failures[i].value_seen = r->failures[i].value_seen;
	}
	struct db_break brk = {0};
	struct strbuf stack = STRBUF_INIT;
	if (r->brk) {
		const struct break_record *b = r->brk;
		const struct break_info *info = breaks_info(b->code);
		const struct user_frame *top = b->nstack > 0 ? &b->stack[b->nstack - 1] : NULL;
		brk.code = info ? info->code : "TJB???";
		brk.category = info ? info->category : "unknown";
		brk.message = b->message ? b->message : info ? info->message : "";
		brk.file = top ? src_path(top->src) : src_path(r->src);
		brk.line = top ? top->line : r->def_line;
		brk.col = top ? top->col : 0;
		brk.pc = b->pc;
		format_user_stack(b->stack, b->nstack, &stack);
		brk.user_stack = stack.buf ? stack.buf : "";
	}
	int ngraphs = (r->graph ? 1 : 0) + r->ngraphs_extra;
	struct graph_rows *rows = ngraphs ? calloc((size_t)ngraphs, sizeof *rows) : NULL;
	struct db_graph *graphs = ngraphs ? calloc((size_t)ngraphs, sizeof *graphs) : NULL;
	int ng = 0, saved_graph = -1;
	if (rows && graphs) {
		if (r->graph) {
			graph_rows_build(&rows[ng], r->graph);
			graph_rows_kernels(&rows[ng++], r, r->graph);
		}
		for (int i = 0; i < r->ngraphs_extra; i++) {
			if (!r->graphs_extra[i])
				continue;
			if (r->graphs_extra[i] == r->saved.fwd)
				saved_graph = ng;
			graph_rows_build(&rows[ng], r->graphs_extra[i]);
			graph_rows_kernels(&rows[ng++], r, r->graphs_extra[i]);
		}
		for (int i = 0; i < ng; i++)
			graphs[i] = rows[i].g;
	}
	struct db_saved *saved = saved_graph >= 0 ? saved_rows(r, &rows[saved_graph]) : NULL;
	struct db_phase *phases = r->nphases ? calloc((size_t)r->nphases, sizeof *phases) : NULL;
	for (int i = 0; phases && i < r->nphases; i++) {
		phases[i].name = r->phases[i].name;
		phases[i].parent = r->phases[i].parent;
		phases[i].ms = r->phases[i].ms;
	}
	struct db_compile c = {
		.frame_id = frame_id,
		.compile_id = r->compile_id,
		.compile_index = r->compile_index,
		.reason = r->reason ? r->reason : "first",
		.backend = r->backend ? r->backend : "",
		.dynamic = r->dynamic,
		.started_at = r->started_at,
		.trace_ms = r->trace_ms,
		.guard_ms = r->guard_ms,
		.backend_ms = r->backend_ms,
		.total_ms = r->total_ms,
		.outcome = r->outcome ? r->outcome : "ok",
		.op_count = r->graph ? graph_op_count(r->graph) : 0,
		.error = r->error,
		.nguards = guards ? r->nguards : 0,
		.guards = guards,
		.nfailures = failures ? nfail : 0,
		.failures = failures,
		.nbreaks = r->brk ? 1 : 0,
		.breaks = r->brk ? &brk : NULL,
		.ngraphs = ng,
		.graphs = graphs,
		.nphases = phases ? r->nphases : 0,
		.phases = phases,
		.partitioned = saved_graph >= 0,
		.saved_graph = saved_graph,
		.saved_bytes = saved_graph >= 0 ? saved_bytes(&r->saved) : 0,
		.nsaved = saved ? r->saved.nsaved : 0,
		.saved = saved,
	};
	int64_t break_id = 0;
	db_log_compile(log->db, &c, r->brk ? &break_id : NULL);
	if (r->brk) {
		struct compile_row *cr = compile_row(log, r->frame_index, r->compile_index);
		if (cr) {
			cr->break_id = break_id;
			cr->hits = 0;
		}
	}
	for (int i = 0; i < ng; i++)
		graph_rows_release(&rows[i]);
	free(rows);
	free(graphs);
	free(phases);
	free(saved);
	free(guards);
	free(failures);
	sb_release(&stack);
}

/* ---- events ---- */

void compile_log_compile(struct compile_log *log, const struct compile_record *r)
{
	if (log->artifacts)
		log_lines(log, r);
	if (log->db)
		db_rows(log, r);
	for (struct compile_listener *l = log->listeners; l; l = l->next)
		l->on_compile(l, r);
}

void compile_log_break_hit(struct compile_log *log, const struct compile_record *r)
{
	if (!log->db || !r->brk)
		return;
	struct compile_row *cr = compile_row(log, r->frame_index, r->compile_index);
	if (!cr || !cr->break_id)
		return;
	cr->hits++;
	db_break_hits(log->db, cr->break_id, cr->hits);
}

void compile_log_text(struct compile_log *log, const char *compile_id, const char *text)
{
	struct strbuf out = STRBUF_INIT;
	add_tagged(&out, compile_id ? compile_id : "?", text, strlen(text));
	FILE *f = log->out ? log->out : stderr;
	fwrite(out.buf, 1, out.len, f);
	fflush(f);
	sb_release(&out);
}

void compile_log_warning(struct compile_log *log, const char *fmt, ...)
{
	FILE *out = log->out ? log->out : stderr;
	struct strbuf text = STRBUF_INIT, shown = STRBUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	sb_vprintf(&text, fmt, ap);
	va_end(ap);
	/* it names the program's functions and files: shown escaped */
	sb_add_shown_lines(&shown, sb_str(&text), text.len);
	fprintf(out, "tjit: warning: %s\n", sb_str(&shown));
	sb_release(&text);
	sb_release(&shown);
	fflush(out);
}

void compile_log_warning_at(struct compile_log *log, const struct source *src, struct src_loc loc, const char *text)
{
	FILE *out = log->out ? log->out : stderr;
	fflush(stdout);
	diag_print(out, src, loc, "warning", "%s", text);
	fflush(out);
}

void compile_log_warning_once_at(struct compile_log *log, const struct source *src, struct src_loc loc,
				 const char *text)
{
	/* a program has few such places: a list is enough */
	for (int i = 0; i < log->nwarned; i++)
		if (log->warned[i].src == src && log->warned[i].loc.line == loc.line &&
		    log->warned[i].loc.col == loc.col)
			return;
	if (log->nwarned == log->capwarned) {
		int cap = log->capwarned ? 2 * log->capwarned : 8;
		struct warned_at *w = realloc(log->warned, sizeof *w * (size_t)cap);
		if (!w) /* out of memory: the warning still goes out, maybe twice */
			goto print;
		log->warned = w;
		log->capwarned = cap;
	}
	log->warned[log->nwarned++] = (struct warned_at){src, loc};
print:
	compile_log_warning_at(log, src, loc, text);
}

void compile_log_listen(struct compile_log *log, struct compile_listener *l)
{
	l->next = log->listeners;
	log->listeners = l;
}

void compile_log_unlisten(struct compile_log *log, struct compile_listener *l)
{
	for (struct compile_listener **p = &log->listeners; *p; p = &(*p)->next) {
		if (*p == l) {
			*p = l->next;
			l->next = NULL;
			return;
		}
	}
}

void compile_record_release(struct compile_record *r)
{
	if (!r)
		return;
	free(r->error);
	r->error = NULL;
	for (int i = 0; i < r->nguards; i++)
		free(r->guards[i].text);
	free(r->guards);
	r->guards = NULL;
	r->nguards = 0;
	for (int i = 0; i < r->nfailures; i++) {
		free(r->failures[i].failed_compile);
		free(r->failures[i].guard_text);
		free(r->failures[i].value_seen);
	}
	free(r->failures);
	r->failures = NULL;
	r->nfailures = 0;
	if (r->brk) {
		free(r->brk->message);
		free(r->brk->stack);
		free(r->brk);
		r->brk = NULL;
	}
	free(r->phases);
	r->phases = NULL;
	r->nphases = 0;
	for (int i = 0; i < r->nkernels; i++)
		kernel_record_release(&r->kernels[i]);
	free(r->kernels);
	r->kernels = NULL;
	r->nkernels = 0;
	graph_free(r->graph);
	r->graph = NULL;
	for (int i = 0; i < r->ngraphs_extra; i++)
		graph_free(r->graphs_extra[i]);
	free(r->graphs_extra);
	r->graphs_extra = NULL;
	r->ngraphs_extra = 0;
}
