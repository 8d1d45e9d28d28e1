/* check_compile_log.c - the compile log: TJIT_LOGS parsing, the exact
 * lines of each artifact, database rows through the null writer, the
 * listeners, and the summaries that explain prints (LANGUAGE.md §7). The
 * records are built by hand, as the frame evaluator fills them. */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile_log.h"
#include "db.h"
#include "explain.h"
#include "graph.h"
#include "ops.h"

static const char toy_text[] =
	"def toy_example(a, b):\n"
	"    x = a / (abs(a) + 1)\n"
	"    print(\"woo\")\n"
	"    if b.sum() < 0:\n"
	"        b = b * -1\n"
	"    return x * b\n";

static struct source *toy;
static char *log_text;
static size_t log_len;
static FILE *log_out;
static struct compile_log *clog; /* the log of the test */

/* a fresh log for the test (the previous one freed) */
static void log_open(const struct compile_log_config *cfg)
{
	compile_log_free(clog);
	clog = compile_log_new(cfg);
	ck_assert_ptr_nonnull(clog);
}

static void log_close(void)
{
	compile_log_free(clog);
	clog = NULL;
}

static void setup(void)
{
	toy = source_from_string("toy.tj", toy_text, strlen(toy_text));
	ck_assert_ptr_nonnull(toy);
	log_text = NULL;
	log_out = open_memstream(&log_text, &log_len);
	ck_assert_ptr_nonnull(log_out);
}

static void teardown(void)
{
	log_close();
	if (log_out)
		fclose(log_out);
	free(log_text);
	source_free(toy);
}

/* what the log printed so far */
static const char *logged(void)
{
	fflush(log_out);
	return log_text ? log_text : "";
}

static struct user_frame *frame_at(int line, int col)
{
	struct user_frame *f = calloc(1, sizeof *f);
	f->src = toy;
	f->line = line;
	f->col = col;
	f->function = "toy_example";
	return f;
}

static int add_input(struct graph *g, const char *name, const char *source)
{
	struct gnode n = {0};
	n.kind = GN_INPUT;
	n.name = graph_fresh_name(g, name);
	n.source = strdup(source);
	n.is_tensor = true;
	n.dt = DT_FLOAT32;
	n.ndim = 1;
	n.shape[0].value = 10;
	n.shape[0].sym = -1;
	return graph_add(g, &n);
}

/* an op node on node a (and node b, or the constant 1 when b < 0) at line */
static int add_op(struct graph *g, const char *op, int a, int b, int line)
{
	struct gnode n = {0};
	n.kind = GN_OP;
	n.op = ops_find(op, ~0u);
	ck_assert_int_ge(n.op, 0);
	n.name = graph_fresh_name(g, op);
	n.nargs = 2;
	n.args = calloc(2, sizeof *n.args);
	n.args[0].kind = GARG_NODE;
	n.args[0].node = a;
	if (b >= 0) {
		n.args[1].kind = GARG_NODE;
		n.args[1].node = b;
	} else {
		n.args[1].kind = GARG_CONST;
		n.args[1].constant = val_int(1);
	}
	n.is_tensor = true;
	n.dt = DT_FLOAT32;
	n.ndim = 1;
	n.shape[0].value = 10;
	n.shape[0].sym = -1;
	n.nstack = 1;
	n.stack = frame_at(line, 5);
	return graph_add(g, &n);
}

static void set_outputs(struct graph *g, int out)
{
	g->noutputs = 1;
	g->outputs = malloc(sizeof *g->outputs);
	g->outputs[0] = out;
}

/* a graph of nops ops (1 to 3) on L['a'] */
static struct graph *toy_graph(const char *id, int nops)
{
	struct graph *g = graph_new("toy_example", id, toy, 1, STAGE_CAPTURED);
	int a = add_input(g, "a", "L['a']");
	int last = add_op(g, "mul", a, -1, 2);
	if (nops > 1)
		last = add_op(g, "add", last, -1, 2);
	if (nops > 2)
		last = add_op(g, "div", a, last, 2);
	set_outputs(g, last);
	return g;
}

static void fill(struct compile_record *r, int frame, int n, const char *reason)
{
	memset(r, 0, sizeof *r);
	r->frame_index = frame;
	r->compile_index = n;
	snprintf(r->compile_id, sizeof r->compile_id, "%d/%d", frame, n);
	r->function = "toy_example";
	r->src = toy;
	r->def_line = 1;
	r->reason = reason;
	r->backend = "eager";
	r->dynamic = "None";
	r->outcome = "ok";
}

static void add_break(struct compile_record *r, int code, const char *msg, int line)
{
	r->brk = calloc(1, sizeof *r->brk);
	r->brk->code = code;
	r->brk->message = strdup(msg);
	r->brk->pc = 7;
	r->brk->nstack = 1;
	r->brk->stack = frame_at(line, 5);
	r->outcome = "graph_break";
}

static void add_guard(struct compile_record *r, const char *kind, const char *text, int line)
{
	r->guards = realloc(r->guards, (size_t)(r->nguards + 1) * sizeof *r->guards);
	struct guard_record *g = &r->guards[r->nguards++];
	memset(g, 0, sizeof *g);
	g->kind = kind;
	g->text = strdup(text);
	g->src = line ? toy : NULL;
	g->line = line;
	g->col = line ? 5 : 0;
}

static void add_failure(struct compile_record *r, const char *entry, const char *text, const char *seen)
{
	r->failures = realloc(r->failures, (size_t)(r->nfailures + 1) * sizeof *r->failures);
	struct failure_record *f = &r->failures[r->nfailures++];
	f->failed_compile = strdup(entry);
	f->guard_text = strdup(text);
	f->value_seen = strdup(seen);
}

/* ---- TJIT_LOGS ---- */

START_TEST(test_parse_artifacts)
{
	unsigned bits = 99;
	char *err = NULL;
	ck_assert_int_eq(log_parse_artifacts("graph_breaks,recompiles", &bits, &err), 0);
	ck_assert_uint_eq(bits, LOG_GRAPH_BREAKS | LOG_RECOMPILES);
	ck_assert_ptr_null(err);
	ck_assert_int_eq(log_parse_artifacts(" +guards , graph_code,", &bits, &err), 0);
	ck_assert_uint_eq(bits, LOG_GUARDS | LOG_GRAPH_CODE);
	ck_assert_int_eq(log_parse_artifacts("", &bits, &err), 0);
	ck_assert_uint_eq(bits, 0);
	ck_assert_int_eq(log_parse_artifacts("all", &bits, &err), 0);
	ck_assert_uint_eq(bits, LOG_GRAPH_BREAKS | LOG_RECOMPILES | LOG_GUARDS | LOG_GRAPH_CODE |
					LOG_DYNAMIC | LOG_AOT_GRAPHS | LOG_OUTPUT_CODE | LOG_FUSION | LOG_PERF_HINTS);
	ck_assert_int_eq(log_parse_artifacts("+all", &bits, &err), 0);
	bits = 5;
	ck_assert_int_eq(log_parse_artifacts("guards,graph_brakes", &bits, &err), -1);
	ck_assert_uint_eq(bits, 5);
	ck_assert_str_eq(err, "unknown log artifact 'graph_brakes' (valid: graph_breaks, recompiles, "
			      "guards, graph_code, dynamic, aot_graphs, output_code, fusion, perf_hints, all)");
	free(err);
}
END_TEST

START_TEST(test_nothing_logged_by_default)
{
	struct compile_log_config cfg = {.artifacts = 0, .out = log_out, .db = NULL};
	log_open(&cfg);
	struct compile_record r;
	fill(&r, 0, 0, "first");
	r.graph = toy_graph("0/0", 1);
	add_guard(&r, "tensor", "L['a'].shape == (10,)", 2);
	compile_log_compile(clog, &r);
	compile_record_release(&r);
	ck_assert_str_eq(logged(), "");
}
END_TEST

/* compile_log_warning_once_at: once a place (source, line, column) */
START_TEST(test_warning_once_at)
{
	struct compile_log_config cfg = {.artifacts = 0, .out = log_out, .db = NULL};
	log_open(&cfg);
	for (int i = 0; i < 20; i++) {
		compile_log_warning_once_at(clog, toy, (struct src_loc){2, 9}, "w");
		compile_log_warning_once_at(clog, toy, (struct src_loc){2, 13}, "v");
		compile_log_warning_once_at(clog, toy, (struct src_loc){6, 12}, "u");
	}
	ck_assert_str_eq(logged(), "toy.tj:2:9: warning: w\n"
				   "    x = a / (abs(a) + 1)\n"
				   "        ^\n"
				   "toy.tj:2:13: warning: v\n"
				   "    x = a / (abs(a) + 1)\n"
				   "            ^\n"
				   "toy.tj:6:12: warning: u\n"
				   "    return x * b\n"
				   "           ^\n");
	/* a new log (a new program run) warns again */
	fflush(log_out);
	size_t before = log_len;
	log_open(&cfg);
	compile_log_warning_once_at(clog, toy, (struct src_loc){2, 9}, "w");
	ck_assert_str_eq(logged() + before, "toy.tj:2:9: warning: w\n"
					    "    x = a / (abs(a) + 1)\n"
					    "        ^\n");
}
END_TEST

START_TEST(test_recompile_lines)
{
	struct compile_log_config cfg = {.artifacts = LOG_RECOMPILES, .out = log_out};
	log_open(&cfg);
	struct compile_record r;
	fill(&r, 0, 0, "first");
	compile_log_compile(clog, &r); /* a first compile is not a recompile */
	compile_record_release(&r);
	fill(&r, 0, 2, "recompile");
	add_failure(&r, "0/1", "L['x'].shape[0] == 3", "4");
	add_failure(&r, "0/0", "L['x'].shape[0] == 2", "4");
	compile_log_compile(clog, &r);
	compile_record_release(&r);
	fill(&r, 1, 1, "recompile");
	r.resume_pc = 12;
	r.resume_line = 4;
	add_failure(&r, "1/0", "L['b'].dtype == float32", "float64");
	compile_log_compile(clog, &r);
	compile_record_release(&r);
	fill(&r, 0, 8, "cache_limit");
	r.outcome = "skipped";
	add_failure(&r, "0/7", "L['x'].shape[0] == 9", "10");
	compile_log_compile(clog, &r);
	compile_record_release(&r);
	ck_assert_str_eq(logged(),
			 "[0/2] Recompiling function toy_example in toy.tj:1\n"
			 "[0/2]     triggered by the following guard failure(s):\n"
			 "[0/2]     - 0/1: L['x'].shape[0] == 3 (got 4)\n"
			 "[0/2]     - 0/0: L['x'].shape[0] == 2 (got 4)\n"
			 "[1/1] Recompiling function toy_example in toy.tj:1 (resume at line 4)\n"
			 "[1/1]     triggered by the following guard failure(s):\n"
			 "[1/1]     - 1/0: L['b'].dtype == float32 (got float64)\n"
			 "[0/8] Not recompiling function toy_example in toy.tj:1: cache_size_limit "
			 "reached, it runs eagerly\n"
			 "[0/8]     triggered by the following guard failure(s):\n"
			 "[0/8]     - 0/7: L['x'].shape[0] == 9 (got 10)\n");
}
END_TEST

START_TEST(test_break_lines)
{
	struct compile_log_config cfg = {.artifacts = LOG_GRAPH_BREAKS, .out = log_out};
	log_open(&cfg);
	const struct break_info *info = breaks_info(0);
	ck_assert_ptr_nonnull(info);
	ck_assert_ptr_null(breaks_info(-1));
	ck_assert_ptr_null(breaks_info(breaks_count()));
	struct compile_record r;
	fill(&r, 0, 0, "first");
	add_break(&r, 0, "call to print (side effect)", 3);
	/* a break inside an inlined call: the stack has the caller's line first */
	r.brk->stack = realloc(r.brk->stack, 2 * sizeof *r.brk->stack);
	r.brk->stack[1] = r.brk->stack[0];
	r.brk->stack[0].line = 2;
	r.brk->stack[1].function = "helper";
	r.brk->nstack = 2;
	compile_log_compile(clog, &r);
	compile_record_release(&r);
	char *expected = NULL;
	ck_assert_int_gt(asprintf(&expected,
				  "[0/0] Graph break in user code at toy.tj:3\n"
				  "[0/0] Code: %s (%s)\n"
				  "[0/0] Reason: call to print (side effect)\n"
				  "[0/0] Hint: %s\n"
				  "[0/0] User code traceback:\n"
				  "[0/0]   File \"toy.tj\", line 2, in toy_example\n"
				  "[0/0]     x = a / (abs(a) + 1)\n"
				  "[0/0]   File \"toy.tj\", line 3, in helper\n"
				  "[0/0]     print(\"woo\")\n",
				  info->code, info->category, info->hint),
			 0);
	ck_assert_str_eq(logged(), expected);
	free(expected);
}
END_TEST

START_TEST(test_guard_lines)
{
	struct compile_log_config cfg = {.artifacts = LOG_GUARDS, .out = log_out};
	log_open(&cfg);
	struct compile_record r;
	fill(&r, 0, 0, "first");
	add_guard(&r, "tensor", "L['a'].shape == (10,)", 2);
	add_guard(&r, "type", "type(L['b']) is Tensor", 4);
	add_guard(&r, "backend", "backend == 'eager'", 0);
	r.guards[1].function = "inner";
	compile_log_compile(clog, &r);
	compile_record_release(&r);
	/* a skipped compile has no entry, so no guards */
	fill(&r, 0, 1, "cache_limit");
	r.outcome = "skipped";
	compile_log_compile(clog, &r);
	compile_record_release(&r);
	ck_assert_str_eq(logged(),
			 "[0/0] GUARDS:\n"
			 "[0/0]   L['a'].shape == (10,)                           # toy.tj:2 in toy_example"
			 "  x = a / (abs(a) + 1)\n"
			 "[0/0]   type(L['b']) is Tensor                          # toy.tj:4 in inner"
			 "  if b.sum() < 0:\n"
			 "[0/0]   backend == 'eager'\n");
}
END_TEST

START_TEST(test_graph_code_lines)
{
	struct compile_log_config cfg = {.artifacts = LOG_GRAPH_CODE, .out = log_out};
	log_open(&cfg);
	struct compile_record r;
	fill(&r, 3, 1, "recompile");
	r.graph = toy_graph("3/1", 3);
	struct strbuf listing = STRBUF_INIT;
	graph_print(r.graph, &listing);
	compile_log_compile(clog, &r);
	compile_record_release(&r);
	/* graph_print's lines, each tagged */
	struct strbuf expected = STRBUF_INIT;
	for (char *line = strtok(listing.buf, "\n"); line; line = strtok(NULL, "\n"))
		sb_printf(&expected, "[3/1] %s\n", line);
	ck_assert_str_eq(logged(), expected.buf);
	ck_assert_ptr_nonnull(strstr(logged(), "[3/1] graph 3/1 toy_example (toy.tj:1)"));
	sb_release(&listing);
	sb_release(&expected);
}
END_TEST

/* ---- database rows and counters, through the null writer ---- */

START_TEST(test_db_null_writer)
{
	struct db_writer *w = db_null_writer();
	struct compile_log_config cfg = {.artifacts = 0, .out = log_out, .db = w};
	log_open(&cfg);
	ck_assert_ptr_eq(compile_log_db(clog), w);
	int64_t f0 = compile_log_frame(clog, 0, "toy_example", toy, 1, 0, 0);
	ck_assert_int_gt(f0, 0);
	ck_assert_int_eq(compile_log_frame(clog, 0, "toy_example", toy, 1, 0, 0), f0);
	struct compile_record r;
	fill(&r, 0, 0, "first");
	r.graph = toy_graph("0/0", 3);
	add_guard(&r, "tensor", "L['a'].shape == (10,)", 2);
	add_break(&r, 0, "call to print (side effect)", 3);
	compile_log_compile(clog, &r);
	compile_log_break_hit(clog, &r);
	compile_log_break_hit(clog, &r);
	compile_record_release(&r);
	/* a frame the evaluator did not announce gets its row from the record */
	fill(&r, 5, 0, "first");
	r.resume_pc = 9;
	r.resume_line = 4;
	compile_log_compile(clog, &r);
	compile_record_release(&r);
	compile_log_frame_counts(clog, f0, &(struct db_frame_counts){10, 9, 0, 0, 0, NULL});
	log_close();
	db_close(w);
	ck_assert_str_eq(logged(), "");
}
END_TEST

/* ---- listeners and explain's summaries ---- */

struct counting_listener {
	struct compile_listener l;
	int seen;
	int order;
};
static int listen_clock;

static void count_compile(struct compile_listener *l, const struct compile_record *r)
{
	struct counting_listener *c = (struct counting_listener *)l;
	c->seen++;
	c->order = ++listen_clock;
}

START_TEST(test_listeners_nest)
{
	log_open(NULL);
	struct counting_listener outer = {{count_compile, NULL}, 0, 0};
	struct counting_listener inner = {{count_compile, NULL}, 0, 0};
	struct compile_record r;
	fill(&r, 0, 0, "first");
	compile_log_listen(clog, &outer.l);
	compile_log_compile(clog, &r);
	compile_log_listen(clog, &inner.l);
	compile_log_compile(clog, &r);
	ck_assert_int_lt(inner.order, outer.order); /* the newest first */
	compile_log_unlisten(clog, &inner.l);
	compile_log_compile(clog, &r);
	compile_log_unlisten(clog, &outer.l);
	compile_log_compile(clog, &r);
	ck_assert_int_eq(outer.seen, 3);
	ck_assert_int_eq(inner.seen, 1);
}
END_TEST

/* the toy example of LANGUAGE.md §7: 3 graphs, 2 breaks, 6 ops (and with
 * again, a recompile that breaks at the same place once more) */
static void run_toy(int frame_base, bool again)
{
	struct compile_record r;
	fill(&r, frame_base, 0, "first");
	r.graph = toy_graph(r.compile_id, 3);
	add_guard(&r, "tensor", "L['a'].shape == (10,)", 2);
	add_break(&r, 0, "call to print (side effect)", 3);
	compile_log_compile(clog, &r);
	compile_record_release(&r);
	fill(&r, frame_base + 1, 0, "first");
	r.resume_pc = 9;
	r.resume_line = 4;
	r.graph = toy_graph(r.compile_id, 2);
	add_break(&r, 1, "data-dependent branch on a tensor value", 4);
	compile_log_compile(clog, &r);
	compile_record_release(&r);
	if (again) { /* the same break place again (a recompile): listed once */
		fill(&r, frame_base + 1, 1, "recompile");
		add_break(&r, 1, "data-dependent branch on a tensor value", 4);
		compile_log_compile(clog, &r);
		compile_record_release(&r);
	}
	fill(&r, frame_base + 2, 0, "first");
	r.graph = toy_graph(r.compile_id, 1);
	compile_log_compile(clog, &r);
	compile_record_release(&r);
}

START_TEST(test_explain_program_output)
{
	log_open(NULL);
	struct explain_program *p = explain_program_begin(clog);
	ck_assert_ptr_nonnull(p);
	run_toy(0, true);
	struct strbuf out = STRBUF_INIT;
	explain_program_end(p, &out);
	const struct break_info *b0 = breaks_info(0), *b1 = breaks_info(1);
	char *expected = NULL;
	ck_assert_int_gt(asprintf(&expected,
				  "== toy_example (toy.tj:1) ==\n"
				  "tjit produced 3 graphs with 3 graph breaks and 6 ops\n"
				  "Break reasons:\n"
				  "  1. call to print (side effect)\n"
				  "     toy.tj:3 in toy_example\n"
				  "         print(\"woo\")\n"
				  "  2. data-dependent branch on a tensor value\n"
				  "     toy.tj:4 in toy_example\n"
				  "         if b.sum() < 0:\n"
				  "Break codes:\n"
				  "  1. %s (%s): %s\n"
				  "  2. %s (%s): %s\n",
				  b0->code, b0->category, b0->hint, b1->code, b1->category, b1->hint),
			 0);
	ck_assert_str_eq(out.buf, expected);
	free(expected);
	sb_release(&out);
}
END_TEST

/* LANGUAGE.md §7's text, to the letter */
static const char section7[] = "tjit produced 3 graphs with 2 graph breaks and 6 ops\n"
			       "Break reasons:\n"
			       "  1. call to print (side effect)\n"
			       "     toy.tj:3 in toy_example\n"
			       "         print(\"woo\")\n"
			       "  2. data-dependent branch on a tensor value\n"
			       "     toy.tj:4 in toy_example\n"
			       "         if b.sum() < 0:\n";

START_TEST(test_explain_section7)
{
	log_open(NULL);
	struct explain_program *p = explain_program_begin(clog);
	run_toy(0, false);
	struct strbuf out = STRBUF_INIT;
	explain_program_end(p, &out);
	const char *text = strstr(out.buf, "tjit produced");
	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(strncmp(text, section7, strlen(section7)), 0);
	ck_assert_ptr_nonnull(strstr(text + strlen(section7), "Break codes:\n  1. TJB001 (side_effect): "));
	sb_release(&out);
}
END_TEST

START_TEST(test_explain_program_groups)
{
	log_open(NULL);
	struct explain_program *p = explain_program_begin(clog);
	struct compile_record r;
	fill(&r, 0, 0, "first");
	r.owner_name = "outer";
	r.owner_src = toy;
	r.owner_line = 7;
	r.graph = toy_graph("0/0", 1);
	compile_log_compile(clog, &r);
	compile_record_release(&r);
	fill(&r, 1, 0, "first");
	r.graph = toy_graph("1/0", 2);
	compile_log_compile(clog, &r);
	compile_record_release(&r);
	fill(&r, 2, 0, "first");
	r.owner_name = "outer";
	r.owner_src = toy;
	r.owner_line = 7;
	r.graph = toy_graph("2/0", 1);
	compile_log_compile(clog, &r);
	compile_record_release(&r);
	struct strbuf out = STRBUF_INIT;
	explain_program_end(p, &out);
	ck_assert_str_eq(out.buf, "== outer (toy.tj:7) ==\n"
				  "tjit produced 2 graphs with 0 graph breaks and 2 ops\n"
				  "\n"
				  "== toy_example (toy.tj:1) ==\n"
				  "tjit produced 1 graph with 0 graph breaks and 2 ops\n");
	sb_release(&out);

	p = explain_program_begin(clog);
	explain_program_end(p, &out);
	ck_assert_str_eq(out.buf, "no compiled function ran\n");
	sb_release(&out);
}
END_TEST

START_TEST(test_break_doc)
{
	struct strbuf doc = STRBUF_INIT;
	breaks_doc(&doc);
	ck_assert_ptr_nonnull(strstr(doc.buf, "# Graph-break codes\n"));
	for (int i = 0; i < breaks_count(); i++) {
		const struct break_info *b = breaks_info(i);
		char *heading = NULL;
		ck_assert_int_gt(asprintf(&heading, "\n## %s\n", b->code), 0);
		ck_assert_ptr_nonnull(strstr(doc.buf, heading));
		free(heading);
		/* codes are unique and TJBnnn */
		ck_assert_int_eq((int)strlen(b->code), 6);
		ck_assert_int_eq(strncmp(b->code, "TJB", 3), 0);
		for (int k = 0; k < i; k++)
			ck_assert_str_ne(breaks_info(k)->code, b->code);
	}
	sb_release(&doc);
}
END_TEST

static Suite *compile_log_suite(void)
{
	Suite *s = suite_create("compile_log");
	TCase *tc = tcase_create("logs");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_parse_artifacts);
	tcase_add_test(tc, test_nothing_logged_by_default);
	tcase_add_test(tc, test_warning_once_at);
	tcase_add_test(tc, test_recompile_lines);
	tcase_add_test(tc, test_break_lines);
	tcase_add_test(tc, test_guard_lines);
	tcase_add_test(tc, test_graph_code_lines);
	tcase_add_test(tc, test_db_null_writer);
	suite_add_tcase(s, tc);
	tc = tcase_create("explain");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_listeners_nest);
	tcase_add_test(tc, test_explain_program_output);
	tcase_add_test(tc, test_explain_section7);
	tcase_add_test(tc, test_explain_program_groups);
	tcase_add_test(tc, test_break_doc);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(compile_log_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
